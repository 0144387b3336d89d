"""The extractive provider: deterministic, offline, cited answers that read as answers."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from pydoc_data.topics import topics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from answers.conversations.history import marker_free
from answers.providers import Provider, build_prompt
from answers.providers.extractive import (
    NO_ANSWER,
    NO_SOURCES,
    NOTHING_NEW,
    ExtractiveProvider,
    compose_answer,
    extract_sentences,
    pieces_of,
    split_sentences,
)
from answers.retrieval.query import stem
from answers.retrieval.types import RetrievedSource

MARKER = re.compile(r"\[(\d+)\]")


def _topic_source(number: int, key: str, limit: int = 2500) -> RetrievedSource:
    """A source as retrieval would hand it over: a demo-corpus topic, cut like a chunk."""
    text = topics[key]
    return RetrievedSource(
        number=number,
        document_id=number,
        title=text.split("\n", 1)[0].strip(),
        url=f"/docs/{key}/",
        excerpt=text[:limit],
        lexical_score=1.0 / number,
        score=1.0 / number,
    )


def _sources(*keys: str) -> list[RetrievedSource]:
    return [_topic_source(i, key) for i, key in enumerate(keys, start=1)]


def _scored(*keys_and_scores: tuple[str, float]) -> list[RetrievedSource]:
    """Demo topics as sources 1..N with the scores retrieval gave them."""
    return [
        replace(_topic_source(i, key), score=score, lexical_score=score)
        for i, (key, score) in enumerate(keys_and_scores, start=1)
    ]


def _written(title: str, excerpt: str, number: int = 1, score: float = 1.0) -> RetrievedSource:
    """A source whose excerpt the test writes."""
    return RetrievedSource(
        number=number,
        document_id=number,
        title=title,
        url="",
        excerpt=excerpt,
        lexical_score=score,
        score=score,
    )


async def _answer(question: str, sources: list[RetrievedSource], delay_ms: float = 0.0) -> str:
    provider = ExtractiveProvider(delay_ms=delay_ms)
    return "".join([piece async for piece in provider.stream(build_prompt(question, sources))])


def _cited(text: str) -> set[int]:
    return {int(n) for n in MARKER.findall(text)}


# Demo-corpus questions: (question, retrieved topics, words the answer must contain).
DEMO_CASES = [
    ("What does the with statement do?", ("with", "context-managers", "string-methods"), ["context manager"]),
    ("How does a for loop work?", ("for", "while", "floating"), ["iterate", "iterable"]),
    ("What is a lambda expression?", ("lambda", "function", "floating"), ["anonymous function"]),
    ("What is the assert statement for?", ("assert", "raise", "typesmapping"), ["debugging assertions"]),
    ("What does the global statement do?", ("global", "nonlocal", "integers"), ["global", "code block"]),
    ("What does yield do in a function?", ("yield", "function", "string-methods"), ["generator"]),
    ("How do I raise an exception?", ("raise", "try", "floating"), ["exception", "raise"]),
]


@pytest.mark.parametrize(("question", "keys", "expected"), DEMO_CASES, ids=[c[1][0] for c in DEMO_CASES])
async def test_demo_questions_get_sensible_cited_answers(
    question: str, keys: tuple[str, ...], expected: list[str]
) -> None:
    sources = _sources(*keys)

    answer = await _answer(question, sources)

    for words in expected:
        assert words in answer.lower()
    assert 1 in _cited(answer)
    # The irrelevant last source contributes nothing, so it stays uncited.
    assert len(sources) not in _cited(answer)
    # Every sentence is cited: each ends with a marker before its final punctuation.
    sentences = re.split(r"(?<=\])[.!?] ", answer.rstrip(".!?") + ". ")
    assert all(MARKER.search(s) for s in sentences if s.strip())


async def test_answer_about_with_starts_with_its_definition() -> None:
    answer = await _answer("What does the with statement do?", _sources("with", "floating"))

    assert answer.startswith('The "with" statement is used to wrap the execution of a block')
    assert _cited(answer) == {1}


_RESTRICTION = '"halt" may only occur syntactically nested in a loop, never in a function defined in it.'
_GOES_ON = "It stops the nearest enclosing loop and skips the else clause that loop may have."
_FINALLY = 'When "halt" passes control out of a try statement with a finally clause, that clause runs first.'


@pytest.mark.parametrize(
    ("question", "excerpt", "quoted", "left_out"),
    [
        # The sentence after the first opens with "It": it says what the first is about.
        (
            "What does the halt statement do?",
            f"{_RESTRICTION}\n\n{_GOES_ON}\n\n{_FINALLY}",
            _GOES_ON,
            _FINALLY,
        ),
        # Code between them: its "It" may point at the code, not at the first sentence.
        (
            "What does the halt statement do?",
            f"{_RESTRICTION}\n\n   while True:\n       halt()\n\n{_GOES_ON}\n\n{_FINALLY}",
            _FINALLY,
            _GOES_ON,
        ),
        # A sentence left out between them (a heading-like fragment): the same.
        (
            "What does the halt statement do?",
            f"{_RESTRICTION} Changed in version 3.8: halt got faster. {_GOES_ON}\n\n{_FINALLY}",
            _FINALLY,
            _GOES_ON,
        ),
        # Another sentence holds more of the question ("finally clause"): it is quoted instead.
        (
            "What does the halt statement do in a finally clause?",
            f"{_RESTRICTION}\n\n{_GOES_ON}\n\n{_FINALLY}",
            _FINALLY,
            _GOES_ON,
        ),
    ],
)
def test_the_sentence_going_on_from_the_first_follows_it(
    question: str, excerpt: str, quoted: str, left_out: str
) -> None:
    answer = compose_answer(question, [_written("The halt statement", excerpt)])

    assert answer.startswith(_RESTRICTION.removesuffix(".") + " [1]")
    assert quoted.removesuffix(".") in answer
    assert left_out.removesuffix(".") not in answer


@pytest.mark.parametrize(
    ("question", "key", "going_on"),
    [
        ("What does the break statement do?", "break", "It terminates the nearest enclosing loop"),
        ("What does the continue statement do?", "continue", "It continues with the next cycle of the"),
        ("What does the global statement do?", "global", "It means that the listed identifiers are to be"),
    ],
)
def test_demo_statements_are_answered_with_what_they_do(question: str, key: str, going_on: str) -> None:
    """The demo's pages on break, continue and global state a restriction first and what the
    statement does right after, as "It ..." (bench/relevance_labeled.jsonl)."""
    answer = compose_answer(question, _sources(key, "floating"))

    assert going_on in answer
    assert _cited(answer) == {1}


@pytest.mark.parametrize(
    ("question", "keys_and_scores", "first_quoted"),
    [
        # The titles name "for statement" and "with statement"; retrieval scored the page on
        # coroutines, which holds "async" too, twice as high or more: it is quoted first.
        ("How does the async for statement work?", (("async", 0.75), ("for", 0.28)), 1),
        ("How does the async with statement work?", (("async", 0.75), ("with", 0.375)), 1),
        # Scored near the first (at least PRIMARY_SCORE_SHARE of it), the page the title names is.
        ("How does the for statement work?", (("compound", 0.6), ("for", 0.55)), 2),
        ("How does the async for statement work?", (("async", 0.75), ("for", 0.5)), 2),
    ],
)
def test_the_page_quoted_first_is_one_retrieval_scored_near_the_best(
    question: str, keys_and_scores: tuple[tuple[str, float], ...], first_quoted: int
) -> None:
    answer = compose_answer(question, _scored(*keys_and_scores))

    first_marker = MARKER.search(answer)
    assert first_marker is not None
    assert int(first_marker.group(1)) == first_quoted


async def test_a_follow_up_quotes_no_sentence_its_conversations_earlier_turns_quoted() -> None:
    """The provider reads the earlier turns from the prompt's history (marker-free final texts)."""
    sources = _sources("nonlocal", "global")
    first = compose_answer("What should I know about the nonlocal statement?", sources)
    history = [("What should I know about the nonlocal statement?", marker_free(first))]
    prompt = build_prompt("and what else?", sources, history=history, standalone="nonlocal statement")

    provider = ExtractiveProvider()
    follow_up = "".join([piece async for piece in provider.stream(prompt)])

    assert prompt.history == tuple(history)
    assert first.split(" [1]")[0] not in follow_up
    assert follow_up != first
    assert _cited(follow_up) == {1}


