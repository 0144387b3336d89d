"""Retrieval on the real database (SQLite FTS5 or PostgreSQL full-text, whichever the run uses)."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from answers.conf import conf
from answers.models import Chunk, Document
from answers.providers.extractive import compose_answer
from answers.retrieval.backends import backend_for
from answers.retrieval.pipeline import retrieve
from answers.retrieval.pipeline import retrieve as retrieve_with
from answers.retrieval.query import capped_rarity, fts5_match, holds_all, query_terms
from answers.retrieval.rerank import LexicalOnlyReranker
from tests.fixtures.content import MakeDocument

pytestmark = pytest.mark.django_db

# Questions a reader of the Python reference might ask, with the topic that must come first.
RANKING_CASES = [
    ("How does the with statement work?", "pydoc:with"),
    ("What does the yield statement do?", "pydoc:yield"),
    ("How do I write a lambda expression?", "pydoc:lambda"),
    ("How are exceptions raised with the raise statement?", "pydoc:raise"),
    ("What is the assert statement for?", "pydoc:assert"),
    ("How do try except finally clauses work?", "pydoc:try"),
    ("What does the global statement declare?", "pydoc:global"),
    ("How does import find and load modules?", "pydoc:import"),
    ("What is operator precedence in Python?", "pydoc:operator-summary"),
    ("Which string methods split text?", "pydoc:string-methods"),
    ("How do format string replacement fields work?", "pydoc:formatstrings"),
    ("How do I use the pdb debugger?", "pydoc:debugger"),
    ("What does nonlocal do?", "pydoc:nonlocal"),
    ("How are class definitions executed?", "pydoc:class"),
    ("What are augmented assignment statements like +=?", "pydoc:augassign"),
    ("How does the del statement delete names?", "pydoc:del"),
    ("What does the pass statement do?", "pydoc:pass"),
    ("What is truth value testing?", "pydoc:truth"),
    ("How do slicings work?", "pydoc:slicings"),
    ("What are the dictionary mapping types?", "pydoc:typesmapping"),
    ("How does the break statement end a loop?", "pydoc:break"),
    ("How do coroutines and async def work?", "pydoc:async"),
    ("What does the await expression do?", "pydoc:await"),
    ("How do membership tests with in work?", "pydoc:in"),
]


def _keys(question: str, **kwargs: object) -> list[str]:
    result = retrieve(question, min_score=0.0, max_sources=5, **kwargs)  # type: ignore[arg-type]
    by_id = dict(Document.objects.values_list("id", "key"))
    return [by_id[s.document_id] for s in result.sources if s.document_id is not None]


@pytest.mark.parametrize(("question", "expected"), RANKING_CASES)
def test_demo_question_ranks_its_topic_first(
    demo_corpus: list[Document], question: str, expected: str
) -> None:
    assert _keys(question)[0] == expected


def test_backend_matches_the_database_vendor(demo_corpus: list[Document]) -> None:
    trace = retrieve("with statement", min_score=0.0, max_sources=5).trace
    assert trace["backend"] == {"sqlite": "sqlite-fts5", "postgresql": "postgresql-fts"}[connection.vendor]


def test_sources_are_numbered_from_one_with_scores_in_range(demo_corpus: list[Document]) -> None:
    sources = retrieve("How does the with statement work?", min_score=0.0, max_sources=5).sources
    assert [s.number for s in sources] == [1, 2, 3, 4, 5]
    assert all(0.0 <= s.lexical_score <= 1.0 and 0.0 <= s.score <= 1.0 for s in sources)
    assert [s.score for s in sources] == sorted((s.score for s in sources), reverse=True)
    first = sources[0]
    assert first.title == "The with statement"
    assert first.url.startswith("https://docs.python.org/3.")
    assert "context manager" in first.excerpt


def test_a_document_never_appears_twice(demo_corpus: list[Document]) -> None:
    # The compound-statements topic has many matching chunks; it must still come once.
    for question in ("statement", "compound statements with if while for try", "how are methods called"):
        sources = retrieve(question, min_score=0.0, max_sources=20).sources
        ids = [s.document_id for s in sources]
        assert len(ids) == len(set(ids))


def test_entity_cap_keeps_at_most_max_sources_and_traces_the_rest(demo_corpus: list[Document]) -> None:
    result = retrieve("statement", min_score=0.0, max_sources=3)
    assert len(result.sources) == 3
    cut = result.trace["cut_by_cap"]
    assert cut, "more than three documents matched"
    kept_ids = {s.document_id for s in result.sources}
    assert not kept_ids & {entry["document_id"] for entry in cut}
    assert all(entry["score"] <= result.sources[-1].score for entry in cut)


def test_threshold_cuts_low_scores_and_traces_them(demo_corpus: list[Document]) -> None:
    everything = retrieve("How does the with statement work?", min_score=0.0, max_sources=50)
    scores = sorted(s.score for s in everything.sources)
    threshold = scores[len(scores) // 2]
    result = retrieve("How does the with statement work?", min_score=threshold, max_sources=50)
    assert result.sources
    assert all(s.score >= threshold for s in result.sources)
    assert result.trace["cut_by_threshold"]
    assert all(entry["score"] < threshold for entry in result.trace["cut_by_threshold"])


def test_threshold_of_one_keeps_only_perfect_matches(demo_corpus: list[Document]) -> None:
    result = retrieve("How does the with statement work?", min_score=1.0, max_sources=5)
    assert all(s.score == 1.0 for s in result.sources)


def test_trace_is_json_and_accounts_for_every_candidate(demo_corpus: list[Document]) -> None:
    result = retrieve("How does the with statement work?", min_score=0.5, max_sources=2)
    trace = json.loads(json.dumps(result.trace))
    assert trace["query_terms"] == ["with", "statement"]
    assert trace["min_score"] == 0.5
    assert trace["max_sources"] == 2
    assert trace["candidates"] > 0
    assert [k["number"] for k in trace["kept"]] == [1, 2]
    assert [k["document_id"] for k in trace["kept"]] == [s.document_id for s in result.sources]
    kept_chunks = sum(len(k["chunk_ids"]) for k in trace["kept"])
    assert kept_chunks + len(trace["cut_by_threshold"]) <= trace["candidates"]
    for entry in trace["cut_by_threshold"] + trace["cut_by_cap"]:
        assert set(entry) == {"document_id", "title", "chunk_id", "score", "lexical_score"}
    for entry in trace["cut_as_copy"]:
        assert set(entry) == {"document_id", "title", "chunk_id", "score", "lexical_score", "same_as"}


INIT_SECTION = (
    "# Basic customization\n\n"
    "The zebra method initialises a new instance after it is created. Its arguments are those "
    "passed to the class constructor expression.\n"
)
NUMBERS_SECTION = (
    "# Emulating numbers\n\nThe okapi methods implement the binary arithmetic operations of a numeric type.\n"
)


def test_a_passage_two_documents_hold_is_one_source_from_the_smaller(make_document: MakeDocument) -> None:
    """A section that is also a page of its own is cited from that page, once (not twice, one excerpt
    under two numbers)."""
    gathering = make_document(title="Special method names", body=INIT_SECTION + "\n" + NUMBERS_SECTION)
    own_page = make_document(title="Basic customization", body=INIT_SECTION)
    result = retrieve("What does the zebra method do?", min_score=0.0, max_sources=5)
    assert result.sources[0].document_id == own_page.id
    assert [s.excerpt.count("initialises a new instance") for s in result.sources] == [1] + [0] * (
        len(result.sources) - 1
    )  # the gathering page may still come, by its other section
    (copy,) = result.trace["cut_as_copy"]
    kept_chunk = result.trace["kept"][0]["chunk_ids"][0]
    assert copy["document_id"] == gathering.id
    assert copy["same_as"] == {"document_id": own_page.id, "chunk_id": kept_chunk}
    assert Chunk.objects.get(id=copy["chunk_id"]).text == Chunk.objects.get(id=kept_chunk).text
    # What only the gathering page holds is still found there.
    okapi = retrieve("What do the okapi methods implement?", min_score=0.0, max_sources=5)
    assert okapi.sources[0].document_id == gathering.id


def test_demo_questions_on_a_section_that_is_also_a_page_cite_that_page_first(
    demo_corpus: list[Document],
) -> None:
    """The demo's pages on special methods, compound statements and the execution model gather
    sections that are pages of their own too (held-out sets of bench/, relevance)."""
    assert _keys("What does the __init__ method do?")[0] == "pydoc:customization"
    assert _keys("How does the async for statement work?")[0] == "pydoc:async"
    assert "pydoc:specialnames" not in _keys("What does the __init__ method do?")[:1]


def test_of_two_pages_the_question_names_alike_the_one_named_exactly_comes_first(
    make_document: MakeDocument,
) -> None:
    """Both titles hold every term and both pages score 1.0: the title adding no other word
    ("Assignment statements") comes before the narrower page's ("Augmented assignment
    statements"), whichever the engine returns first."""
    exact = make_document(
        title="Assignment statements",
        body="Assignment statements bind names to values; the targets are bound left to right, "
        "and a target list may unpack an iterable into several names at once.",
    )
    # The engine ranks this one first: it repeats the words in a shorter text.
    narrower = make_document(
        title="Augmented assignment statements",
        body="Augmented assignment statements: assignment statements that combine an operation.",
    )
    result = retrieve("Please explain assignment statements.", min_score=0.0, max_sources=5)
    scores = {s.document_id: s.score for s in result.sources}
    assert scores[exact.id] == scores[narrower.id] == 1.0
    assert [s.document_id for s in result.sources][:2] == [exact.id, narrower.id]
    assert result.trace["candidates"] == 2
    engine = {c["document_id"]: c["lexical_score"] for c in result.trace["kept"]}
    assert engine[narrower.id] > engine[exact.id]


