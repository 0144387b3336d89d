"""Django settings: every value comes from the environment (see README.md).

Safe development defaults exist only when DEBUG is on; with DEBUG off the
secret key must be given, or the app refuses to start.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false/1/0), got {raw!r}.")


def env_number(name: str, default: float, cast: type[int] | type[float] = float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return cast(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}.") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set the SECRET_KEY environment variable "
            "(for local development you may set DEBUG=true instead, which uses "
            "an insecure development key)."
        )
    SECRET_KEY = "django-insecure-development-only-key-never-use-in-production"  # noqa: S105

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    # daphne first: its runserver serves the ASGI app, which SSE needs.
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "adrf",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "django_eventstream",
    "axes",
    "import_export",  # the QA admin's CSV/XLSX/JSON exports (answers/admin/exports.py)
    "answers",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # The answers.middleware ones run their hooks on the event loop (no thread trip) when
    # they cannot touch the database (answers/middleware.py).
    "answers.middleware.AsyncCSPMiddleware",
    "answers.middleware.AsyncWhiteNoiseMiddleware",
    "answers.middleware.AsyncSessionMiddleware",
    "answers.middleware.AsyncCommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "answers.middleware.AsyncAuthenticationMiddleware",
    "answers.middleware.AsyncMessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last: turns a locked-out sign-in (django-axes, below) into its 429.
    "axes.middleware.AxesMiddleware",
]

# Sign-in attempts (the admin's login form, the only one) are limited by django-axes: after
# AXES_FAILURE_LIMIT failed attempts from one client address (answers.api.throttles.client_address:
# ANSWERS_TRUSTED_PROXIES applies), that address may not sign in for AXES_COOLOFF_TIME, even with
# the right password (429). A success resets its count. Staff see and clear the attempts in admin
# (Axes > Access attempts) or with `manage.py axes_reset`.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(env_number("ADMIN_LOGIN_FAILURE_LIMIT", 10, int))
AXES_COOLOFF_TIME = timedelta(minutes=env_number("ADMIN_LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = ["ip_address"]
AXES_CLIENT_IP_CALLABLE = "answers.api.throttles.client_address"
AXES_RESET_ON_SUCCESS = True
AXES_DISABLE_ACCESS_LOG = True  # failed attempts are what matter; no row per successful sign-in
AXES_HTTP_RESPONSE_CODE = 429

ROOT_URLCONF = "project.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

ASGI_APPLICATION = "project.asgi.application"
WSGI_APPLICATION = "project.wsgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        # Not persistent: every open SSE stream runs in a thread of its own, and a
        # persistent connection per stream would cap a process at max_connections
        # (tests/integration/test_sse_connections.py).
        conn_max_age=0,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Concurrent readers (SSE streams) and a writer (the pipeline) share the file.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"}
    )
# PostgreSQL: a connection pool per process (Django's psycopg_pool support). Pipeline
# steps and stream reads give their connection back after each piece of work; from a
# pool that costs nothing, where a new connection per step costs a connect and a cold
# backend. DATABASE_POOL_SIZE caps this process's sessions (0: no pool); a thread that
# finds them all busy waits up to DATABASE_POOL_TIMEOUT seconds.
DATABASE_POOL_SIZE = int(env_number("DATABASE_POOL_SIZE", 20, int))
DATABASE_POOL_TIMEOUT = env_number("DATABASE_POOL_TIMEOUT", 30.0)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and DATABASE_POOL_SIZE > 0:
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True  # the pool checks a connection before lending it
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(2, DATABASE_POOL_SIZE),
        "max_size": DATABASE_POOL_SIZE,
        "timeout": DATABASE_POOL_TIMEOUT,
    }
_test_db_name = os.environ.get("TEST_DATABASE_NAME")
if _test_db_name:
    DATABASES["default"]["TEST"] = {"NAME": _test_db_name}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
# WhiteNoise serves static files under any ASGI server; finders make
# `collectstatic` optional (run it in production for compressed, cached files).
WHITENOISE_USE_FINDERS = True

LOGIN_URL = "admin:login"

if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_CONTENT_TYPE_NOSNIFF = True

# --- HTTPS. With DEBUG off the defaults pass `manage.py check --deploy`
# (tests/integration/test_security_settings.py).
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
# Load balancers probe over plain http.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = int(env_number("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, int))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
# Preloading is a commitment browsers keep for months, so it is opt-in (hence W021 is silenced while off).
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
# Only behind a proxy that sets this header on every request (and strips it from clients):
# e.g. HTTP_X_FORWARDED_PROTO (the value meaning https is "https", or given after a comma).
_proxy_ssl_header = env_list("SECURE_PROXY_SSL_HEADER", [])
if _proxy_ssl_header:
    if not _proxy_ssl_header[0].startswith("HTTP_") or len(_proxy_ssl_header) > 2:
        raise ImproperlyConfigured(
            "SECURE_PROXY_SSL_HEADER must be a request header as Django names it, e.g. "
            f"HTTP_X_FORWARDED_PROTO (optionally ',https'), got {os.environ['SECURE_PROXY_SSL_HEADER']!r}."
        )
    SECURE_PROXY_SSL_HEADER = (_proxy_ssl_header[0], (_proxy_ssl_header[1:] or ["https"])[0])

# One policy on every response (pages, admin, API docs): only the site's own scripts and
# styles, so markup that slipped into a page stays inert (no inline script, no handlers).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# --- The answers app (read through answers/conf.py; validated by answers/checks.py).
ANSWERS_PROVIDER = os.environ.get("ANSWERS_PROVIDER", "extractive")
ANSWERS_MODEL = os.environ.get("ANSWERS_MODEL", "")
ANSWERS_MAX_SOURCES = int(env_number("ANSWERS_MAX_SOURCES", 5, int))
# A score (0..1) is at most the rarity-weighted share of the question a passage covers
# (answers/retrieval/rerank.py). Unset, the app's default applies: answers.conf.MIN_SCORE_DEFAULT,
# chosen from the labeled set (bench/RESULTS_relevance.md). Below it nothing is retrieved.
if os.environ.get("ANSWERS_MIN_SCORE", "").strip():
    ANSWERS_MIN_SCORE = env_number("ANSWERS_MIN_SCORE", 0.0)
ANSWERS_RERANKER = os.environ.get("ANSWERS_RERANKER", "lexical")
# When no retrieved source reaches ANSWERS_MIN_SCORE: "decline" (the provider is not called; the
# answer is ANSWERS_DECLINE_TEXT, marked declined) or "answer" (the provider is called anyway).
ANSWERS_NO_SOURCES = os.environ.get("ANSWERS_NO_SOURCES", "decline")
ANSWERS_DECLINE_TEXT = os.environ.get("ANSWERS_DECLINE_TEXT", "The documents here don't cover this question.")
# Marker dialects repaired before strip and finalize (docs/citations.md, normalize_markers):
# "all", "none" or dialect names, comma-separated.
ANSWERS_MARKER_DIALECTS = os.environ.get("ANSWERS_MARKER_DIALECTS", "all")
ANSWERS_PROVIDER_TIMEOUT = env_number("ANSWERS_PROVIDER_TIMEOUT", 60.0)
# Output bounds (README, "Production"): the token limit sent to the provider, and the most
# characters kept from it (past them the answer is cut and marked truncated).
ANSWERS_MAX_TOKENS = int(env_number("ANSWERS_MAX_TOKENS", 2048, int))
ANSWERS_MAX_ANSWER_CHARS = int(env_number("ANSWERS_MAX_ANSWER_CHARS", 100_000, int))
ANSWERS_EXTRACTIVE_DELAY_MS = env_number("ANSWERS_EXTRACTIVE_DELAY_MS", 0.0)
ANSWERS_ANON_RATE = os.environ.get("ANSWERS_ANON_RATE", "30/min")
ANSWERS_USER_RATE = os.environ.get("ANSWERS_USER_RATE", "120/min")
# The reverse proxies (addresses or CIDR networks) whose X-Forwarded-For names the client, for the
# anonymous rate limit; none by default: the limit is per connecting address (answers/api/throttles.py).
ANSWERS_TRUSTED_PROXIES = env_list("ANSWERS_TRUSTED_PROXIES", [])
# Reliability: heartbeats, the reaper, graceful shutdown (README "Production").
ANSWERS_STALE_AFTER = env_number("ANSWERS_STALE_AFTER", 60.0)
ANSWERS_SHUTDOWN_GRACE = env_number("ANSWERS_SHUTDOWN_GRACE", 10.0)
# Event streams share this many database connections per process (answers/sse/stream.py).
ANSWERS_STREAM_DB_WORKERS = int(env_number("ANSWERS_STREAM_DB_WORKERS", 4, int))
# Pipeline steps that use the database at once, per process (answers/pipeline/).
ANSWERS_PIPELINE_DB_WORKERS = int(env_number("ANSWERS_PIPELINE_DB_WORKERS", 8, int))
# Threads one process's requests share for their synchronous parts (middleware hooks, database
# work): a request waiting for something (a provider, its turn) holds none (answers/handler.py).
ANSWERS_REQUEST_THREADS = int(env_number("ANSWERS_REQUEST_THREADS", 16, int))
# The most answers one process generates at once; past it a new ask is refused (503, Retry-After).
# Unset, the app's default applies: answers.conf.MAX_GENERATING_DEFAULT (bench/RESULTS_capacity.md).
if os.environ.get("ANSWERS_MAX_GENERATING", "").strip():
    ANSWERS_MAX_GENERATING = int(env_number("ANSWERS_MAX_GENERATING", 0, int))
# The support check (answers/support/): "lexical" (offline) or "judge" (asks the openai model, or the
# cohere or mistral one when that is ANSWERS_PROVIDER).
# 0.5 is the highest bar that flags no clear supported pair of bench/support_labeled.jsonl
# (paraphrases score from 0.51) and flags 29 of 30 unrelated ones (BENCHMARKS.md, "Support check").
ANSWERS_SUPPORT_METHOD = os.environ.get("ANSWERS_SUPPORT_METHOD", "lexical")
ANSWERS_SUPPORT_MIN = env_number("ANSWERS_SUPPORT_MIN", 0.5)
ANSWERS_OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
ANSWERS_OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
ANSWERS_ANTHROPIC_BASE_URL = os.environ.get("ANTHROPIC_BASE_URL", "")
ANSWERS_ANTHROPIC_API_KEY = os.environ.get("ANTHROPIC_API_KEY", "")
ANSWERS_COHERE_BASE_URL = os.environ.get("COHERE_BASE_URL", "")
ANSWERS_COHERE_API_KEY = os.environ.get("COHERE_API_KEY", "")
ANSWERS_MISTRAL_BASE_URL = os.environ.get("MISTRAL_BASE_URL", "")
ANSWERS_MISTRAL_API_KEY = os.environ.get("MISTRAL_API_KEY", "")
# Dense + lexical retrieval (answers/retrieval/embeddings.py; README "Dense retrieval").
ANSWERS_EMBEDDINGS = os.environ.get("ANSWERS_EMBEDDINGS", "none")
ANSWERS_EMBEDDINGS_BASE_URL = os.environ.get("ANSWERS_EMBEDDINGS_BASE_URL") or ANSWERS_OPENAI_BASE_URL
ANSWERS_EMBEDDINGS_API_KEY = os.environ.get("ANSWERS_EMBEDDINGS_API_KEY") or ANSWERS_OPENAI_API_KEY
ANSWERS_EMBEDDING_MODEL = os.environ.get("ANSWERS_EMBEDDING_MODEL", "")
ANSWERS_EMBEDDING_DIMENSIONS = int(env_number("ANSWERS_EMBEDDING_DIMENSIONS", 0, int))
ANSWERS_EMBEDDINGS_TIMEOUT = env_number("ANSWERS_EMBEDDINGS_TIMEOUT", 5.0)
# "hnsw" (approximate, fast) or "none" (exact scan): a pgvector built for another CPU dies building it.
ANSWERS_PGVECTOR_INDEX = os.environ.get("ANSWERS_PGVECTOR_INDEX", "hnsw")
# Seconds after an answer finishes before `manage.py trim_events` deletes its stored events (7 days).
ANSWERS_EVENT_RETENTION = env_number("ANSWERS_EVENT_RETENTION", 604800.0)
# Conversations (answers/conversations/): the most turns in one, and the characters of earlier turns a
# follow-up's prompt carries (oldest dropped first).
ANSWERS_CONVERSATION_TURNS = int(env_number("ANSWERS_CONVERSATION_TURNS", 20, int))
ANSWERS_CONVERSATION_HISTORY_CHARS = int(env_number("ANSWERS_CONVERSATION_HISTORY_CHARS", 6000, int))
# GET /metrics (answers/metrics.py) answers only `Authorization: Bearer <this>`; unset: 404.
ANSWERS_METRICS_TOKEN = os.environ.get("ANSWERS_METRICS_TOKEN", "")

REST_FRAMEWORK = {
    # The token first: when a request carries `Authorization: Token ...` it decides who asks (a bad
    # one is a 401 with `WWW-Authenticate: Token`, whatever the session); the session otherwise.
    # The event streams and the answer pages run the same list (answers/auth.py).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_RATES": {"ask_anon": ANSWERS_ANON_RATE, "ask_user": ANSWERS_USER_RATE},
    "EXCEPTION_HANDLER": "answers.api.exceptions.exception_handler",
    # DRF's JSON parser, but deeply nested JSON is a 400 (not a RecursionError's 500).
    "DEFAULT_PARSER_CLASSES": ["answers.api.parsers.JSONParser"],
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Cited answers API",
    "DESCRIPTION": "Answers over the site's content with numbered citations.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No badge from the public validator: it would leak the schema URL and break the CSP.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    # Two models have a `status`: name their enums rather than let a hash decide.
    "ENUM_NAME_OVERRIDES": {
        "AnswerStatusEnum": "answers.models.Answer.Status",
        "AnswerSourceStatusEnum": "answers.models.AnswerSource.Status",
        "FeedbackVerdictEnum": "answers.models.FeedbackVerdict",
    },
}

# --- Server-sent events (django-eventstream): stored events allow replay.
EVENTSTREAM_STORAGE_CLASS = "answers.sse.storage.AnswerEventStorage"
EVENTSTREAM_CHANNELMANAGER_CLASS = "answers.sse.channels.AnswerChannelManager"
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    from urllib.parse import urlparse

    _redis = urlparse(REDIS_URL)
    EVENTSTREAM_REDIS = {
        "host": _redis.hostname or "127.0.0.1",
        "port": _redis.port or 6379,
        "db": int((_redis.path or "/0").lstrip("/") or 0),
    }
    if _redis.password:
        EVENTSTREAM_REDIS["password"] = _redis.password

# --- Pushpin (GRIP) in front of the event streams (docs/pushpin.md). GRIP_URL is
# Pushpin's publish endpoint, e.g. http://127.0.0.1:5561?key=<sig_key>&verify-iss=pushpin
# (with the key, only requests Pushpin signed count as proxied). Streams through Pushpin
# hold nothing here: Django answers with the stored events and a hold instruction.
GRIP_URL = os.environ.get("GRIP_URL", "")
if GRIP_URL:
    # Early, as django_grip asks: it marks proxied requests and writes the Grip-* headers.
    MIDDLEWARE.insert(0, "answers.middleware.AsyncGripMiddleware")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # The openai/httpx clients log request details at DEBUG; never the key.
        "httpx": {"level": "WARNING"},
        # django-axes announces itself at INFO on every start; failures and lockouts are WARNING.
        "axes": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "openai": {"level": "WARNING"},
        # django-eventstream logs "added listener <id>" at INFO for every stream opened: noise at scale.
        "django_eventstream": {"level": "WARNING"},
        # `runserver` (daphne's) logs each request line here; Django's own "django" logger would
        # print it a second time under DEBUG before it reaches the root handler.
        "django.channels.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}