def test_a_follow_up_on_a_page_with_nothing_left_to_quote_says_so_without_markers() -> None:
    """The page the question is about stays the one it is about: another page is not quoted in
    its place because this one's sentences were all quoted before."""
    page = _written("The halt statement", "The halt statement stops the loop it is written in.")
    other = _written(
        "The wait statement", "The wait statement pauses the loop it is in.", number=2, score=0.9
    )
    first = compose_answer("What does the halt statement do?", [page, other])

    again = compose_answer("halt statement loop", [page, other], earlier=[marker_free(first)])

    assert first.startswith("The halt statement stops the loop")
    assert again == NOTHING_NEW
    assert not _cited(again)

    # Asked how it differs from the other page's subject, that page is quoted, and only that one.
    compared = compose_answer(
        "wait halt statement",
        [page, other],
        written="How is it different from wait?",
        earlier=[marker_free(first)],
    )
    assert compared == "The wait statement pauses the loop it is in [2]."


async def test_output_is_deterministic() -> None:
    sources = _sources("try", "raise", "with")
    prompt = build_prompt("What happens to an exception in a finally clause?", sources)
    provider = ExtractiveProvider()

    runs = [[piece async for piece in provider.stream(prompt)] for _ in range(3)]

    assert runs[0] == runs[1] == runs[2]
    assert runs[0]