def test_demo_question_on_a_topic_and_its_narrower_kind_cites_the_topic_first(
    demo_corpus: list[Document],
) -> None:
    """bench/relevance_labeled.jsonl: "Assignment statements" and "Augmented assignment
    statements" both score 1.0; the page on exactly what was asked is the one cited."""
    assert _keys("Please explain assignment statements.")[:2] == ["pydoc:assignment", "pydoc:augassign"]
    assert _keys("What should I know about literals?")[0] == "pydoc:atom-literals"


SYNTAX_QUESTIONS = [
    'foo-bar "x" AND (y OR NEAR(z)) * :',
    '"unterminated',
    "NOT with",
    "with*",
    "title:with",
    "^with",
    "a & b | !c <-> d",
    "'; DROP TABLE answers_chunk; --",
    "{with} [statement]",
    "\x00 with",
]


def test_search_syntax_in_a_question_is_harmless(demo_corpus: list[Document]) -> None:
    for question in SYNTAX_QUESTIONS:
        result = retrieve(question, min_score=0.0, max_sources=5)
        assert isinstance(result.sources, list), question
    assert retrieve(SYNTAX_QUESTIONS[0], min_score=0.0, max_sources=5).trace["query_terms"] == [
        "foo", "bar", "x", "and", "y", "or", "near", "z",
    ]  # fmt: skip
    assert Chunk.objects.count() > 0


