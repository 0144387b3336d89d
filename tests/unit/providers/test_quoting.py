"""The extractive answerer's rules, one at a time (answers.providers.quoting), on demo-corpus pages."""

from __future__ import annotations

import re
from dataclasses import replace
from pydoc_data.topics import topics

import pytest

from answers.providers.extractive import compose_answer, extract_sentences
from answers.providers.quoting import (
    MAX_WORDS,
    PRIMARY_SENTENCES,
    Quoted,
    by_source,
    compared_pages,
    compares,
    going_on,
    not_quoted_before,
    on_topic,
    primary_candidates,
    primary_source,
    quote_further,
    quote_primary,
    reading_order,
    title_lends,
)
from answers.providers.weighing import Asked, Sentence, terms_of, weigh
from answers.retrieval.types import RetrievedSource


def _page(number: int, key: str, score: float = 1.0) -> RetrievedSource:
    """A demo topic as retrieval hands it over (cut like a chunk), with the score it gave."""
    text = topics[key]
    title = text.split("\n", 1)[0].strip()
    return RetrievedSource(number, number, title, f"/docs/{key}/", text[:2500], score, score)


def _asked(question: str, *sources: RetrievedSource) -> tuple[Asked, list[Sentence]]:
    sentences = extract_sentences(sources)
    asked = weigh(question, sentences)
    assert asked is not None
    return asked, sentences


def _titles(*sources: RetrievedSource) -> dict[int, frozenset[str]]:
    return {s.number: frozenset(terms_of(s.title)) for s in sources}


def _sentence(text: str, source: int = 1, position: int = 0, continues: bool = False) -> Sentence:
    return Sentence(source, position, text, frozenset(terms_of(text)), continues)


def test_a_weak_word_alone_makes_no_sentence_eligible() -> None:
    asked, _ = _asked("What is the capital of France?", _page(1, "with"))
    assert "is" in asked.weights
    assert asked.eligible == {"capital", "franc"}


def test_the_noun_naming_the_subjects_kind_is_not_sought() -> None:
    asked, _ = _asked("What does the shift operator do?", _page(1, "shifting"))
    assert "operator" in asked.eligible
    assert asked.sought == {"shift"}
    # After a symbol, too: "the << operator".
    asked, _ = _asked("What does the << operator do?", _page(1, "shifting"))
    assert asked.sought == {"<<"}


def test_the_how_to_verb_is_sought_but_is_not_the_subject() -> None:
    asked, _ = _asked("How do I emulate container types?", _page(1, "sequence-types"))
    assert "emulat" in asked.sought
    assert asked.subject == {"container", "type"}


def test_a_title_naming_all_the_question_seeks_lends_its_words_to_its_sentences() -> None:
    """The page on await never writes "await" in its two sentences: its title speaks for them."""
    page = _page(1, "await")
    asked, sentences = _asked("What is an await expression?", page)
    assert not any(s.terms & asked.eligible for s in sentences)

    assert title_lends(asked, _titles(page)[1], sentences)
    assert on_topic(by_source(sentences), asked, _titles(page)) == {1: sentences}
    # A title naming only part of what is sought lends nothing.
    assert not title_lends(asked, frozenset({"expression"}), sentences)


def test_a_page_that_repeats_its_titles_words_keeps_only_the_sentences_that_do() -> None:
    page = _page(1, "del")
    asked, sentences = _asked("What does the del statement do?", page)

    topical = on_topic(by_source(sentences), asked, _titles(page))[1]

    assert not title_lends(asked, _titles(page)[1], sentences)
    assert topical[0].text.startswith("Deletion of a name removes the binding")
    assert all(s.terms & asked.eligible for s in topical)


@pytest.mark.parametrize(
    ("question", "keys_and_scores", "primary"),
    [
        # Both titles name part of the question; coroutines, which retrieval scored more than
        # twice as high, holds "async" too and is the primary.
        ("How does the async for statement work?", (("async", 0.75), ("for", 0.28)), 1),
        # Scored near the best, the page whose title names the question is the primary.
        ("How does the async for statement work?", (("async", 0.75), ("for", 0.5)), 2),
        ("What should I know about exceptions?", (("string-methods", 1.0), ("exceptions", 0.9)), 2),
    ],
)
def test_the_primary_is_the_page_the_title_names_among_those_scored_near_the_best(
    question: str, keys_and_scores: tuple[tuple[str, float], ...], primary: int
) -> None:
    sources = [_page(n, key, score) for n, (key, score) in enumerate(keys_and_scores, start=1)]
    asked, sentences = _asked(question, *sources)
    topical = on_topic(by_source(sentences), asked, _titles(*sources))

    assert primary_source(sources, topical, asked, _titles(*sources)) == primary


