"""The example site's settings: a plain Django project that adds the answers app (docs/howto/install.md)."""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent

SECRET_KEY = os.environ.get("SECRET_KEY", "insecure-example-site-key-for-tests-only")
DEBUG = False
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]

INSTALLED_APPS = [
    "daphne",  # first: runserver then serves ASGI, which the answers' event streams need
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
    "django_eventstream",
    "import_export",
    "answers",
    "tests.example_site.articles",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "tests.example_site.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'example.sqlite3'}", conn_max_age=0
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # As the demo project (and Django's advice for concurrent use): readers beside one writer.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
if os.environ.get("TEST_DATABASE_NAME"):
    DATABASES["default"]["TEST"] = {"NAME": os.environ["TEST_DATABASE_NAME"] + "_example"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"

# The answers app's settings (docs/reference/settings.md lists them all; the defaults serve here).
ANSWERS_PROVIDER = "extractive"
ANSWERS_MIN_SCORE = 0.05
ANSWERS_MAX_SOURCES = 5
ANSWERS_ANON_RATE = "10000/min"
ANSWERS_USER_RATE = "10000/min"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_RATES": {"ask_anon": ANSWERS_ANON_RATE, "ask_user": ANSWERS_USER_RATE},
    "EXCEPTION_HANDLER": "answers.api.exceptions.exception_handler",
    "DEFAULT_PARSER_CLASSES": ["answers.api.parsers.JSONParser"],
}
EVENTSTREAM_STORAGE_CLASS = "answers.sse.storage.AnswerEventStorage"
EVENTSTREAM_CHANNELMANAGER_CLASS = "answers.sse.channels.AnswerChannelManager"