@pytest.mark.parametrize(
    "question",
    [
        "What does the with statement do?",
        "How are exceptions raised and handled?",
        "What is a generator?",
        "Can a lambda contain statements?",
        "asdf qwerty",
        "",
    ],
)
async def test_every_cited_number_is_within_range(question: str) -> None:
    sources = _sources("with", "try", "yield", "lambda")

    answer = await _answer(question, sources)

    assert _cited(answer) <= set(range(1, len(sources) + 1))


async def test_sources_that_contribute_nothing_stay_uncited() -> None:
    # The lambda page ranked second but scored near the first (PRIMARY_SCORE_SHARE).
    sources = _scored(("string-methods", 0.8), ("lambda", 0.75), ("floating", 0.3))

    answer = await _answer("What is a lambda expression?", sources)

    assert _cited(answer) == {2}


async def test_a_second_source_is_cited_only_when_it_adds_terms_the_first_lacked() -> None:
    # The with statement's page covers "with" and "statement": the context managers' page adds nothing.
    assert _cited(
        await _answer("What does the with statement do?", _sources("with", "context-managers"))
    ) == {1}
    # "yield" is nowhere in the pass statement's page: the yield statement's page adds it.
    answer = await _answer("What do the pass and yield statements do?", _sources("pass", "yield"))
    assert _cited(answer) == {1, 2}
    assert "yield" in answer.split("[1]")[-1].lower()


@pytest.mark.parametrize(
    ("question", "keys"),
    [
        # "operator" names the kind of thing asked about: the bitwise page's "The & operator
        # yields ..." holds it, and says nothing about shifting.
        ("What does the shift operator << do?", ("shifting", "operator-summary", "bitwise")),
        # "statement": the break page's sentence on `finally` holds it (and "pass", as a verb).
        ("What is the pass statement for?", ("pass", "compound", "break")),
    ],
)
async def test_the_noun_naming_the_subjects_kind_brings_in_no_further_source(
    question: str, keys: tuple[str, ...]
) -> None:
    answer = await _answer(question, _sources(*keys))
    assert _cited(answer) == {1}
    # It opens as the topic's page alone would have it answered.
    assert answer.startswith(compose_answer(question, _sources(keys[0])).split(" [1]")[0])