def test_syntax_characters_do_not_change_what_is_found(demo_corpus: list[Document]) -> None:
    plain = _keys("with statement")
    assert _keys('"with" (statement)* : -^') == plain


@pytest.mark.parametrize("question", ["", "   ", "?!", "how does the", "*:()"])
def test_question_without_searchable_terms_returns_no_sources(question: str) -> None:
    result = retrieve(question, min_score=0.0, max_sources=5)
    assert result.sources == []
    assert result.trace["query_terms"] == []


def test_empty_question_returns_nothing_and_a_trace(demo_corpus: list[Document]) -> None:
    result = retrieve("", min_score=0.1, max_sources=5)
    assert result.sources == []
    assert result.trace["candidates"] == 0


def test_no_match_returns_no_sources(demo_corpus: list[Document]) -> None:
    assert retrieve("xylophonequux zebrafish", min_score=0.0, max_sources=5).sources == []


def test_updated_document_is_found_by_its_new_words(make_document: MakeDocument) -> None:
    document = make_document(key="k1", title="Tea", body="Green tea is brewed briefly.")
    assert _keys("brewed") == ["k1"]
    make_document(key="k1", title="Tea", body="Black tea is steeped longer.")
    assert _keys("brewed") == []
    assert _keys("steeped") == ["k1"]
    document.delete()
    assert _keys("steeped") == []


