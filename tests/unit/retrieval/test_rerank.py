"""The default reranker: what its score means (rarity-weighted coverage); agreement with its definition."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from answers.retrieval.query import (
    RARITY_CAP,
    STEM_KEEPS,
    STOPWORDS,
    WEAK_TERMS,
    action_verb,
    capped_rarity,
    kind_nouns,
    quarter_terms,
    query_terms,
    rarity,
    stem,
    term_weights,
    tokenize,
)
from answers.retrieval.rerank import (
    HEADING_SHARE,
    WEIGHTS,
    LexicalReranker,
    Passage,
    combine,
    proximity,
    term_weight,
    title_excess,
)

RERANKER = LexicalReranker()


def literal_components(terms: list[str], passage: Passage) -> dict[str, float]:
    """The module docstring read word by word: every word of the passage stemmed, no shortcut."""
    weights: dict[str, float] = {}
    for term in terms:
        weights[stem(term)] = max(weights.get(stem(term), 0.0), term_weight(term))
    total = sum(weights.values())
    if not total:
        return dict.fromkeys(WEIGHTS, 0.0)
    stems = [stem(w) for w in tokenize(passage.text)]
    positions = [(i, s) for i, s in enumerate(stems) if s in weights]
    title = {stem(w) for w in tokenize(passage.title)}
    heading = {stem(w) for w in tokenize(passage.heading)} - title
    found = {s for s in stems if s in weights} | title | heading
    return {
        "coverage": sum(w for s, w in weights.items() if s in found) / total,
        "title": sum(
            w * (1.0 if s in title else HEADING_SHARE if s in heading else 0.0) for s, w in weights.items()
        )
        / total,
        "proximity": proximity(list(weights), positions),
        "phrase": literal_phrase(list(weights), passage.title),
        "lexical": min(1.0, max(0.0, passage.lexical)),
    }


def literal_phrase(stems: list[str], title: str) -> float:
    """Two question stems next to each other, in the question's order, next to each other in the title."""
    words = [stem(w) for w in tokenize(title) if w not in STOPWORDS]
    if len(stems) == 1:
        return float(stems[0] in words)
    if words and all(w in stems for w in words):
        return 1.0
    for i in range(len(stems) - 1):
        for j in range(len(words) - 1):
            if (stems[i], stems[i + 1]) == (words[j], words[j + 1]):
                return 1.0
    return 0.0


def score(terms: list[str], passage: Passage, weights: dict[str, float] | None = None) -> float:
    (value,) = RERANKER.score(terms, [passage], weights)
    return value