def test_the_sentence_going_on_from_the_first_is_the_next_one_pointing_back() -> None:
    """The page on break states where it may occur, then what it does, as "It ..."."""
    sentences = extract_sentences([_page(1, "break")])

    after = going_on(sentences[0], sentences)

    assert after is not None
    assert after.text.startswith("It terminates the nearest enclosing loop")
    # The one after that opens with "If": it does not point back.
    assert going_on(sentences[1], sentences) is None


@pytest.mark.parametrize(
    ("second", "continues", "goes_on"),
    [
        ("It stops the loop at once and for good.", True, True),
        ("It stops the loop at once and for good.", False, False),  # something left out between them
        ("The loop stops at once and for good.", True, False),  # does not point back
    ],
)
def test_going_on_needs_the_next_sentence_and_a_word_pointing_back(
    second: str, continues: bool, goes_on: bool
) -> None:
    first = _sentence("Halt may only occur nested in a loop.")
    nxt = _sentence(second, position=1, continues=continues)

    assert (going_on(first, [first, nxt]) is nxt) is goes_on


def test_the_going_on_sentence_yields_to_one_holding_more_of_the_question() -> None:
    page = _page(1, "break")
    for question, second in [
        ("What does the break statement do?", "It terminates the nearest enclosing loop"),
        # "finally" is in a later sentence only: it adds more than "It terminates ...".
        ("What does break do in a finally clause?", 'When "break" passes control out of a "try"'),
    ]:
        asked, sentences = _asked(question, page)
        topical = on_topic(by_source(sentences), asked, _titles(page))[1]

        # The page's title terms are held (compose_answer): "break" and "statement".
        held = set(_titles(page)[1] & asked.weights.keys())

        candidates = primary_candidates(topical, sentences, asked, held)

        assert candidates[0] is topical[0]
        assert candidates[1].text.startswith(second)


def _quoted(question: str, *sources: RetrievedSource) -> Quoted:
    asked, _ = _asked(question, *sources)
    return Quoted(asked, have=set())


def test_the_primary_gives_at_most_its_share_of_sentences_none_repeating_another() -> None:
    quoted = _quoted("What does the halt statement do?", _page(1, "break"))
    first = _sentence("The halt statement stops the loop that holds it.")
    again = _sentence("The halt statement stops the loop which holds it.", position=1)
    other = _sentence("The halt statement takes no argument at all.", position=2)
    third = _sentence("The halt statement is rarely needed in practice.", position=3)

    quote_primary(quoted, [first, again, other, third])

    assert quoted.sentences == [first, other]
    assert len(quoted.sentences) == PRIMARY_SENTENCES