async def test_a_how_to_questions_verb_is_still_sought_from_a_further_source() -> None:
    # "remove" counts a quarter in retrieval (the verb of a how-to question), but it is what the
    # reader asks about: the del statement's page, which says how a binding is removed, is quoted.
    answer = await _answer("How do I remove a name binding?", _sources("naming", "del"))
    assert _cited(answer) == {1, 2}
    assert "removes the binding" in answer


RANGE = _written(
    "Ranges",
    (
        'For a positive step, the contents of a range "r" are determined by the formula '
        '"r[i] = start + step*i" where "i >= 0" and "r[i] < stop".'
    ),
    number=2,
    score=0.5,
)


@pytest.mark.parametrize(
    ("question", "sources"),
    [
        # Emulating numeric types says "emulate" too, but of numbers, not containers.
        ("How do I emulate container types?", _sources("sequence-types", "numeric-types")),
        # A range's "stop" is no way of stopping a loop.
        ("How do I stop a loop before it finishes?", [*_sources("for"), RANGE]),
    ],
    ids=["emulate", "stop"],
)
async def test_a_further_source_sharing_only_the_how_to_verb_is_not_quoted(
    question: str, sources: list[RetrievedSource]
) -> None:
    """A further source must add a term the question seeks and speak of its subject: one holding
    only the how-to verb (it counts a quarter, query.quarter_terms) says nothing of it."""
    verb = question.split()[3]
    assert verb in sources[1].excerpt
    assert _cited(await _answer(question, sources)) == {1}


async def test_the_pages_title_holds_its_terms_so_no_further_source_is_sought_for_them() -> None:
    """Execution model's opening never says "model"; Exceptions' "termination model" of error
    handling adds the word, but nothing on the execution model."""
    sources = _sources("execmodel", "exceptions")
    assert "model" not in sources[0].excerpt.split("\n", 1)[1].lower()
    answer = await _answer("What should I know about the execution model?", sources)
    assert "termination" not in answer
    assert _cited(answer) == {1}


async def test_it_stops_when_the_question_terms_are_covered() -> None:
    # The lambdas page mentions "yield" too, but pass + yield already cover the question.
    sources = _sources("pass", "yield", "lambda")
    assert "yield" in sources[2].excerpt
    answer = await _answer("What do the pass and yield statements do?", sources)
    assert _cited(answer) == {1, 2}
    assert len(MARKER.findall(answer)) <= 3


async def test_the_source_whose_title_names_the_topic_answers_first() -> None:
    """Retrieval may rank a page merely mentioning the topic first; the answer starts with the topic page."""
    answer = await _answer("What should I know about exceptions?", _sources("string-methods", "exceptions"))
    assert answer.startswith("Exceptions are a means of breaking out of the normal flow of control")
    assert _cited(answer) == {2}


@pytest.mark.parametrize(
    ("question", "keys", "opening"),
    [
        # Neither sentence of "Await expression" says "await" or "expression": the title does.
        ("What is an await expression?", ("await", "calls", "async"), "Suspend the execution of *coroutine*"),
        # "keyword" names the kind of the subject (query.kind_nouns): the title need not hold it.
        ("What does the await keyword do?", ("await", "identifiers", "async"), "Suspend the execution"),
        ("How do I emulate callable objects?", ("callable-types", "calls"), "Called when the instance is"),
    ],
    ids=["await-expression", "await-keyword", "callable"],
)
async def test_a_page_whose_title_names_the_question_is_quoted_though_its_sentences_do_not_repeat_it(
    question: str, keys: tuple[str, ...], opening: str
) -> None:
    """A reference entry rarely repeats its title: the page the question names is still the
    answer, from its opening, and the pages merely mentioning the words are not quoted first."""
    answer = await _answer(question, _sources(*keys))
    assert answer.startswith(opening)
    assert MARKER.findall(answer)[0] == "1"
    assert _cited(answer) == {1}