@pytest.mark.parametrize(
    ("terms", "passage", "expected"),
    [
        # Every term, in the title, side by side: 1.0 throughout.
        (
            ["yield", "statement"],
            Passage("The yield statement", "", "A yield statement suspends the function.", 1.0),
            {"coverage": 1.0, "title": 1.0, "proximity": 1.0, "phrase": 1.0, "lexical": 1.0},
        ),
        # The title names the subject as the question writes it ("code object"), in body words elsewhere.
        (
            ["code", "object", "cpython"],
            Passage("Code Objects", "", "CPython compiles code into objects.", 0.7),
            {"coverage": 1.0, "title": 2 / 3, "proximity": 0.5, "phrase": 1.0, "lexical": 0.7},
        ),
        # Both words in the title, but not as the question writes them, and a third word the
        # question does not hold: no phrase.
        (
            ["code", "object"],
            Passage("Objects of compiled code", "", "An object holds code.", 0.7),
            {"coverage": 1.0, "title": 1.0, "proximity": 1 / 2, "phrase": 0.0, "lexical": 0.7},
        ),
        # A title all of whose words the question holds names its subject, side by side or not.
        (
            ["difference", "comparisons"],
            Passage("Comparisons", "", "Comparisons yield boolean values; note the difference.", 0.6),
            {"coverage": 1.0, "title": 0.5, "proximity": 1 / 6, "phrase": 1.0, "lexical": 0.6},
        ),
        # Plurals and -ing forms match their stems; two terms in a window of four words: 1 / 3.
        (
            ["class", "define"],
            Passage("Misc", "", "Classes are what defining code makes.", 0.5),
            {"coverage": 1.0, "title": 0.0, "proximity": 1 / 3, "phrase": 0.0, "lexical": 0.5},
        ),
        # A weak term counts a quarter: "with" found, "context" not: 0.25 / 1.25.
        (
            ["with", "context"],
            Passage("Statements", "", "Use with to open a file.", 0.2),
            {"coverage": 0.2, "title": 0.0, "proximity": 0.0, "phrase": 0.0, "lexical": 0.2},
        ),
        # Only in the section heading: coverage, and the heading's share of a title match (a
        # heading names no phrase: the page is about more than that section).
        (
            ["lambda"],
            Passage("Expressions", "Lambdas", "Small anonymous functions.", 0.9),
            {"coverage": 1.0, "title": HEADING_SHARE, "proximity": 0.0, "phrase": 0.0, "lexical": 0.9},
        ),
        # A question of one term: its title holding it is the phrase.
        (
            ["lambda"],
            Passage("Lambdas", "", "Small anonymous functions.", 0.9),
            {"coverage": 1.0, "title": 1.0, "proximity": 0.0, "phrase": 1.0, "lexical": 0.9},
        ),
        # Nothing in common.
        (
            ["zebra"],
            Passage("Horses", "", "Horses graze.", 0.0),
            {"coverage": 0.0, "title": 0.0, "proximity": 0.0, "phrase": 0.0, "lexical": 0.0},
        ),
    ],
)
def test_components(terms: list[str], passage: Passage, expected: dict[str, float]) -> None:
    assert RERANKER.components(terms, passage) == pytest.approx(expected)
    combined = (
        expected["coverage"]
        * (
            WEIGHTS["coverage"]
            + WEIGHTS["proximity"] * expected["proximity"]
            + WEIGHTS["phrase"] * expected["phrase"]
        )
        + WEIGHTS["title"] * expected["title"]
    )
    assert score(terms, passage) == pytest.approx(combined)


def test_rare_terms_weigh_more_than_common_ones() -> None:
    """A passage holding the question's rare term outranks one holding only its common term."""
    terms = ["statement", "nonlocal"]
    weights = {"statement": rarity(300, 650), "nonlocal": rarity(4, 650)}
    rare = Passage("Names", "", "nonlocal rebinds a name of the enclosing scope.", 0.5)
    common = Passage("Simple", "", "A statement is executed in order.", 1.0)
    assert weights["nonlocal"] > 4 * weights["statement"]
    assert score(terms, rare, weights) > 0.4 > 0.1 > score(terms, common, weights)
    # Unweighted, the two terms would count alike.
    assert score(terms, rare) == pytest.approx(score(terms, common), abs=0.01)


def test_the_page_whose_title_names_the_question_outranks_a_broader_page_with_its_words() -> None:
    """'How does the for statement work?': the page titled so comes first, not the page on every
    compound statement whose section on `async for` holds both words side by side under a heading
    that says them too (demo corpus, bench/relevance_labeled.jsonl)."""
    question = "How does the for statement work?"
    terms = query_terms(question)
    weights = term_weights(question, terms, {"for": 120, "statement": 200}, 650)
    assert weights["statement"] < weights["for"]  # "statement" names the kind of the subject
    broad = Passage(
        "Compound statements",
        'The "async for" statement',
        "An async for statement allows convenient iteration over asynchronous iterables.",
        1.0,
    )
    own = Passage(
        "The for statement",
        'The "for" statement',
        "It is used to iterate over the elements of a sequence; for each item the suite is executed once.",
        0.8,
    )
    assert RERANKER.components(terms, own, weights)["phrase"] == 1.0
    assert RERANKER.components(terms, broad, weights)["phrase"] == 0.0
    assert score(terms, own, weights) > score(terms, broad, weights)
    # Without the phrase part, the broad page would come first.
    parts = {p: RERANKER.components(terms, p, weights) for p in (own, broad)}
    without = {p: combine({**c, "phrase": 0.0}) / (1 - WEIGHTS["phrase"]) for p, c in parts.items()}
    assert without[broad] > without[own]


