"""The embeddings client against the stub server: batching, retries within a deadline, what it sends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from answers.retrieval.embeddings import (
    PAUSE_AFTER_FAILURE,
    EmbeddingsClient,
    EmbeddingsUnavailable,
    clear_question_cache,
    question_vector,
)
from tests.fixtures.clock import MOMENT, FakeClock
from tests.fixtures.embeddings_server import DIMENSIONS, StubEmbeddingsServer, vector_for


def _client(server: StubEmbeddingsServer, **overrides: object) -> EmbeddingsClient:
    values: dict[str, object] = {
        "base_url": server.base_url,
        "model": "stub-embed",
        "dimensions": DIMENSIONS,
        "api_key": "sk-stub-secret-key",
        **overrides,
    }
    return EmbeddingsClient(**values)  # type: ignore[arg-type]


def test_one_request_returns_one_vector_per_text_in_order(embeddings_server: StubEmbeddingsServer) -> None:
    texts = ["break out of a loop", "import a module", "lambda"]

    vectors = _client(embeddings_server).embed(texts, deadline=5)

    assert vectors == [pytest.approx(vector_for(t)) for t in texts]
    assert len(embeddings_server.requests) == 1
    assert embeddings_server.requests[0]["input"] == texts
    assert embeddings_server.requests[0]["encoding_format"] == "float"
    assert "dimensions" not in embeddings_server.requests[0]  # only text-embedding-3 models take it


def test_openai_text_embedding_3_models_are_asked_for_the_configured_size(
    embeddings_server: StubEmbeddingsServer,
) -> None:
    _client(embeddings_server, model="text-embedding-3-small", dimensions=32).embed(["x"], deadline=5)
    assert embeddings_server.requests[0]["dimensions"] == 32


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_busy_or_failing_answers_are_retried(embeddings_server: StubEmbeddingsServer, status: int) -> None:
    embeddings_server.fail_next(2, status=status)

    assert len(_client(embeddings_server).embed(["x"], deadline=5)) == 1
    assert len(embeddings_server.requests) == 3


@pytest.mark.parametrize(("status", "name"), [(400, "BadRequestError"), (401, "AuthenticationError")])
def test_a_refusal_is_not_retried(embeddings_server: StubEmbeddingsServer, status: int, name: str) -> None:
    embeddings_server.fail_next(1, status=status)

    with pytest.raises(EmbeddingsUnavailable, match=f"HTTP {status} \\({name}\\)"):
        _client(embeddings_server).embed(["x"], deadline=5)
    assert len(embeddings_server.requests) == 1


def test_a_server_that_stays_down_gives_up_at_the_deadline(embeddings_server: StubEmbeddingsServer) -> None:
    embeddings_server.stop()
    clock = FakeClock()  # each backoff moves it: 0.2 s, then 0.4 s would end past the deadline
    started = clock()

    with pytest.raises(EmbeddingsUnavailable, match=r"within 0\.6 s \(APIConnectionError, 2 attempts\)"):
        _client(embeddings_server, clock=clock, sleep=clock.advance).embed(["x"], deadline=0.6)
    assert clock() - started == pytest.approx(0.2)


@pytest.fixture
def no_pauses() -> Iterator[None]:
    clear_question_cache()
    yield
    clear_question_cache()


@pytest.mark.usefixtures("no_pauses")
def test_after_a_failed_question_the_server_is_skipped_for_exactly_the_pause(
    embeddings_server: StubEmbeddingsServer,
) -> None:
    clock = FakeClock()
    client = _client(embeddings_server, clock=clock, sleep=clock.advance)
    embeddings_server.fail_next(1, status=400)
    with pytest.raises(EmbeddingsUnavailable, match="HTTP 400"):
        question_vector(client, "How do I leave a loop early?")

    clock.advance(PAUSE_AFTER_FAILURE - MOMENT)
    with pytest.raises(EmbeddingsUnavailable, match=r"HTTP 400.*; not asked again for 0 s"):
        question_vector(client, "How do I import a module?")
    assert len(embeddings_server.requests) == 1

    clock.advance(MOMENT)  # the pause is over: the server is asked again
    assert question_vector(client, "How do I import a module?") == pytest.approx(
        vector_for("How do I import a module?")
    )
    assert len(embeddings_server.requests) == 2


def test_vectors_of_the_wrong_size_are_refused_with_both_sizes(
    embeddings_server: StubEmbeddingsServer,
) -> None:
    with pytest.raises(EmbeddingsUnavailable, match="64 dimensions; ANSWERS_EMBEDDING_DIMENSIONS is 128"):
        _client(embeddings_server, dimensions=128).embed(["x"], deadline=5)


def test_the_key_is_not_in_the_clients_repr(embeddings_server: StubEmbeddingsServer) -> None:
    assert "sk-stub-secret-key" not in repr(_client(embeddings_server))