def test_a_sentence_over_the_budget_is_passed_over_for_the_next_that_fits() -> None:
    quoted = _quoted("What does the halt statement do?", _page(1, "break"))
    first = _sentence("The halt statement stops the loop that holds it.")
    long = _sentence("Halt " + "and more words " * (MAX_WORDS // 3) + "end.", position=1)
    short = _sentence("The halt statement takes no argument at all.", position=2)

    quote_primary(quoted, [first, long, short])

    assert quoted.sentences == [first, short]


def test_further_sources_give_what_the_primary_lacks_and_stop_once_all_is_held() -> None:
    """The pass page holds nothing on yield; the yield page does; the lambda page, which holds
    "yield" too, adds nothing once the yield page has been quoted."""
    sources = (_page(1, "pass"), _page(2, "yield"), _page(3, "lambda"))
    asked, sentences = _asked("What do the pass and yield statements do?", *sources)
    topical = on_topic(by_source(sentences), asked, _titles(*sources))
    quoted = Quoted(asked, have=set(_titles(*sources)[1] & asked.weights.keys()))
    quote_primary(quoted, primary_candidates(topical[1], by_source(sentences)[1], asked, set(quoted.have)))

    quote_further(quoted, topical, primary=1)

    assert {s.source for s in quoted.sentences} == {1, 2}
    assert "yield" in quoted.sentences[-1].text.lower()


def test_a_further_source_holding_only_the_how_to_verb_is_not_quoted() -> None:
    """The numeric types page says "emulate" too, but of numbers, not of containers."""
    sources = (_page(1, "sequence-types"), _page(2, "numeric-types"))
    asked, sentences = _asked("How do I emulate container types?", *sources)
    topical = on_topic(by_source(sentences), asked, _titles(*sources))
    assert any("emulat" in s.terms for s in topical[2])
    quoted = Quoted(asked, have={"container", "type"})

    quote_further(quoted, topical, primary=1)

    assert quoted.sentences == []


def test_the_answer_reads_in_page_order_with_the_primary_first() -> None:
    a = _sentence("First of the second page.", source=2, position=0)
    b = _sentence("Later in the primary page.", source=1, position=4)
    c = _sentence("Early in the primary page.", source=1, position=1)
    d = _sentence("From the third page.", source=3, position=0)

    assert reading_order([d, a, b, c], primary=2) == [a, c, b, d]
    assert reading_order([d, a, b, c], primary=1) == [c, b, a, d]


def test_merit_prefers_more_of_the_question_then_an_earlier_place_and_marks_down_pointing_back() -> None:
    asked, _ = _asked("What does the halt statement do?", _page(1, "break"))
    asked = replace(asked, weights={"halt": 1.0, "statement": 0.5})
    both = _sentence("The halt statement stops a loop.", position=5)
    one_early = _sentence("Halt stops a loop of any kind.", position=0)
    one_late = _sentence("Halt stops a loop of any kind.", position=5)
    pointing = _sentence("It makes the halt statement stop a loop.", position=5)

    assert asked.merit(both) > asked.merit(one_early) > asked.merit(one_late)
    assert asked.merit(pointing) < asked.merit(both)


def test_a_sentence_an_earlier_answer_quoted_is_not_quoted_again() -> None:
    kept = _sentence("The halt statement takes no argument at all.", position=1)
    said = _sentence('It stops the loop that "halt" names.', position=0)
    # An earlier answer reaches the provider without its markers, the marker having taken the
    # sentence's final punctuation's place and moved a closing quote before it.
    earlier = ['It stops the loop that "halt" names. Something else again.']

    assert not_quoted_before([said, kept], earlier) == [kept]
    assert not_quoted_before([said, kept], []) == [said, kept]
    # Words, not fragments of words: "loop" is not in "loops".
    loop = _sentence("Halt stops the loop.")
    assert not_quoted_before([loop], ["Halt stops the loops."]) == [loop]


@pytest.mark.parametrize(
    ("question", "comparison"),
    [
        ("and how is that different from global?", True),
        ("How do bytes literals differ from string literals?", True),
        ("Compare break and continue.", True),
        ("What does the global statement do?", False),
        ("What do the pass and yield statements do?", False),
    ],
)
def test_a_comparison_is_read_from_the_question_as_written(question: str, comparison: bool) -> None:
    assert compares(question) is comparison


def test_a_comparison_quotes_each_subject_from_the_page_its_title_names() -> None:
    sources = (_page(1, "nonlocal"), _page(2, "assignment", 0.7), _page(3, "global", 0.6))
    asked, _ = _asked("global nonlocal statement", *sources)

    assert compared_pages(1, _titles(*sources), asked) == {3: {"global"}}
    # A primary whose title names no subject compares nothing: the question is about something else.
    assert compared_pages(2, _titles(*sources), asked) == {}


def test_a_comparisons_second_page_is_quoted_though_the_first_mentions_its_subject() -> None:
    """The page on nonlocal says "excluding globals": that mention holds the term "global", so the
    page on global would not be sought for it; in a comparison it is quoted all the same."""
    sources = [_page(1, "nonlocal"), _page(2, "global", 0.6)]
    question = "global nonlocal statement"

    alone = compose_answer(question, sources)
    compared = compose_answer(question, sources, written="and how is that different from global?")

    assert "[2]" not in alone
    assert compared.startswith(alone.split(" [1]")[0])
    assert "interpreted as globals [2]" in compared


def _answer(question: str, *keys_and_scores: tuple[str, float]) -> str:
    return compose_answer(
        question, [_page(n, key, score) for n, (key, score) in enumerate(keys_and_scores, 1)]
    )


@pytest.mark.parametrize(
    ("question", "key", "said", "not_said"),
    [
        # A rule of placement opens no answer when the page says what the subject does ...
        (
            "What does the return statement do?",
            "return",
            '"return" leaves the current function call',
            "may only",
        ),
        # ... unless the sentence right after it does, pointing back ("It terminates").
        ("What does the break statement do?", "break", "It terminates the nearest enclosing loop", None),
        # A sentence saying the construct is equivalent to another says nothing of what it does.
        ("What does yield do?", "yield", "create a generator function", "semantically equivalent"),
    ],
)
def test_the_answer_says_what_the_subject_does_before_rules_of_placement_or_syntax(
    question: str, key: str, said: str, not_said: str | None
) -> None:
    answer = _answer(question, (key, 1.0), ("floating", 0.5))
    assert said in answer
    assert not_said is None or not_said not in answer


def test_the_sentence_going_on_and_saying_what_the_subject_does_outweighs_the_how_to_verb() -> None:
    """ "leaving" in the break page's sentence on finally is the question's how-to verb, nothing more."""
    answer = _answer("How do I leave a loop early?", ("break", 0.3))
    assert "It terminates the nearest enclosing loop," in answer
    assert "finally" not in answer


@pytest.mark.parametrize(
    ("question", "keys_and_scores", "opening"),
    [
        # A symbol: the page writing it as code, though retrieval scored it far below the table of
        # operators, whose title names only the kind of thing it is.
        ("What does the ~ operator do?", (("operator-summary", 1.0), ("power", 1.0), ("unary", 0.6)), '"~"'),
        (
            "What is the @ operator for?",
            (("power", 0.76), ("operator-summary", 0.76), ("binary", 0.51)),
            '"@"',
        ),
        # A keyword the question names as its subject ("the in operator").
        ("What does the in operator do?", (("operator-summary", 0.75), ("power", 0.66), ("in", 0.6)), '"in"'),
        # A special method: the page whose reference entry it opens.
        (
            "What does __enter__ do?",
            (("with", 0.6), ("debugger", 0.6), ("context-managers", 0.6)),
            "Enter the",
        ),
        ("What does __call__ do?", (("calls", 1.0), ("callable-types", 0.6)), "Called when the instance"),
    ],
)
def test_a_question_about_code_is_answered_from_the_page_writing_it(
    question: str, keys_and_scores: tuple[tuple[str, float], ...], opening: str
) -> None:
    answer = _answer(question, *keys_and_scores)
    page = len(keys_and_scores)
    assert re.match(rf"[^\[]*\[{page}\]", answer), answer  # its first citation is of that page
    assert any(opening in sentence for sentence in answer.split(f"[{page}]"))


def test_a_how_to_verb_a_title_names_finds_the_sentence_writing_it_as_code() -> None:
    answer = _answer("How do I raise an exception?", ("exceptions", 0.88), ("raise", 0.65))
    assert 'explicitly raise an exception with the "raise" statement' in answer


def test_how_it_works_is_answered_with_the_pages_first_step() -> None:
    answer = _answer("How does the with statement work?", ("with", 1.0), ("context-managers", 1.0))
    assert answer.startswith('The "with" statement is used to wrap')
    assert "is evaluated to obtain a context manager [1]" in answer
    # Asked what it does, the page's steps have no precedence.
    assert "evaluated to obtain" not in _answer("What does the with statement do?", ("with", 1.0))


def test_the_sentence_defining_a_term_of_the_question_is_quoted() -> None:
    """ "A *block* is a piece ...": the page sets the term it defines in emphasis."""
    answer = _answer("What is a code block?", ("execmodel", 0.6), ("naming", 0.6))
    assert "A *block* is a piece of Python program text that is executed as a unit [1]" in answer


def test_a_sentence_whose_pronoun_stands_for_the_subject_is_weighed_with_it() -> None:
    """ "Its execution binds ...": its "Its" is the function definition the sentence before names."""
    answer = _answer("What does a function definition do?", ("function", 1.0), ("typesfunctions", 0.85))
    assert "Its execution binds the function name" in answer


def test_a_sentence_drawing_on_the_one_before_is_not_quoted_without_it() -> None:
    """ "Thus, ..." after the power operator's binding rule reads only after that rule."""
    answer = _answer("How does the power operator work with unary operators?", ("power", 1.0))
    thus = "Thus, in an unparenthesized sequence"
    assert thus not in answer or "binds more tightly" in answer.split(thus)[0]


def test_rules_of_placement_are_no_lesser_answer_when_the_question_asks_about_them() -> None:
    placement = '"return" may only occur syntactically nested in a function definition'
    assert _answer("Where may the return statement be used?", ("return", 1.0)).startswith(placement)
    # Asked what it does, the rule does not open the answer.
    assert not _answer("What does the return statement do?", ("return", 1.0)).startswith(placement)


def test_saying_what_the_subject_does_counts_only_when_that_is_what_is_asked() -> None:
    """Asked about one aspect (duplicate keys), the sentence on it outranks the page's definition."""
    answer = _answer("How are duplicate keys handled in a dictionary display?", ("dict", 1.0))
    assert "Clashes between duplicate keys are not detected" in answer
