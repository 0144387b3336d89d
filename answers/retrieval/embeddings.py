"""The embeddings client: any OpenAI-compatible /v1/embeddings server, batched, retried within a deadline.

Used twice: `question_vector()` at answer time (cached briefly per process; a
failure there makes retrieval lexical, never the answer fail) and
`embed_chunks()` at ingest time and by the `embed` command (vectors stored by
answers.retrieval.dense, each with the model it came from).

The API key goes to the client and nowhere else: log lines and error reasons
name the server, the model and the HTTP status, never the key, and never the
server's error body (OpenAI's 401 body repeats part of the key).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import openai

from answers.conf import conf
from answers.models import Chunk, ChunkEmbedding
from answers.retrieval import dense

logger = logging.getLogger(__name__)

BATCH_SIZE = 64  # texts per request: what OpenAI, TEI and Ollama all accept
BATCH_DEADLINE = 120.0  # seconds one batch may take at ingest, retries included
QUESTION_CACHE_SECONDS = 300.0
QUESTION_CACHE_SIZE = 512
# After a failed question embedding, questions skip the server this long (lexical
# retrieval at once) instead of each waiting out ANSWERS_EMBEDDINGS_TIMEOUT.
PAUSE_AFTER_FAILURE = 30.0
MAX_BACKOFF = 4.0


class EmbeddingsUnavailable(Exception):
    """The embeddings server gave no usable vectors in time; `reason` says why (no secrets)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _retry_after(exc: openai.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class EmbeddingsClient:
    """One server and model; `embed()` is one request per call, retried on 429/5xx/connection errors.

    `clock` and `sleep` time the retries, the question cache and the pause after a failure
    (tests pass a fake clock's).
    """

    base_url: str | None
    model: str
    dimensions: int
    api_key: str | None = field(default=None, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)

    @property
    def where(self) -> str:
        return self.base_url or "the OpenAI API"

    def _client(self) -> openai.OpenAI:
        # Retries are ours (within one deadline), so the client's own are off. Servers
        # without keys (Ollama, TEI, llama.cpp) accept any: the client insists on one.
        return _openai_client(self.base_url, self.api_key or "unused")

    def embed(self, texts: Sequence[str], *, deadline: float) -> list[list[float]]:
        """One vector per text, in order; EmbeddingsUnavailable when none come within `deadline` s."""
        if not texts:
            return []
        give_up = self.clock() + deadline
        # Only OpenAI's text-embedding-3 models shorten vectors on request; other
        # servers reject or ignore the field, so their size is checked instead.
        size = self.dimensions if self.model.startswith("text-embedding-3") else openai.omit
        attempt = 0
        while True:
            remaining = give_up - self.clock()
            if remaining <= 0:
                raise EmbeddingsUnavailable(f"no vectors from {self.where} within {deadline:g} s")
            try:
                response = (
                    self._client()
                    .with_options(timeout=remaining)
                    .embeddings.create(
                        model=self.model, input=list(texts), encoding_format="float", dimensions=size
                    )
                )
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status != 429 and status < 500:
                    raise EmbeddingsUnavailable(
                        f"{self.where} refused the request: HTTP {status} ({type(exc).__name__})"
                    ) from None
                reason, wait = f"HTTP {status}", _retry_after(exc)
            except openai.APIConnectionError as exc:  # timeouts included
                reason, wait = type(exc).__name__, None
            else:
                return self._vectors(response, len(texts))
            attempt += 1
            pause = min(MAX_BACKOFF, wait if wait is not None else 0.1 * 2**attempt)
            remaining = give_up - self.clock()
            if pause >= remaining:
                raise EmbeddingsUnavailable(
                    f"no vectors from {self.where} within {deadline:g} s ({reason}, {attempt} attempts)"
                )
            logger.warning("Embeddings from %s failed (%s); retrying in %.2f s", self.where, reason, pause)
            self.sleep(pause)

    def _vectors(self, response: openai.types.CreateEmbeddingResponse, count: int) -> list[list[float]]:
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != count:
            raise EmbeddingsUnavailable(f"{self.where} returned {len(data)} vectors for {count} texts")
        vectors = [list(item.embedding) for item in data]
        for vector in vectors:
            if len(vector) != self.dimensions:
                raise EmbeddingsUnavailable(
                    f"{self.model} returned vectors of {len(vector)} dimensions;"
                    f" ANSWERS_EMBEDDING_DIMENSIONS is {self.dimensions}"
                )
        return vectors


@lru_cache(maxsize=8)
def _openai_client(base_url: str | None, api_key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)


def get_client() -> EmbeddingsClient | None:
    """The configured client, or None when retrieval is lexical only (ANSWERS_EMBEDDINGS=none)."""
    if conf.EMBEDDINGS != "openai":
        return None
    return EmbeddingsClient(
        base_url=conf.EMBEDDINGS_BASE_URL,
        api_key=conf.EMBEDDINGS_API_KEY,
        model=conf.EMBEDDING_MODEL,
        dimensions=conf.EMBEDDING_DIMENSIONS,
    )


# --- Questions --------------------------------------------------------------------------------

_question_cache: OrderedDict[tuple[str | None, str, int, str], tuple[float, list[float]]] = OrderedDict()
_question_lock = threading.Lock()
_paused: dict[tuple[str | None, str], tuple[float, str]] = {}  # (server, model) -> (until, reason)


def question_vector(client: EmbeddingsClient, question: str) -> list[float]:
    """The question's vector; the same question within QUESTION_CACHE_SECONDS costs no request.

    Raises EmbeddingsUnavailable, at once while the server is paused after a failure.
    """
    key = (client.base_url, client.model, client.dimensions, question)
    server = (client.base_url, client.model)
    now = client.clock()
    with _question_lock:
        hit = _question_cache.get(key)
        if hit is not None and hit[0] > now:
            _question_cache.move_to_end(key)
            return hit[1]
        until, reason = _paused.get(server, (0.0, ""))
    if now < until:
        raise EmbeddingsUnavailable(f"{reason}; not asked again for {until - now:.0f} s")
    try:
        vector = client.embed([question], deadline=conf.EMBEDDINGS_TIMEOUT)[0]
    except EmbeddingsUnavailable as exc:
        with _question_lock:
            _paused[server] = (client.clock() + PAUSE_AFTER_FAILURE, exc.reason)
        raise
    with _question_lock:
        _paused.pop(server, None)
        _question_cache[key] = (now + QUESTION_CACHE_SECONDS, vector)
        while len(_question_cache) > QUESTION_CACHE_SIZE:
            _question_cache.popitem(last=False)
    return vector


def clear_question_cache() -> None:
    """Forget cached question vectors and paused servers (tests; a server known to be back)."""
    with _question_lock:
        _question_cache.clear()
        _paused.clear()


# --- Chunks -----------------------------------------------------------------------------------


def chunk_input(title: str, heading: str, text: str) -> str:
    """What is embedded for a chunk: its document's title and heading give it context."""
    return "\n".join(part for part in (title, heading, text) if part)


def stale_chunk_ids(*, everything: bool = False, document_ids: Iterable[int] | None = None) -> list[int]:
    """Chunks without a vector from the configured model (every chunk with `everything`).

    With `document_ids`, only those documents' chunks.
    """
    chunks = Chunk.objects.order_by("id")
    if document_ids is not None:
        chunks = chunks.filter(document_id__in=list(document_ids))
    if not everything:
        current = ChunkEmbedding.objects.filter(
            model=conf.EMBEDDING_MODEL, dimensions=conf.EMBEDDING_DIMENSIONS
        ).values("chunk_id")
        chunks = chunks.exclude(id__in=current)
    return list(chunks.values_list("id", flat=True))


def _batches(ids: list[int], size: int) -> Iterable[list[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def embed_chunks(
    chunk_ids: Iterable[int],
    *,
    batch_size: int = BATCH_SIZE,
    deadline: float = BATCH_DEADLINE,
    progress: Callable[[int], object] | None = None,
    client: EmbeddingsClient | None = None,
) -> int:
    """Embed and store these chunks' vectors (replacing older ones); how many were stored.

    A no-op when embeddings are off. Raises EmbeddingsUnavailable when a batch
    gets no vectors within `deadline` seconds; the batches before it stay stored and
    `embed` fills in the rest later. `progress(n)` is told after each batch.
    """
    client = client or get_client()
    if client is None:
        return 0
    dense.ensure_schema(dimensions=client.dimensions)
    stored = 0
    for batch in _batches(sorted(set(chunk_ids)), batch_size):
        rows = list(Chunk.objects.filter(id__in=batch).values_list("id", "title", "heading", "text"))
        vectors = client.embed([chunk_input(*row[1:]) for row in rows], deadline=deadline)
        stored += dense.store(
            [(row[0], vector) for row, vector in zip(rows, vectors, strict=True)],
            model=client.model,
            dimensions=client.dimensions,
        )
        if progress is not None:
            progress(len(batch))
    return stored


@dataclass(frozen=True)
class EmbedOutcome:
    """What `embed_missing` did: vectors stored, chunks still without one, and why (no secrets)."""

    stored: int = 0
    missing: int = 0
    problem: str | None = None

    @property
    def warning(self) -> str | None:
        """The message for a person, when chunks were left without a vector."""
        if self.problem is None:
            return None
        return (
            f"{self.missing} chunk(s) stored without a dense vector ({self.problem}); the documents are "
            "kept and lexical retrieval finds them; run `manage.py embed` to add the vectors."
        )


def embed_missing(
    document_ids: Iterable[int] | None = None,
    *,
    deadline: float = BATCH_DEADLINE,
    on_total: Callable[[int], object] | None = None,
    progress: Callable[[int], object] | None = None,
) -> EmbedOutcome:
    """The ingest hook: embed the chunks (of these documents) that lack a vector from the configured model.

    A no-op when embeddings are off. Never raises for an unreachable server or a
    PostgreSQL without pgvector: the outcome says how many chunks were left and why
    (and it is logged), because stored documents stay useful to lexical retrieval and
    `embed` fills the vectors in later.
    """
    client = get_client()
    if client is None:
        return EmbedOutcome()
    ids = stale_chunk_ids(document_ids=document_ids)
    if not ids:
        return EmbedOutcome()
    if on_total is not None:
        on_total(len(ids))
    done = 0

    def counted(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(n)

    try:
        stored = embed_chunks(ids, deadline=deadline, progress=counted, client=client)
    except (EmbeddingsUnavailable, dense.PgvectorMissing) as exc:
        reason = exc.reason if isinstance(exc, EmbeddingsUnavailable) else str(exc)
        outcome = EmbedOutcome(stored=done, missing=len(ids) - done, problem=reason)
        logger.warning("%s", outcome.warning)
        return outcome
    return EmbedOutcome(stored=stored, missing=len(ids) - stored)