def test_title_words_rank_a_document_over_a_mere_mention(make_document: MakeDocument) -> None:
    make_document(key="mention", title="Gardening", body="Bring a kettle of water. Then dig.")
    make_document(key="about", title="The kettle", body="Fill it with water and switch it on.")
    assert _keys("kettle")[0] == "about"


def test_the_engine_offers_the_chunk_holding_the_rare_term_before_one_repeating_a_common_one(
    make_document: MakeDocument,
) -> None:
    # ts_rank_cd alone (PostgreSQL) counts occurrences, not rarity: the kettle pages would fill
    # the candidates and the reranker would never see the one page on descaling.
    for n in range(6):
        make_document(key=f"kettle{n}", title=f"Kettle {n}", body="A kettle, a kettle: kettle after kettle.")
    make_document(key="descale", title="Care", body="Descale the kettle once a month.")
    backend = backend_for()
    found = backend.search(query_terms("How do I descale a kettle?"), limit=1)
    by_id = dict(Document.objects.values_list("id", "key"))
    assert [by_id[c.document_id] for c in found.candidates] == ["descale"]


def test_a_page_the_question_names_is_excerpted_from_its_opening_section(demo_corpus: list[Document]) -> None:
    """Both engines offer the chunks that hold what the question is about (backends): on SQLite,
    bm25 alone let every page titled "The ... statement" crowd out the for statement's opening
    section, so the Sources list (and the offline answer) quoted only its last one, on names
    left over after the loop."""
    question = "How does the for statement work?"
    first = retrieve(question, min_score=conf.MIN_SCORE, max_sources=conf.MAX_SOURCES).sources[0]
    assert first.title == "The for statement"
    assert first.excerpt.startswith('The "for" statement is used to iterate over the elements of a sequence')
    assert compose_answer(question, [first]).startswith('The "for" statement is used to iterate')


def test_among_chunks_scoring_alike_the_excerpt_starts_at_the_pages_opening(
    make_document: MakeDocument,
) -> None:
    """A question naming only the page (its title holds every term) scores alike every chunk of
    it that says the word; the engine prefers the short sections repeating it, but the page's
    opening says what the page is about."""
    opening = (
        "Zymurgy is the study of fermentation in brewing and winemaking. "
        + (
            "It goes from the choice of grain and fruit to the yeast that turns their sugars into "
            "alcohol and carbon dioxide, and to the vessels that hold them. "
        )
        * 3
    )
    make_document(
        key="zymurgy",
        title="Zymurgy",
        body=(
            f"# Overview\n\n{opening.strip()}\n\n"
            "# Vessels\n\nZymurgy names the vessels: a zymurgy kettle, a zymurgy carboy.\n\n"
            "# Storage\n\nZymurgy stores the result cool and dark, zymurgy style.\n"
        ),
    )
    assert Chunk.objects.filter(document__key="zymurgy").count() == 3
    result = retrieve("What should I know about zymurgy?", min_score=conf.MIN_SCORE, max_sources=5)
    (source,) = result.sources
    assert source.excerpt.startswith("Zymurgy is the study of fermentation")
    assert len(result.trace["kept"][0]["chunk_ids"]) == 2