@pytest.mark.parametrize(
    ("question", "title", "excess"),
    [
        ("Please explain assignment statements.", "Assignment statements", 0),
        ("Please explain assignment statements.", "Augmented assignment statements", 1),
        ("What should I know about literals?", "Literals", 0),
        # "and" is a weak term, not a stop word: it counts.
        ("What should I know about literals?", "String and Bytes literals", 3),
        ("How does the for statement work?", "The for statement", 0),  # "the" is no word of a title
        # A title that does not hold every term of the question is not named by it.
        ("Please explain assignment statements.", "Expression statements", None),
        ("How does the for statement work?", "Compound statements", None),
    ],
)
def test_title_excess_counts_the_title_words_the_question_does_not_hold(
    question: str, title: str, excess: int | None
) -> None:
    stems = frozenset(map(stem, query_terms(question)))
    assert title_excess(stems, title) == excess


def test_a_term_the_corpus_never_uses_counts_fully_against_every_passage() -> None:
    """'What is the capital of France?' over a corpus that never says 'France': no passage covers half."""
    question = "What is the capital of France?"
    terms = query_terms(question)
    weights = term_weights(question, terms, {"is": 600, "capital": 3, "france": 0}, 650)
    assert weights["france"] == max(weights.values()) == pytest.approx(rarity(0, 650))
    unicode_page = Passage("String literals", "", "LATIN CAPITAL LETTER A is capital; it is upper case.", 1.0)
    assert RERANKER.components(terms, unicode_page, weights)["coverage"] < 0.45
    assert score(terms, unicode_page, weights) < 0.35


def test_phrasing_words_carry_no_weight() -> None:
    """'What should I know about exceptions?' is about exceptions only: a passage on them covers it all."""
    assert query_terms("What should I know about exceptions?") == ["exceptions"]
    assert query_terms("Can you explain how the del statement works?") == ["del", "statement"]
    assert query_terms("Tell me what a lambda does") == ["lambda"]
    exceptions = Passage("Exceptions", "", "Exceptions are a means of breaking out of the normal flow.", 1.0)
    phrased = Passage("Help", "", "What should I know about how it works? Tell me, explain.", 1.0)
    terms = query_terms("What should I know about exceptions?")
    assert score(terms, exceptions) == 1.0
    assert score(terms, phrased) == 0.0


def test_a_title_match_counts_more_than_a_heading_match_more_than_a_body_match() -> None:
    terms = ["generator"]
    body = Passage("Expressions", "Calls", "A generator is returned.", 0.0)
    heading = Passage("Expressions", "Generators", "One is returned.", 0.0)
    title = Passage("Generators", "", "One is returned.", 0.0)
    assert score(terms, title) > score(terms, heading) > score(terms, body) > 0.5


def test_adjacent_terms_score_higher_than_scattered_ones() -> None:
    terms = ["context", "manager"]
    adjacent = Passage("Misc", "", "A context manager sets up and tears down.", 0.0)
    scattered = Passage("Misc", "", "The context of the call differs from what a manager does.", 0.0)
    assert (
        RERANKER.components(terms, adjacent)["coverage"] == RERANKER.components(terms, scattered)["coverage"]
    )
    assert score(terms, adjacent) > score(terms, scattered)


def test_a_weak_term_that_names_a_construct_counts_fully() -> None:
    question = "How does the for statement work?"
    weights = term_weights(question, query_terms(question), {"for": 100, "statement": 100}, 650)
    assert weights["for"] == rarity(100, 650)  # the subject: not a quarter, though a weak term
    loose = "Can a loop repeat for a while?"
    weights = term_weights(
        loose, query_terms(loose), {"loop": 100, "repeat": 100, "for": 100, "while": 100}, 650
    )
    assert weights["for"] == weights["while"] == pytest.approx(weights["loop"] / 4)


