"""What a source's sentence is and what a question asks (answers.providers.sentence_kinds), on demo text."""

from __future__ import annotations

import pytest

from answers.providers import sentence_kinds as kinds

# What the subject does or is.
SAYS_WHAT = [
    "It terminates the nearest enclosing loop, skipping the optional else clause.",
    "They shift the first argument to the left or right by the number of bits.",
    "Its execution binds the function name in the current local namespace.",
    'The "with" statement is used to wrap the execution of a block.',
    '"pass" is a null operation — when it is executed, nothing happens.',
    "Lambda expressions (sometimes called lambda forms) are used to create anonymous functions.",
    'The "&" operator yields the bitwise AND of its arguments.',
    '"return" leaves the current function call with the expression list.',
]
# Rules of placement or syntax (a pointer at a table of them too).
NOTES = [
    '"break" may only occur syntactically nested in a "for" or "while" loop.',
    'A "yield" statement is semantically equivalent to a yield expression.',
    "The shifting operations have lower priority than the arithmetic operations.",
    "The power operator binds more tightly than unary operators on its left.",
    "A function definition is an executable statement.",
    "The yield statement can be used to omit the parentheses otherwise required.",
    "The following table summarizes the operator precedence in Python.",
]
# Neither: a condition first, a plain fact.
NEITHER = [
    "If a positional argument is given and it is a mapping object, a dictionary is created.",
    "A Python program is constructed from code blocks.",
    "They are integers.",
    "It is worth noting.",
]


@pytest.mark.parametrize(
    ("text", "note", "says"),
    [(t, False, True) for t in SAYS_WHAT]
    + [(t, True, False) for t in NOTES]
    + [(t, False, False) for t in NEITHER],
)
def test_notes_and_sentences_saying_what_their_subject_does(text: str, note: bool, says: bool) -> None:
    assert (kinds.is_note(text), kinds.says_what(text)) == (note, says)


def test_code_a_sentence_writes() -> None:
    text = 'The operators "in" and "not in" test; see “~”, `x` and the "__enter__()" method.'
    assert kinds.code_tokens(text) == {"in", "~", "x", "__enter__"}
    assert kinds.emphasized("A *block* is a piece; *dictionary unpacking* too.") == [
        "block",
        "dictionary unpacking",
    ]


@pytest.mark.parametrize(
    ("question", "symbols", "nouns", "dunders"),
    [
        ("What does the & operator do?", ["&"], {"operator"}, []),
        ("What does the shift operator << do?", ["<<"], set(), []),
        ("What is the @ operator for?", ["@"], {"operator"}, []),
        ("Tell me about augmented assignment like +=.", ["+="], set(), []),
        ("What does x-y mean?", [], set(), []),
        ("What does __enter__ do?", [], set(), ["__enter__"]),
    ],
)
def test_the_code_a_question_names(
    question: str, symbols: list[str], nouns: set[str], dunders: list[str]
) -> None:
    assert kinds.symbols_of(question) == symbols
    assert kinds.symbol_kinds(question) == nouns
    assert kinds.dunders_of(question) == dunders


@pytest.mark.parametrize(
    ("block", "name"),
    [
        ("object.__enter__(self)", "__enter__"),
        ("object.__call__(self[, args...])", "__call__"),
        ("class.__mro__", "__mro__"),
        ("foo(x)", ""),
        ("The __enter__() method is called.", ""),
    ],
)
def test_a_reference_entrys_signature_line(block: str, name: str) -> None:
    assert kinds.signature_of(block) == name


@pytest.mark.parametrize(
    ("question", "what", "process", "rules"),
    [
        ("What does yield do?", True, False, False),
        ("What is a code block?", True, False, False),
        ("What should I know about exceptions?", True, False, False),
        ("Please explain assignment statements.", True, False, False),
        ("How does the with statement work?", False, True, False),
        ("What happens when an exception is not handled?", False, True, False),
        ("How are duplicate keys handled in a dictionary display?", False, False, False),
        ("What does raise do when there is no active exception?", False, False, False),
        ("Which operators bind tighter than others?", False, False, True),
        ("Where may break be written?", False, False, True),
    ],
)
def test_what_a_question_asks(question: str, what: bool, process: bool, rules: bool) -> None:
    asks = (kinds.asks_what(question), kinds.asks_how_it_works(question), kinds.asks_about_rules(question))
    assert asks == (what, process, rules)
