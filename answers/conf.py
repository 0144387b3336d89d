"""Typed, lazy access to the app's settings (so override_settings works in tests)."""

from __future__ import annotations

from django.conf import settings

from answers.citations.normalize import DIALECTS

# The built-in plug-ins (answers.plugins): the names each setting may use for a class's dotted
# path, which it may also give itself. Providers are built with from_settings(conf), rerankers
# and support methods with no argument; heavy clients are imported only when chosen.
PROVIDERS = {
    "extractive": "answers.providers.extractive.ExtractiveProvider",
    "openai": "answers.providers.openai_provider.OpenAIProvider",
    "anthropic": "answers.providers.anthropic_provider.AnthropicProvider",
    "cohere": "answers.providers.cohere_provider.CohereProvider",
    "mistral": "answers.providers.mistral_provider.MistralProvider",
}
RERANKERS = {
    "lexical": "answers.retrieval.rerank.LexicalReranker",
    "none": "answers.retrieval.rerank.LexicalOnlyReranker",
}
SUPPORT_METHODS = {
    "lexical": "answers.support.methods.LexicalMethod",
    "judge": "answers.support.judge.JudgeMethod",
}
EMBEDDINGS = ("none", "openai")
# The lowest threshold at which >= 90 % of the labeled off-topic questions retrieve nothing
# (bench/relevance_labeled.jsonl, curve in bench/RESULTS_relevance.md); see README "Relevance".
MIN_SCORE_DEFAULT = 0.25
NO_SOURCES = ("decline", "answer")  # ANSWERS_NO_SOURCES: what happens when no source reaches the threshold
DECLINE_TEXT = "The documents here don't cover this question."
# The largest limit with which one process met every target of bench/bench_capacity.py (300 SSE and
# 100 JSON asks at once, an 8 s provider: every answer taken done, p95 within twice the provider's
# time, /healthz p99 under 250 ms) on the shared, loaded 2-core benchmark machine; docs/api.md,
# "How much one process takes at once", says why and when to raise it.
MAX_GENERATING_DEFAULT = 10