async def test_a_named_page_that_repeats_the_question_is_quoted_from_the_sentence_that_does() -> None:
    """The title lends its words only to a page with no sentence of its own on them: "The del
    statement" opens with a sentence on how deletion is defined, but a later one names the statement."""
    answer = await _answer("What does the del statement do?", _sources("del", "assignment"))
    assert not answer.startswith("Deletion is recursively defined")
    assert answer.startswith("Deletion of a name removes the binding")


async def test_words_the_text_wrapped_at_their_hyphen_are_quoted_whole() -> None:
    """pydoc wraps "built-in" after its hyphen; the answer reads "built-in", not "built- in"."""
    sources = _sources("bltin-code-objects")
    assert "built-\n" in sources[0].excerpt
    answer = await _answer("Which built-in function returns code objects?", sources)
    assert 'returned by the built-in "compile()" function' in answer
    assert "- " not in answer.replace(" - ", "")


@pytest.mark.parametrize(
    ("excerpt", "sentence"),
    [
        ("A non-\nnumeric value is never added to the total here.", "A non-numeric value"),
        ("The value is ten -\nor more when the total is counted.", "The value is ten - or more"),
        ("Counting stops at step 3-\n4 of the procedure described here.", "step 3- 4"),
    ],
    ids=["hyphenated-word", "dash-before-the-break", "digits"],
)
def test_only_a_hyphen_ending_a_word_joins_a_wrapped_line(excerpt: str, sentence: str) -> None:
    source = _written("Totals", excerpt)
    (quoted,) = extract_sentences([source])
    assert sentence in quoted.text


async def test_tables_and_grammar_productions_are_never_quoted() -> None:
    excerpt = (
        "Unicode names\n\n"
        "+--------------------+------------------------------+\n"
        "| LATIN CAPITAL LETTER A | the capital letter A of the Latin script. |\n"
        "+--------------------+------------------------------+\n\n"
        "| | |\n\n"
        'capital_stmt ::= "capital" identifier the capital of a letter.\n\n'
        "A capital letter is the upper-case form of a letter in a script.\n"
    )
    source = _written("Letters", excerpt)

    answer = await _answer("What is a capital letter?", [source])

    assert answer == "A capital letter is the upper-case form of a letter in a script [1]."
    assert "|" not in answer
    assert "::=" not in answer


async def test_no_match_answers_honestly_without_markers() -> None:
    answer = await _answer("What is the capital of France?", _sources("with", "for"))

    assert answer == NO_ANSWER
    assert not MARKER.search(answer)


async def test_no_sources_says_so() -> None:
    assert await _answer("What does the with statement do?", []) == NO_SOURCES


async def test_grammar_and_code_lines_are_never_quoted() -> None:
    sources = _sources("with", "for", "try")

    for sentence in extract_sentences(sources):
        assert "::=" not in sentence.text
        assert "SUITE" not in sentence.text
        assert "  " not in sentence.text
        assert not sentence.text.endswith(":")


async def test_marker_like_brackets_in_sources_never_become_citations() -> None:
    source = _written(
        "Indexing", "Indexing a list with a subscript returns one item[3] of it. Paris is big[12]."
    )

    answer = await _answer("What does indexing a list with a subscript return?", [source])

    assert _cited(answer) == {1}
    assert "item of it [1]." in answer


def test_a_sources_footnote_reference_does_not_join_two_sentences_into_one_quote() -> None:
    """The demo's truth-value page writes "... when called with the object. [1] Here are ...":
    the reference goes, and the two sentences are quoted (or not) each on its own."""
    source = _written(
        "Truth",
        "Free names are resolved at run time, never at compile time. [2] A frozen name is resolved "
        "when the module is first loaded.\n",
    )
    answer = compose_answer("When are free names resolved?", [source])
    assert answer.startswith("Free names are resolved at run time, never at compile time [1].")