@pytest.mark.parametrize(
    ("question", "verb"),
    [
        ("How do I leave a loop early?", "leave"),
        ("how can we send a value back?", "send"),
        ("How to bring a module into my program", "bring"),
        ("How does the for statement work?", None),  # not a how-to question
        ("How do I `import` a module?", None),  # written as code: the question's subject
        ("What is a loop?", None),
    ],
)
def test_the_verb_of_a_how_to_question_counts_a_quarter(question: str, verb: str | None) -> None:
    # The reader names the action in their words ("leave a loop early"), the page in its own
    # ("break"): the passage is about the question through its other terms.
    assert action_verb(question) == verb
    terms = query_terms(question)
    weights = term_weights(question, terms, dict.fromkeys(terms, 10), 650)
    others = [weights[t] for t in terms if t != verb and t not in WEAK_TERMS]
    if verb is None:
        assert not quarter_terms(question) - WEAK_TERMS - kind_nouns(question)
    else:
        assert verb in quarter_terms(question)
        assert weights[verb] == pytest.approx(max(others) / 4)


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("What does the nonlocal keyword mean?", {"keyword"}),  # about `nonlocal`, not keywords
        ("How does the for statement work?", {"statement"}),
        ("How does the power operator work?", {"operator"}),
        ("How do I leave a loop early?", set()),  # "a" names nothing: the loop is the subject
        ("What are compound statements?", {"statements"}),
        ("Which keywords are reserved?", set()),  # the keywords are what it asks about
        ("What is an expression?", set()),
    ],
)
def test_a_noun_naming_the_kind_of_the_subject_counts_a_quarter(question: str, kinds: set[str]) -> None:
    # "the nonlocal keyword": the page listing every keyword holds both words, the page on
    # `nonlocal` is the answer; the kind noun must not outweigh the name before it.
    assert kind_nouns(question) == kinds
    terms = query_terms(question)
    weights = term_weights(question, terms, dict.fromkeys(terms, 10), 650)
    for kind in kinds:
        assert kind in quarter_terms(question)
        assert weights[kind] == pytest.approx(capped_rarity(10, 650) / 4)


def test_rarity_saturates_for_terms_the_corpus_uses_but_not_for_absent_ones() -> None:
    # Among the terms a corpus holds, a rarer one is not the more important beyond RARITY_CAP;
    # a term it never uses ("france") outweighs any of them, so it counts fully against every passage.
    question = "What is the capital of France?"
    weights = term_weights(question, query_terms(question), {"capital": 2, "is": 600}, 650)
    assert weights["capital"] == RARITY_CAP < rarity(2, 650)
    assert weights["france"] == rarity(0, 650) > 3 * RARITY_CAP
    assert weights["is"] < RARITY_CAP / 4


WORDS = st.sampled_from(
    ["class", "classes", "classy", "statement", "statements", "defined", "define", "defining", "with",
     "for", "is", "ties", "tie", "boxes", "box", "run", "runs", "running", "zebra", "Zebras", "a", "I",
     "stress", "stresses", "stories", "story", "ÉCOLE", "école", "x1", "_", "-", ",", "[1]"]
)  # fmt: skip
TEXT = st.lists(st.one_of(WORDS, st.text(max_size=8)), max_size=40).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(
    terms=st.lists(WORDS.map(str.lower), max_size=5),
    text=TEXT,
    title=TEXT,
    heading=TEXT,
    lexical=st.floats(-1, 2),
)
def test_components_agree_with_the_literal_reading(
    terms: list[str], text: str, title: str, heading: str, lexical: float
) -> None:
    passage = Passage(title, heading, text, lexical)
    assert RERANKER.components(terms, passage) == pytest.approx(literal_components(terms, passage))


@settings(max_examples=300, deadline=None)
@given(
    terms=st.lists(WORDS.map(str.lower), min_size=1, max_size=5),
    text=TEXT,
    title=TEXT,
    counts=st.lists(st.integers(0, 1000), min_size=5, max_size=5),
)
def test_a_score_never_exceeds_the_weighted_share_of_the_question_covered(
    terms: list[str], text: str, title: str, counts: list[int]
) -> None:
    weights = {t: rarity(n, 1000) for t, n in zip(terms, counts, strict=False)}
    passage = Passage(title, "", text, 1.0)
    parts = RERANKER.components(terms, passage, weights)
    assert 0.0 <= score(terms, passage, weights) <= parts["coverage"] + 1e-9
    assert score(terms, passage, weights) == pytest.approx(combine(parts))


@given(st.text())
def test_a_stem_keeps_the_start_of_its_word(text: str) -> None:
    """What the reranker's filter relies on: only a word starting like X[:3] can stem to X."""
    for word in tokenize(text):
        assert stem(word)[:STEM_KEEPS] == word[:STEM_KEEPS]