class AnswersSettings:
    """Each property reads django.conf.settings at call time, never at import."""

    @property
    def PROVIDER(self) -> str:
        """ "extractive" (default), "openai", "anthropic", or a Provider class's dotted path (PROVIDERS)."""
        return str(getattr(settings, "ANSWERS_PROVIDER", "extractive"))

    @property
    def MODEL(self) -> str:
        return str(getattr(settings, "ANSWERS_MODEL", ""))

    @property
    def MAX_SOURCES(self) -> int:
        return int(getattr(settings, "ANSWERS_MAX_SOURCES", 5))

    @property
    def RERANKER(self) -> str:
        """ "lexical" (default), "none" (lexical score only), or a Reranker's dotted path (RERANKERS)."""
        return str(getattr(settings, "ANSWERS_RERANKER", "lexical") or "lexical")

    @property
    def MARKER_DIALECTS(self) -> tuple[str, ...]:
        """The dialects normalize_markers applies: `all` (also when empty), `none`, or names, comma-separated.

        Names are returned as written, unknown ones included: checks.py reports those.
        """
        value = getattr(settings, "ANSWERS_MARKER_DIALECTS", "all")
        written = value.split(",") if isinstance(value, str) else [str(name) for name in value]
        names = [name.strip() for name in written if name.strip()]
        if not names or names == ["all"]:
            return DIALECTS
        if names == ["none"]:
            return ()
        return tuple(names)

    @property
    def MIN_SCORE(self) -> float:
        return float(getattr(settings, "ANSWERS_MIN_SCORE", MIN_SCORE_DEFAULT))

    @property
    def NO_SOURCES(self) -> str:
        """ "decline" (default: no provider call, the answer is ANSWERS_DECLINE_TEXT) or "answer"."""
        return str(getattr(settings, "ANSWERS_NO_SOURCES", "decline") or "decline").strip().lower()

    @property
    def DECLINE_TEXT(self) -> str:
        """The whole text of a declined answer."""
        return str(getattr(settings, "ANSWERS_DECLINE_TEXT", DECLINE_TEXT))

    @property
    def PROVIDER_TIMEOUT(self) -> float:
        return float(getattr(settings, "ANSWERS_PROVIDER_TIMEOUT", 60.0))

    @property
    def MAX_TOKENS(self) -> int:
        """The output token limit sent to the provider (`max_tokens`, on both APIs)."""
        return int(getattr(settings, "ANSWERS_MAX_TOKENS", 2048))

    @property
    def MAX_ANSWER_CHARS(self) -> int:
        """The most characters of raw text kept from a provider; past it the answer is cut (truncated)."""
        return int(getattr(settings, "ANSWERS_MAX_ANSWER_CHARS", 100_000))

    @property
    def EXTRACTIVE_DELAY_MS(self) -> float:
        return float(getattr(settings, "ANSWERS_EXTRACTIVE_DELAY_MS", 0.0))

    @property
    def OPENAI_BASE_URL(self) -> str | None:
        return getattr(settings, "ANSWERS_OPENAI_BASE_URL", "") or None

    @property
    def OPENAI_API_KEY(self) -> str | None:
        return getattr(settings, "ANSWERS_OPENAI_API_KEY", "") or None

    @property
    def ANTHROPIC_BASE_URL(self) -> str | None:
        return getattr(settings, "ANSWERS_ANTHROPIC_BASE_URL", "") or None

    @property
    def ANTHROPIC_API_KEY(self) -> str | None:
        return getattr(settings, "ANSWERS_ANTHROPIC_API_KEY", "") or None

    @property
    def COHERE_BASE_URL(self) -> str | None:
        return getattr(settings, "ANSWERS_COHERE_BASE_URL", "") or None

    @property
    def COHERE_API_KEY(self) -> str | None:
        return getattr(settings, "ANSWERS_COHERE_API_KEY", "") or None

    @property
    def MISTRAL_BASE_URL(self) -> str | None:
        return getattr(settings, "ANSWERS_MISTRAL_BASE_URL", "") or None

    @property
    def MISTRAL_API_KEY(self) -> str | None:
        return getattr(settings, "ANSWERS_MISTRAL_API_KEY", "") or None

    @property
    def ANON_RATE(self) -> str:
        return str(getattr(settings, "ANSWERS_ANON_RATE", "30/min"))

    @property
    def USER_RATE(self) -> str:
        return str(getattr(settings, "ANSWERS_USER_RATE", "120/min"))

    @property
    def TRUSTED_PROXIES(self) -> tuple[str, ...]:
        """Addresses or CIDR networks of the reverse proxies whose X-Forwarded-For is believed."""
        value = getattr(settings, "ANSWERS_TRUSTED_PROXIES", ())
        written = value.split(",") if isinstance(value, str) else [str(item) for item in value]
        return tuple(item.strip() for item in written if item.strip())

    @property
    def STALE_AFTER(self) -> float:
        """Seconds without a heartbeat after which an in-flight answer counts as abandoned."""
        return float(getattr(settings, "ANSWERS_STALE_AFTER", 60.0))

    @property
    def HEARTBEAT_INTERVAL(self) -> float:
        """How often an in-flight answer proves it is alive: well within STALE_AFTER."""
        return max(0.05, min(5.0, self.STALE_AFTER / 4))

    @property
    def SHUTDOWN_GRACE(self) -> float:
        """Seconds a stopping server lets in-flight answers finish before failing them."""
        return float(getattr(settings, "ANSWERS_SHUTDOWN_GRACE", 10.0))

    @property
    def STREAM_DB_WORKERS(self) -> int:
        """Database connections (and threads) one process's event streams share."""
        return int(getattr(settings, "ANSWERS_STREAM_DB_WORKERS", 4))

    @property
    def REQUEST_THREADS(self) -> int:
        """Threads one process's requests share for their synchronous parts (answers.handler)."""
        return int(getattr(settings, "ANSWERS_REQUEST_THREADS", 16))

    @property
    def PIPELINE_DB_WORKERS(self) -> int:
        """Pipeline steps of one process (retrieve and store a question, heartbeats, store the
        result) that use the database at once, each giving its connection back after; the rest
        queue. Generation itself is not limited."""
        return int(getattr(settings, "ANSWERS_PIPELINE_DB_WORKERS", 8))

    @property
    def MAX_GENERATING(self) -> int:
        """The most answers one process generates at once (from reading the question to the end of
        generation); a new ask past it is refused with 503 and Retry-After (answers.pipeline.lifecycle).
        0: no limit."""
        return int(getattr(settings, "ANSWERS_MAX_GENERATING", MAX_GENERATING_DEFAULT))

    @property
    def SUPPORT_METHOD(self) -> str:
        """ "lexical" (default), "judge", or a SupportMethod class's dotted path (SUPPORT_METHODS)."""
        return str(getattr(settings, "ANSWERS_SUPPORT_METHOD", "lexical") or "lexical")

    @property
    def SUPPORT_MIN(self) -> float:
        """Support score (0..1) at or above which a source counts as supporting a sentence."""
        return float(getattr(settings, "ANSWERS_SUPPORT_MIN", 0.5))

    # --- Dense retrieval (answers.retrieval.embeddings) ---
    @property
    def EMBEDDINGS(self) -> str:
        """ "none" (lexical retrieval only) or "openai" (an OpenAI-compatible /v1/embeddings server)."""
        return str(getattr(settings, "ANSWERS_EMBEDDINGS", "none") or "none")

    @property
    def EMBEDDINGS_BASE_URL(self) -> str | None:
        return getattr(settings, "ANSWERS_EMBEDDINGS_BASE_URL", "") or None

    @property
    def EMBEDDINGS_API_KEY(self) -> str | None:
        return getattr(settings, "ANSWERS_EMBEDDINGS_API_KEY", "") or None

    @property
    def EMBEDDING_MODEL(self) -> str:
        return str(getattr(settings, "ANSWERS_EMBEDDING_MODEL", ""))

    @property
    def EMBEDDING_DIMENSIONS(self) -> int:
        return int(getattr(settings, "ANSWERS_EMBEDDING_DIMENSIONS", 0) or 0)

    @property
    def EMBEDDINGS_TIMEOUT(self) -> float:
        """Seconds a question's embedding may take, retries included, before retrieval goes lexical."""
        return float(getattr(settings, "ANSWERS_EMBEDDINGS_TIMEOUT", 5.0))

    @property
    def PGVECTOR_INDEX(self) -> str:
        """ "hnsw" (an HNSW cosine index per dimension) or "none" (PostgreSQL scans every vector)."""
        return str(getattr(settings, "ANSWERS_PGVECTOR_INDEX", "hnsw") or "hnsw")

    # --- Operations: event retention (manage.py trim_events), metrics (answers.metrics) ---
    @property
    def EVENT_RETENTION(self) -> float:
        """Seconds after an answer finishes before `trim_events` deletes its stored events."""
        return float(getattr(settings, "ANSWERS_EVENT_RETENTION", 604800.0))

    @property
    def METRICS_TOKEN(self) -> str:
        """The bearer token `GET /metrics` asks for; empty: no metrics endpoint (404)."""
        return str(getattr(settings, "ANSWERS_METRICS_TOKEN", "") or "")

    # --- Conversations (answers/conversations/) ---
    @property
    def CONVERSATION_TURNS(self) -> int:
        """The most answers (turns) one conversation holds; a follow-up past it is refused (409)."""
        return int(getattr(settings, "ANSWERS_CONVERSATION_TURNS", 20))

    @property
    def CONVERSATION_HISTORY_CHARS(self) -> int:
        """The most characters of earlier turns (questions and marker-free answers) a follow-up's
        prompt carries; the oldest turns are dropped first (docs/api.md, "Conversations")."""
        return int(getattr(settings, "ANSWERS_CONVERSATION_HISTORY_CHARS", 6000))


conf = AnswersSettings()
