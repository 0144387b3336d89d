"""Django settings: every value comes from the environment (docs/reference/settings.md).

Safe development defaults exist only when DEBUG is on; with DEBUG off the
secret key must be given, or the app refuses to start.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from answers.conf import environment_settings

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

# --- The answers app: every setting it reads, its environment variable and default are declared once,
# in answers/conf.py (the settings reference is generated from it). The environment's text is passed on
# as written: the app parses it when read, and a value it cannot read fails that setting's system check
# (answers/checks.py) with its id.
_answers_environment = environment_settings(os.environ)
globals().update(_answers_environment)

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
    # No DEFAULT_THROTTLE_RATES: the app's throttles read ANSWERS_ANON_RATE and ANSWERS_USER_RATE (conf).
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
# REDIS_URL (answers/conf.py) carries events between processes; django-eventstream wants it in parts.
if _answers_environment.get("REDIS_URL", "").strip():
    from urllib.parse import urlparse

    _redis = urlparse(_answers_environment["REDIS_URL"])
    EVENTSTREAM_REDIS = {
        "host": _redis.hostname or "127.0.0.1",
        "port": _redis.port or 6379,
        "db": int((_redis.path or "/0").lstrip("/") or 0),
    }
    if _redis.password:
        EVENTSTREAM_REDIS["password"] = _redis.password

# --- Pushpin (GRIP) in front of the event streams (docs/pushpin.md). GRIP_URL (answers/conf.py)
# is Pushpin's publish endpoint, e.g. http://127.0.0.1:5561?key=<sig_key>&verify-iss=pushpin
# (with the key, only requests Pushpin signed count as proxied). Streams through Pushpin
# hold nothing here: Django answers with the stored events and a hold instruction.
if _answers_environment.get("GRIP_URL", "").strip():
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