async def test_brackets_holding_no_number_are_quoted_as_written() -> None:
    """An empty list is no marker: 'c = []; d = []' once read 'c =; d ='."""
    source = _written(
        "Lists",
        (
            'Types affect almost all aspects of object behavior. E.g., after "a = 1; b = 1", "a" and "b"\n'
            "may or may not refer to the same object with the value one, depending on the\n"
            'implementation, but after "c = []; d = []", "c" and "d" are guaranteed to refer to\n'
            "two different, unique, newly created empty lists."
        ),
    )
    answer = await _answer("Do two empty lists refer to the same object?", [source])
    assert 'after "c = []; d = []", "c" and "d" are guaranteed' in answer


async def test_brackets_in_code_and_where_the_grammar_reads_no_marker_are_quoted_as_written() -> None:
    source = _written(
        "Indexing",
        "Indexing a list as `items[1]` returns its second item, and [2 - 4] of it is no marker.",
    )

    answer = await _answer("What does indexing a list return?", [source])

    assert "`items[1]` returns its second item, and [2 - 4] of it is no marker [1]." in answer
    assert _cited(answer) == {1}


async def test_unbalanced_backticks_cannot_swallow_markers() -> None:
    source = _written(
        "Backticks", "The `with statement wraps a block in a context manager. Use `with` for files."
    )

    answer = await _answer("What does the with statement wrap?", [source])

    assert answer.count("`") % 2 == 0
    assert _cited(answer) == {1}


async def test_streams_in_small_pieces_that_join_to_the_answer() -> None:
    sources = _sources("with", "floating")
    question = "What does the with statement do?"
    provider = ExtractiveProvider()

    pieces = [piece async for piece in provider.stream(build_prompt(question, sources))]

    assert len(pieces) > 5
    assert all(len(piece.split()) <= 3 for piece in pieces)
    assert "".join(pieces) == compose_answer(question, sources)


async def test_delay_is_slept_between_pieces() -> None:
    sources = _sources("lambda")
    started = time.monotonic()

    answer = await _answer("What is a lambda expression?", sources, delay_ms=20)

    assert time.monotonic() - started >= 0.02 * len(pieces_of(answer))


async def test_full_topic_texts_also_give_sensible_answers() -> None:
    sources = [_topic_source(1, "try", 100_000), _topic_source(2, "with", 100_000)]

    answer = await _answer("What does a finally clause do?", sources)

    assert "finally" in answer
    assert 1 in _cited(answer)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Use a tool, e.g. a hammer. Then stop.", ["Use a tool, e.g. a hammer.", "Then stop."]),
        ("See i.e. This one. And that.", ["See i.e. This one.", "And that."]),
        ('It is "x." Next one.', ['It is "x."', "Next one."]),
        ("Version 3.1 added it. Done!", ["Version 3.1 added it.", "Done!"]),
        ("No split here", ["No split here"]),
        # A source's own footnote reference ends the sentence before it, not joins two.
        ("It is done. [1] Next one here.", ["It is done.", "[1] Next one here."]),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


@pytest.mark.parametrize(
    ("word", "stemmed"),
    [("managers", "manager"), ("manager", "manager"), ("classes", "class"), ("class", "class"), ("is", "is")],
)
def test_stem(word: str, stemmed: str) -> None:
    assert stem(word) == stemmed


@given(st.text(max_size=200))
def test_pieces_always_join_back(text: str) -> None:
    assert "".join(pieces_of(text)) == text


@given(
    question=st.text(max_size=80),
    excerpts=st.lists(st.text(max_size=300), min_size=1, max_size=4),
)
def test_any_input_gives_in_range_markers(question: str, excerpts: list[str]) -> None:
    sources = [_written(f"T{i}", e, number=i) for i, e in enumerate(excerpts, start=1)]

    answer = compose_answer(question, sources)

    assert _cited(answer) <= set(range(1, len(sources) + 1))


def test_provider_meets_the_protocol() -> None:
    provider = ExtractiveProvider()

    assert isinstance(provider, Provider)
    assert (provider.name, provider.model) == ("extractive", "extractive-v1")
