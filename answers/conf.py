"""The app's settings, each declared once: its name, environment variable, default, parser, meaning
and the system checks that guard it; read lazily, so override_settings works.

`AnswersSettings` is the table: one `Setting` per row. project/settings.py takes the environment
through `environment_settings()`, answers/checks.py validates the values (a value the parser cannot
read is reported under the setting's first check id), and the docs' settings reference is generated
from `settings_table()` (docs/_ext/answers_reference.py): a default changed here changes the page.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from answers.citations.normalize import DIALECTS

T = TypeVar("T")

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
# (bench/relevance_labeled.jsonl, curve in bench/RESULTS_relevance.md; docs/explanation/relevance.md).
MIN_SCORE_DEFAULT = 0.25
NO_SOURCES = ("decline", "answer")  # ANSWERS_NO_SOURCES: what happens when no source reaches the threshold
DECLINE_TEXT = "The documents here don't cover this question."
# The largest limit with which one process met every target of bench/bench_capacity.py (300 SSE and
# 100 JSON asks at once, an 8 s provider: every answer taken done, p95 within twice the provider's
# time, /healthz p99 under 250 ms) on the shared, loaded 2-core benchmark machine;
# docs/howto/deploy.md, "How much one process takes at once", says why and when to raise it.
MAX_GENERATING_DEFAULT = 10

_UNSET = object()


@dataclass(frozen=True)
class Parser(Generic[T]):
    """How a setting's value is read, from the environment's text or a Django setting's value."""

    kind: str  # what it reads, for messages and the reference: "a whole number"
    read: Callable[[Any], T]


def _names(value: Any) -> tuple[str, ...]:
    written = value.split(",") if isinstance(value, str) else [str(item) for item in value]
    return tuple(name.strip() for name in written if name.strip())


def _dialects(value: Any) -> tuple[str, ...]:
    # Names are returned as written, unknown ones included: checks.py reports those (E014).
    names = _names(value)
    if not names or names == ("all",):
        return DIALECTS
    return () if names == ("none",) else names


TEXT = Parser("text", str)
OPTIONAL_TEXT: Parser[str | None] = Parser("text", lambda value: str(value) or None)
CHOICE = Parser("a name", lambda value: str(value).strip().lower())
WHOLE_NUMBER = Parser("a whole number", int)
NUMBER = Parser("a number", float)
NAMES = Parser("a comma-separated list", _names)
DIALECT_NAMES = Parser("`all`, `none` or dialect names, comma-separated", _dialects)


