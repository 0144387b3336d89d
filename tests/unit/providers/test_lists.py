"""A list finishing the sentence introducing it is read as that sentence (answers.providers.lists),
on the demo corpus's text (pydoc_data.topics)."""

from __future__ import annotations

import re
from pydoc_data.topics import topics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from answers.providers.extractive import _is_prose, compose_answer, extract_sentences
from answers.providers.lists import Block, read_lists
from answers.retrieval.types import RetrievedSource

_IMPORT_INTRO = 'The basic import statement (no "from" clause) is executed in two steps:'
_IMPORT_STEPS = [
    "find a module, loading and initializing it if necessary",
    'define a name or names in the local namespace for the scope where the "import" statement occurs.',
]
_CONVERSION_INTRO = (
    "When a description of an arithmetic operator below uses the phrase “the numeric arguments are "
    "converted to a common type”, this means that the operator implementation for built-in types "
    "works as follows:"
)
_CONVERSION_ITEMS = [
    "If either argument is a complex number, the other is converted to complex;",
    "otherwise, if either argument is a floating point number, the other is converted to floating point;",
    "otherwise, both must be integers and no conversion is necessary.",
]
_WITH_INTRO = 'The execution of the "with" statement with one “item” proceeds as follows:'
_WITH_STEPS = [
    "The context expression (the expression given in the with_item) is evaluated to obtain a context "
    "manager.",
    'The context manager’s "__enter__()" is loaded for later use.',
]
_TRUTH_INTRO = "Here are most of the built-in objects considered false:"
_TRUTH_ITEMS = [
    'constants defined to be false: "None" and "False"',
    'zero of any numeric type: "0", "0.0", "0j", "Decimal(0)", "Fraction(0, 1)"',
    'empty sequences and collections: "\'\'", "()", "[]", "{}", "set()", "range(0)"',
]


def _list(intro: str, items: list[str], numbered: bool = False) -> list[Block]:
    return [(intro, False, False), *((item, numbered, True) for item in items)]


@pytest.mark.parametrize(
    ("blocks", "read"),
    [
        # Fragments finishing the introduction: one sentence, the items apart by semicolons.
        (
            _list(_IMPORT_INTRO, _IMPORT_STEPS, numbered=True),
            [(f"{_IMPORT_INTRO} {_IMPORT_STEPS[0]}; {_IMPORT_STEPS[1]}", False)],
        ),
        # Too long with its introduction: the items, one sentence cut at its semicolons, alone.
        (
            _list(_CONVERSION_INTRO, _CONVERSION_ITEMS),
            [(_CONVERSION_INTRO, False), (" ".join(_CONVERSION_ITEMS), False)],
        ),
        # Steps that are sentences of their own stay steps.
        (
            _list(_WITH_INTRO, _WITH_STEPS, numbered=True),
            [(_WITH_INTRO, False), *((s, True) for s in _WITH_STEPS)],
        ),
        # Items writing code are no prose: nothing is joined.
        (_list(_TRUTH_INTRO, _TRUTH_ITEMS), [(_TRUTH_INTRO, False), *((s, False) for s in _TRUTH_ITEMS)]),
        # No colon: the paragraph does not introduce the list.
        (
            _list(_IMPORT_INTRO.removesuffix(":") + ".", _IMPORT_STEPS),
            [(_IMPORT_INTRO.removesuffix(":") + ".", False), *((s, False) for s in _IMPORT_STEPS)],
        ),
    ],
    ids=["fragments", "one-sentence-items", "steps", "code-items", "no-colon"],
)
def test_a_list_finishing_its_introduction_reads_as_one_sentence(
    blocks: list[Block], read: list[tuple[str, bool]]
) -> None:
    assert read_lists(blocks, _is_prose) == read


def _topic(key: str) -> RetrievedSource:
    text = topics[key]
    return RetrievedSource(
        number=1,
        document_id=1,
        title=text.split("\n", 1)[0].strip(),
        url=f"/docs/{key}/",
        excerpt=text[:2500],
        lexical_score=1.0,
        score=1.0,
    )


@pytest.mark.parametrize(
    ("question", "key", "said"),
    [
        # Before: "... is executed in two steps [1]." and nothing of the steps.
        (
            "What does the import statement do?",
            "import",
            "two steps: find a module, loading and initializing",
        ),
        # Before: only "Extensions must define their own conversion behavior."
        ("What are arithmetic conversions?", "conversions", "if either argument is a complex number, the"),
    ],
)
def test_the_offline_answer_says_what_the_list_says(question: str, key: str, said: str) -> None:
    answer = compose_answer(question, [_topic(key)])

    assert said in answer.lower()


_WORD = re.compile(r"[A-Za-z0-9]+")


@given(
    st.lists(
        st.tuples(st.text(alphabet="abc DEF;:.,", min_size=1, max_size=40), st.booleans(), st.booleans()),
        max_size=8,
    )
)
def test_reading_lists_keeps_every_word_in_order(blocks: list[Block]) -> None:
    """Joined or not, the blocks' words all stay, in their order (only marks are added)."""
    read = read_lists(blocks, lambda text: True)

    assert _WORD.findall(" ".join(text for text, _ in read)) == _WORD.findall(" ".join(b[0] for b in blocks))


def test_the_import_pages_steps_are_one_quotable_sentence() -> None:
    texts = [s.text for s in extract_sentences([_topic("import")])]

    assert f"{_IMPORT_INTRO} {_IMPORT_STEPS[0]}; {_IMPORT_STEPS[1]}" in texts