@pytest.mark.parametrize(
    ("question", "title"),
    [
        ("What is an await expression?", "Await expression"),
        ("What does the await keyword do?", "Await expression"),
        ("How do I emulate callable objects?", "Emulating callable objects"),
        ("What should I know about string literals?", "String and Bytes literals"),
        ("What should I know about the execution model?", "Execution model"),
    ],
)
def test_the_offline_answer_to_a_question_naming_a_page_quotes_that_page_first(
    demo_corpus: list[Document], question: str, title: str
) -> None:
    """Each of these once opened with a page merely mentioning the words: the named page's
    excerpt was grammar, or a late section, or its sentences never repeat its title."""
    sources = retrieve(question, min_score=conf.MIN_SCORE, max_sources=conf.MAX_SOURCES).sources
    assert sources[0].title == title
    answer = compose_answer(question, sources)
    assert answer.split("]", 1)[0].endswith("[1")


def test_when_every_term_is_common_each_candidate_holds_them_all_in_the_same_order(
    demo_corpus: list[Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corpus where the question's words are all common: the engine must match every term
    (query.MatchPlan.all_required), and candidates are still ordered by the terms held, then the
    engine's score (on SQLite without looking the terms up: each row holds them all)."""
    backend = backend_for()
    terms = query_terms("How does the for statement work?")
    usual = backend.search(terms, limit=20)
    monkeypatch.setattr(type(backend), "common_term_docs", 1)
    found = backend.search(terms, limit=20)
    assert found.plan.all_required
    assert not usual.plan.all_required
    texts = Chunk.objects.in_bulk([c.chunk_id for c in found.candidates])
    assert found.candidates
    both = frozenset({"for", "statement"})
    assert all(holds_all(both, c.title, c.heading, texts[c.chunk_id].text) for c in found.candidates)
    scores = [c.raw_score for c in found.candidates]
    assert scores == sorted(scores, reverse=True)
    # Each holds every term: its raw score counts all their weights, as on the usual path.
    held = sum(capped_rarity(found.doc_counts.get(t, 0), found.total) for t in dict.fromkeys(terms))
    assert min(scores) >= held - 1e-9


def test_document_without_safe_url_has_empty_url(make_document: MakeDocument) -> None:
    make_document(key="js", title="Script link", body="Quokkas are friendly.", url="javascript:alert(1)")
    (source,) = retrieve("quokkas", min_score=0.0, max_sources=5).sources
    assert source.url == ""


def test_reranker_beats_lexical_only_on_the_ranking_cases(demo_corpus: list[Document]) -> None:
    by_id = dict(Document.objects.values_list("id", "key"))

    def reciprocal_rank(question: str, expected: str, **kwargs: object) -> float:
        result = retrieve_with(question, min_score=0.0, max_sources=10, **kwargs)  # type: ignore[arg-type]
        keys = [by_id[s.document_id] for s in result.sources if s.document_id is not None]
        return 1 / (keys.index(expected) + 1) if expected in keys else 0.0

    reranked = sum(reciprocal_rank(q, e) for q, e in RANKING_CASES)
    baseline = sum(reciprocal_rank(q, e, reranker=LexicalOnlyReranker()) for q, e in RANKING_CASES)
    assert reranked >= baseline


def test_query_terms_drop_stopwords_but_keep_keywords() -> None:
    assert query_terms("How does the with statement work?") == ["with", "statement"]
    assert query_terms("What is a lambda?") == ["is", "lambda"]


def test_fts5_expression_quotes_every_term() -> None:
    assert fts5_match(['a"b', "c"]) == '"a""b" OR "c"'
    assert fts5_match(["with", "statement"]) == '("statement") AND ("with" OR "statement")'