class SettingInvalid(ImproperlyConfigured):
    """A value a setting's parser cannot read (checks.py reports it under the setting's check id)."""

    def __init__(self, setting: Setting[Any], value: object) -> None:
        super().__init__(f"{setting.name} is {value!r}, which is not {setting.parser.kind}.")
        self.setting = setting


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One row of the table: where a setting comes from, its default, how it is read, what it means."""

    name: str  # the Django setting
    default: T
    parser: Parser[T]
    meaning: str  # Markdown, for the reference
    area: str  # the reference's section
    checks: tuple[str, ...] = ()  # the system checks guarding it; the first reports an unreadable value
    env: str = ""  # the environment variable project/settings.py reads it from, when not `name`
    shown_default: str = ""  # how the reference states the default, when not the value itself
    fallback: Setting[T] | None = None  # read instead while this one is unset
    blank_is_default: bool = True  # an empty or blank value counts as unset
    environment_only: bool = False  # read from the environment, as the library using it does

    @property
    def env_name(self) -> str:
        return self.env or self.name

    def is_unset(self, raw: object) -> bool:
        if raw is _UNSET or raw is None:
            return True
        return self.blank_is_default and isinstance(raw, str) and not raw.strip()

    def value(self) -> T:
        """The value now: Django's setting (or the environment) parsed, else the fallback's or the default."""
        if self.environment_only:
            raw = os.environ.get(self.env_name, _UNSET)
        else:
            raw = getattr(settings, self.name, _UNSET)
        if self.is_unset(raw):
            return self.fallback.value() if self.fallback is not None else self.default
        try:
            return self.parser.read(raw)
        except (TypeError, ValueError):
            raise SettingInvalid(self, raw) from None


class Declared(Generic[T]):
    """A Setting as a class attribute of AnswersSettings: `conf.X` reads its value, `AnswersSettings.X`
    is the Setting itself."""

    def __init__(self, setting: Setting[T]) -> None:
        self.setting = setting

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Setting[T]: ...
    @overload
    def __get__(self, instance: object, owner: type[Any]) -> T: ...
    def __get__(self, instance: object, owner: type[Any]) -> Setting[T] | T:
        return self.setting if instance is None else self.setting.value()


def declare(
    name: str,
    default: T,
    parser: Parser[T],
    *,
    meaning: str,
    area: str,
    checks: tuple[str, ...] = (),
    env: str = "",
    shown_default: str = "",
    fallback: Declared[T] | None = None,
    blank_is_default: bool = True,
    environment_only: bool = False,
) -> Declared[T]:
    """A row of the table (Setting's fields); `fallback` names another row."""
    return Declared(
        Setting(
            name,
            default,
            parser,
            meaning,
            area,
            checks=checks,
            env=env,
            shown_default=shown_default,
            fallback=fallback.setting if fallback is not None else None,
            blank_is_default=blank_is_default,
            environment_only=environment_only,
        )
    )


def _required_key(provider: str) -> str:
    return f"The `{provider}` provider's key, required with it, printable without spaces; never logged."


class AnswersSettings:
    """The table of the app's settings; each attribute reads django.conf.settings at call time."""

    # --- Providers (answers/providers/)
    PROVIDER = declare(
        "ANSWERS_PROVIDER", "extractive", TEXT, area="providers", checks=("answers.E001", "answers.E047"),
        meaning="Who writes the answers: `extractive` (offline, quotes the sources), `openai` (any "
        "OpenAI-compatible server), `anthropic`, `cohere` or `mistral` (native citations), or the dotted "
        "path of a provider class of your own (with `from_settings(conf)` and `stream()`, as "
        "`answers.providers.base.Provider`). Anything else stops the app at startup.",
    )  # fmt: skip
    MODEL = declare(
        "ANSWERS_MODEL", "", TEXT, area="providers", shown_default="the provider's default",
        checks=("answers.E017", "answers.E061", "answers.E064"),
        meaning="The model name sent to the provider; required with `anthropic` (a model that supports "
        "citations), `cohere` and `mistral`.",
    )  # fmt: skip
    PROVIDER_TIMEOUT = declare(
        "ANSWERS_PROVIDER_TIMEOUT", 60.0, NUMBER, area="providers", checks=("answers.E004",),
        meaning="Seconds of the provider's own time before a provider call, retries included, is abandoned "
        "(a `timeout` failure); the app's time storing and publishing pieces between two of them does not "
        "count (answers/providers/streaming.py, `Deadline`).",
    )  # fmt: skip
    MAX_TOKENS = declare(
        "ANSWERS_MAX_TOKENS", 2048, WHOLE_NUMBER, area="providers", checks=("answers.E036",),
        meaning="The output token limit sent with every answer request (`max_tokens`); an answer that "
        "reaches it is `done` with `truncated: true`. At least 1.",
    )  # fmt: skip
    MAX_ANSWER_CHARS = declare(
        "ANSWERS_MAX_ANSWER_CHARS", 100_000, WHOLE_NUMBER, area="providers", checks=("answers.E037",),
        meaning="The most characters of raw text kept from a provider: past them its stream is closed and "
        "the answer is `done` with `truncated: true`, as at the token limit. At least 1.",
    )  # fmt: skip
    EXTRACTIVE_DELAY_MS = declare(
        "ANSWERS_EXTRACTIVE_DELAY_MS", 0.0, NUMBER, area="providers", checks=("answers.E006",),
        meaning="A pause between the extractive provider's pieces, to make streaming visible "
        "(`make run` sets 15).",
    )  # fmt: skip
    OPENAI_BASE_URL = declare(
        "ANSWERS_OPENAI_BASE_URL", None, OPTIONAL_TEXT, env="OPENAI_BASE_URL", area="providers",
        checks=("answers.E068",), shown_default="the client's default",
        meaning="Where the `openai` provider connects (OpenAI, vLLM, Ollama, llama.cpp, LM Studio...): "
        "an http(s) URL.",
    )  # fmt: skip
    OPENAI_API_KEY = declare(
        "ANSWERS_OPENAI_API_KEY", None, OPTIONAL_TEXT, env="OPENAI_API_KEY", area="providers",
        checks=("answers.E067",), shown_default="none (local servers need none)",
        meaning="The `openai` provider's key, printable without spaces; never logged.",
    )  # fmt: skip
    ANTHROPIC_BASE_URL = declare(
        "ANSWERS_ANTHROPIC_BASE_URL", None, OPTIONAL_TEXT, env="ANTHROPIC_BASE_URL", area="providers",
        checks=("answers.E070",), shown_default="the client's default",
        meaning="Where the `anthropic` provider connects (a proxy or gateway): an http(s) URL.",
    )  # fmt: skip
    ANTHROPIC_API_KEY = declare(
        "ANSWERS_ANTHROPIC_API_KEY", None, OPTIONAL_TEXT, env="ANTHROPIC_API_KEY", area="providers",
        checks=("answers.E069",), shown_default="none",
        meaning=_required_key("anthropic"),
    )  # fmt: skip
    COHERE_BASE_URL = declare(
        "ANSWERS_COHERE_BASE_URL", None, OPTIONAL_TEXT, env="COHERE_BASE_URL", area="providers",
        checks=("answers.E063",), shown_default="the client's default (`https://api.cohere.com`)",
        meaning="Where the `cohere` provider connects (a gateway or a Cohere-compatible server): an "
        "http(s) URL.",
    )  # fmt: skip
    COHERE_API_KEY = declare(
        "ANSWERS_COHERE_API_KEY", None, OPTIONAL_TEXT, env="COHERE_API_KEY", area="providers",
        checks=("answers.E062",), shown_default="none",
        meaning=_required_key("cohere"),
    )  # fmt: skip
    MISTRAL_BASE_URL = declare(
        "ANSWERS_MISTRAL_BASE_URL", None, OPTIONAL_TEXT, env="MISTRAL_BASE_URL", area="providers",
        checks=("answers.E066",), shown_default="the client's default (`https://api.mistral.ai`)",
        meaning="Where the `mistral` provider connects, without `/v1` (a gateway, a regional endpoint such "
        "as `https://api.eu.mistral.ai`): an http(s) URL.",
    )  # fmt: skip
    MISTRAL_API_KEY = declare(
        "ANSWERS_MISTRAL_API_KEY", None, OPTIONAL_TEXT, env="MISTRAL_API_KEY", area="providers",
        checks=("answers.E065",), shown_default="none",
        meaning=_required_key("mistral"),
    )  # fmt: skip
    MARKER_DIALECTS = declare(
        "ANSWERS_MARKER_DIALECTS", DIALECTS, DIALECT_NAMES, area="providers", checks=("answers.E014",),
        shown_default="`all`",
        meaning="The marker dialects rewritten into `[n]` before out-of-range markers are stripped and "
        "sources finalized (`【2】`, `[[2]]`, `[citation:2]`, `[doc2]`, `【2†source】`, `[^2]`, and the "
        "model's own `[^2]: ...` source lines removed): `all`, `none`, or names from "
        f"{', '.join(f'`{name}`' for name in DIALECTS)}, comma-separated.",
    )  # fmt: skip

    # --- Retrieval (answers/retrieval/)
    MAX_SOURCES = declare(
        "ANSWERS_MAX_SOURCES", 5, WHOLE_NUMBER, area="retrieval", checks=("answers.E002",),
        meaning="The entity cap: the most distinct documents in an answer's retrieved list.",
    )  # fmt: skip
    MIN_SCORE = declare(
        "ANSWERS_MIN_SCORE", MIN_SCORE_DEFAULT, NUMBER, area="retrieval", checks=("answers.E003",),
        meaning="The relevance threshold, 0..1: a source is kept when its score (at most the share of "
        "the question it covers, by rarity) is at least this; 0 keeps every candidate. The default is "
        "measured (bench/RESULTS_relevance.md).",
    )  # fmt: skip
    RERANKER = declare(
        "ANSWERS_RERANKER", "lexical", TEXT, area="retrieval", checks=("answers.E007", "answers.E048"),
        meaning="How candidates are scored: `lexical`, `none` (the engine's score alone) or a reranker "
        "class's dotted path.",
    )  # fmt: skip
    NO_SOURCES = declare(
        "ANSWERS_NO_SOURCES", "decline", CHOICE, area="retrieval", checks=("answers.E033",),
        meaning="What happens when no retrieved source reaches `ANSWERS_MIN_SCORE`: `decline` (the "
        "provider is not called; the answer is `done`, `declined`, with `ANSWERS_DECLINE_TEXT` and no "
        "sources) or `answer` (the provider is called anyway, with no sources).",
    )  # fmt: skip
    DECLINE_TEXT = declare(
        "ANSWERS_DECLINE_TEXT", DECLINE_TEXT, TEXT, area="retrieval", checks=("answers.E034",),
        blank_is_default=False,
        meaning="The whole text of a declined answer: plain text, not empty, without citation markers.",
    )  # fmt: skip

    # --- Serving: rates, proxies, processes (answers/api/, answers/pipeline/, answers/sse/)
    ANON_RATE = declare(
        "ANSWERS_ANON_RATE", "30/min", TEXT, area="serving", checks=("answers.E005",),
        meaning="How often one anonymous client address may ask (`POST /api/answers/`, and the page's "
        "form); reader feedback has the same rate, counted apart.",
    )  # fmt: skip
    USER_RATE = declare(
        "ANSWERS_USER_RATE", "120/min", TEXT, area="serving", checks=("answers.E005",),
        meaning="How often one signed-in user may ask; reader feedback has the same rate, counted apart.",
    )  # fmt: skip
    TRUSTED_PROXIES = declare(
        "ANSWERS_TRUSTED_PROXIES", (), NAMES, area="serving", checks=("answers.E025",),
        shown_default="none: the connecting address counts, `X-Forwarded-For` is ignored",
        meaning="The reverse proxies (IP addresses or CIDR networks, comma-separated) whose "
        "`X-Forwarded-For` names the client, for the anonymous rate limit and the admin sign-in lockout: "
        "a request from one of them counts against the nearest address in that header that is not a "
        "trusted proxy (read from the right). Set it only for a proxy that appends to that header on "
        "every request.",
    )  # fmt: skip
    STALE_AFTER = declare(
        "ANSWERS_STALE_AFTER", 60.0, NUMBER, area="serving", checks=("answers.E008",),
        meaning="Seconds without a heartbeat after which an in-flight answer counts as abandoned "
        "(`reap_stale_answers`); live answers beat every `min(5, this/4)` seconds.",
    )  # fmt: skip
    SHUTDOWN_GRACE = declare(
        "ANSWERS_SHUTDOWN_GRACE", 10.0, NUMBER, area="serving", checks=("answers.E009",),
        meaning="Seconds a stopping server (SIGTERM) gives answers in flight to finish before storing "
        "them as failed (`shutdown`).",
    )  # fmt: skip
    STREAM_DB_WORKERS = declare(
        "ANSWERS_STREAM_DB_WORKERS", 4, WHOLE_NUMBER, area="serving", checks=("answers.E010",),
        meaning="The threads (and database connections) one process's event streams share: each read of "
        "the event store borrows one and gives it back; a stream waiting for events holds neither.",
    )  # fmt: skip
    REQUEST_THREADS = declare(
        "ANSWERS_REQUEST_THREADS", 16, WHOLE_NUMBER, area="serving", checks=("answers.E039",),
        meaning="The threads one process's requests share for their synchronous parts (middleware hooks, "
        "database work; answers/handler.py): a JSON ask waiting for its provider holds none. `0`: "
        "Django's own way, a thread per request.",
    )  # fmt: skip
    PIPELINE_DB_WORKERS = declare(
        "ANSWERS_PIPELINE_DB_WORKERS", 8, WHOLE_NUMBER, area="serving", checks=("answers.E011",),
        meaning="Answer-pipeline steps of one process (retrieving and storing a question, heartbeats, "
        "storing the result) that use the database at once, each giving its connection back after; the "
        "rest wait their turn. Generation itself is not limited.",
    )  # fmt: skip
    MAX_GENERATING = declare(
        "ANSWERS_MAX_GENERATING", MAX_GENERATING_DEFAULT, WHOLE_NUMBER, area="serving",
        checks=("answers.E050",),
        meaning="The most answers one process generates at once (from reading the question to the end of "
        "generation); a new ask past it is refused with `503` and `Retry-After` on both API paths and the "
        "page's form, nothing stored, counted in `answers_asks_refused_total`. `0`: no limit. The default "
        "is measured (bench/RESULTS_capacity.md).",
    )  # fmt: skip
    REDIS_URL = declare(
        "REDIS_URL", "", TEXT, area="serving", shown_default="unset: one process",
        meaning="When set (`redis://host:6379/0`), events reach the streams open on every server process; "
        "Redis carries them, the database stays the record.",
    )  # fmt: skip
    GRIP_URL = declare(
        "GRIP_URL", "", TEXT, area="serving", shown_default="unset: no GRIP",
        meaning="Pushpin's publish endpoint with its signing key, e.g. "
        "`http://127.0.0.1:5561?key=...&verify-iss=pushpin`: event streams are then held by Pushpin, "
        "not the app (the Pushpin how-to).",
    )  # fmt: skip

    # --- The support check (answers/support/)
    SUPPORT_METHOD = declare(
        "ANSWERS_SUPPORT_METHOD", "lexical", TEXT, area="support", checks=("answers.E015", "answers.E049"),
        meaning="How the support check scores each (sentence, source) pair: `lexical` (offline: the "
        "share of the sentence's content words, weighted by rarity, found in the source's excerpt), "
        "`judge` (asks the `openai` provider's model once per answer, or `cohere` or `mistral` when that "
        "is the provider; any failure falls back to `lexical`, and the record says so) or a support "
        "method class's dotted path (`answers.support.methods.SupportMethod`).",
    )  # fmt: skip
    SUPPORT_MIN = declare(
        "ANSWERS_SUPPORT_MIN", 0.5, NUMBER, area="support", checks=("answers.E016",),
        meaning="The support score, 0..1, at or above which a source counts as supporting a sentence: a "
        "cited source under it makes the sentence `unsupported`; a retrieved source at or over it grounds "
        "an uncited sentence. The default is measured (BENCHMARKS.md, \"Support check\").",
    )  # fmt: skip

    # --- Dense retrieval (answers/retrieval/embeddings.py)
    EMBEDDINGS = declare(
        "ANSWERS_EMBEDDINGS", "none", TEXT, area="embeddings", checks=("answers.E020",),
        meaning="`none` (lexical retrieval only) or `openai` (hybrid retrieval with an OpenAI-compatible "
        "`/v1/embeddings` server).",
    )  # fmt: skip
    EMBEDDINGS_BASE_URL = declare(
        "ANSWERS_EMBEDDINGS_BASE_URL", None, OPTIONAL_TEXT, area="embeddings", fallback=OPENAI_BASE_URL,
        shown_default="`OPENAI_BASE_URL`",
        meaning="Where the embeddings client connects.",
    )  # fmt: skip
    EMBEDDINGS_API_KEY = declare(
        "ANSWERS_EMBEDDINGS_API_KEY", None, OPTIONAL_TEXT, area="embeddings", fallback=OPENAI_API_KEY,
        shown_default="`OPENAI_API_KEY`",
        meaning="The embeddings server's key; never logged.",
    )  # fmt: skip
    EMBEDDING_MODEL = declare(
        "ANSWERS_EMBEDDING_MODEL", "", TEXT, area="embeddings", checks=("answers.E021",),
        shown_default="none",
        meaning="The embeddings model; required with `ANSWERS_EMBEDDINGS=openai`.",
    )  # fmt: skip
    EMBEDDING_DIMENSIONS = declare(
        "ANSWERS_EMBEDDING_DIMENSIONS", 0, WHOLE_NUMBER, area="embeddings", checks=("answers.E022",),
        shown_default="none",
        meaning="The model's vector size; required with `ANSWERS_EMBEDDINGS=openai`.",
    )  # fmt: skip
    EMBEDDINGS_TIMEOUT = declare(
        "ANSWERS_EMBEDDINGS_TIMEOUT", 5.0, NUMBER, area="embeddings", checks=("answers.E023",),
        meaning="Seconds a question's embedding may take, retries included, before retrieval goes "
        "lexical for it (the trace says why).",
    )  # fmt: skip
    PGVECTOR_INDEX = declare(
        "ANSWERS_PGVECTOR_INDEX", "hnsw", TEXT, area="embeddings", checks=("answers.E024",),
        meaning="On PostgreSQL: `hnsw` (an approximate HNSW cosine index per dimension) or `none` "
        "(an exact scan of every vector; a pgvector built for another CPU dies building HNSW).",
    )  # fmt: skip

    # --- Conversations (answers/conversations/)
    CONVERSATION_TURNS = declare(
        "ANSWERS_CONVERSATION_TURNS", 20, WHOLE_NUMBER, area="conversations", checks=("answers.E045",),
        meaning="The most answers (turns) one conversation holds; a follow-up past it is refused (`409`). "
        "1 or more (1: no follow-ups).",
    )  # fmt: skip
    CONVERSATION_HISTORY_CHARS = declare(
        "ANSWERS_CONVERSATION_HISTORY_CHARS", 6000, WHOLE_NUMBER, area="conversations",
        checks=("answers.E046",),
        meaning="The most characters of earlier turns (questions and answers, citation markers removed) "
        "a follow-up's prompt carries; the oldest turns are dropped first. 0 or more (0: none).",
    )  # fmt: skip

    # --- Operations: event retention (manage.py trim_events), metrics (answers/metrics.py)
    EVENT_RETENTION = declare(
        "ANSWERS_EVENT_RETENTION", 604800.0, NUMBER, area="operations", checks=("answers.E027",),
        shown_default="`604800` (7 days)",
        meaning="Seconds after an answer finishes before `manage.py trim_events` deletes its stored "
        "events (its events URL then replays `references` and `done` or `error` from the answer's "
        "record). 0 or more.",
    )  # fmt: skip
    METRICS_TOKEN = declare(
        "ANSWERS_METRICS_TOKEN", "", TEXT, area="operations", checks=("answers.E028",),
        shown_default="unset: `/metrics` is `404`",
        meaning="Turns on `GET /metrics` (Prometheus) for `Authorization: Bearer <this token>` only "
        "(`401` without it); printable ASCII without spaces, e.g. "
        "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`.",
    )  # fmt: skip
    PROMETHEUS_MULTIPROC_DIR = declare(
        "PROMETHEUS_MULTIPROC_DIR", "", TEXT, area="operations", checks=("answers.E029",),
        environment_only=True, shown_default="unset: each process reports its own",
        meaning="prometheus-client's multiprocess mode (it reads the environment itself, and so does the "
        "app): a directory, empty when the first process starts, where every server process of the "
        "machine keeps its metrics, so that any one's `/metrics` adds up all of them. Required with more "
        "than one process; a writable directory.",
    )  # fmt: skip

    @property
    def HEARTBEAT_INTERVAL(self) -> float:
        """How often an in-flight answer proves it is alive: well within STALE_AFTER."""
        return max(0.05, min(5.0, self.STALE_AFTER / 4))


def settings_table() -> tuple[Setting[Any], ...]:
    """Every row of the table, in its order (read from the class each time, as conf reads it)."""
    return tuple(value.setting for value in vars(AnswersSettings).values() if isinstance(value, Declared))


def environment_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The Django settings the environment gives, as written: {name: text}, for project/settings.py.

    The text is parsed when read (Setting.value), so a bad number is a system check's error with its
    id, not a crash while the settings load; an unset variable leaves the default to the table.
    """
    return {
        setting.name: environ[setting.env_name]
        for setting in settings_table()
        if not setting.environment_only and setting.env_name in environ
    }


conf = AnswersSettings()
