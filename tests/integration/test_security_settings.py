"""Production settings pass Django's deploy checks; http is redirected to https, except the health probe."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client, override_settings

ROOT = Path(__file__).resolve().parents[2]

# What a production deployment sets; everything else is left to the settings' defaults.
PRODUCTION_ENV = {
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "answers.example.org",
}
SECURITY_SETTINGS = [
    "DEBUG",
    "SECURE_SSL_REDIRECT",
    "SECURE_REDIRECT_EXEMPT",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SECURE_PROXY_SSL_HEADER",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
]


def _env(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment without any setting under test (pytest-env turns the redirect off)."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SECURE_", "PYTEST_", "SESSION_", "CSRF_"))
        and k not in {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL"}
    }
    return {**kept, "DJANGO_SETTINGS_MODULE": "project.settings", **extra}


def run(args: list[str], extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=_env(extra_env), capture_output=True, text=True, check=False
    )


def production_settings(**env: str) -> dict[str, Any]:
    """The security settings as project/settings.py computes them from `env` in a fresh process."""
    script = (
        "import json, project.settings as s; "
        f"print(json.dumps({{n: getattr(s, n, None) for n in {SECURITY_SETTINGS!r}}}))"
    )
    result = run(["-c", script], {**PRODUCTION_ENV, **env})
    assert result.returncode == 0, result.stderr
    values: dict[str, Any] = json.loads(result.stdout)
    if values["SECURE_PROXY_SSL_HEADER"] is not None:
        values["SECURE_PROXY_SSL_HEADER"] = tuple(values["SECURE_PROXY_SSL_HEADER"])
    else:
        del values["SECURE_PROXY_SSL_HEADER"]
    del values["DEBUG"]
    return values


# --- manage.py check --deploy


def test_production_settings_pass_the_deployment_checks_without_a_warning():
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
    assert "WARNING" not in result.stderr


@pytest.mark.parametrize(
    ("env", "warning"),
    [
        ({"SECURE_SSL_REDIRECT": "false"}, "security.W008"),
        ({"SECURE_HSTS_SECONDS": "0"}, "security.W004"),
        # W010 (the sessions app): Django's W011 names only its own SessionMiddleware, and
        # ours is answers.middleware.AsyncSessionMiddleware.
        ({"SESSION_COOKIE_SECURE": "false"}, "security.W010"),
        ({"SECRET_KEY": "short"}, "security.W009"),
        ({"DEBUG": "true"}, "security.W018"),
    ],
)
def test_turning_a_protection_off_fails_the_deployment_checks(env, warning):
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], {**PRODUCTION_ENV, **env})
    assert result.returncode != 0
    assert warning in result.stderr


def test_production_defaults():
    assert production_settings() == {
        "SECURE_SSL_REDIRECT": True,
        "SECURE_REDIRECT_EXEMPT": ["^healthz$"],
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": False,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
    }


def test_development_defaults_do_not_redirect_or_pin_https():
    values = production_settings(DEBUG="true")
    assert values["SECURE_SSL_REDIRECT"] is False
    assert values["SECURE_HSTS_SECONDS"] == 0


def test_proxy_header_and_hsts_come_from_the_environment():
    values = production_settings(
        SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO",
        SECURE_HSTS_SECONDS="600",
        SECURE_HSTS_INCLUDE_SUBDOMAINS="false",
        SECURE_HSTS_PRELOAD="true",
    )
    assert values["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")
    assert values["SECURE_HSTS_SECONDS"] == 600
    assert values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is False
    assert values["SECURE_HSTS_PRELOAD"] is True
    assert production_settings(SECURE_PROXY_SSL_HEADER="HTTP_X_SCHEME,on")["SECURE_PROXY_SSL_HEADER"] == (
        "HTTP_X_SCHEME",
        "on",
    )


def test_a_proxy_header_not_named_as_django_names_it_is_refused():
    result = run(
        ["-c", "import project.settings"], {**PRODUCTION_ENV, "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto"}
    )
    assert result.returncode != 0
    assert "SECURE_PROXY_SSL_HEADER must be a request header" in result.stderr


# --- what a client sees (the settings computed above, served in-process)


@pytest.fixture
def behind_proxy() -> Client:
    values = production_settings(SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO")
    with override_settings(**values):
        yield Client()  # built under the settings: SecurityMiddleware reads them once


@pytest.fixture
def without_proxy_header() -> Client:
    with override_settings(**production_settings()):
        yield Client()


@pytest.mark.django_db
def test_plain_http_is_redirected_to_https(behind_proxy: Client):
    response = behind_proxy.get("/answers/00000000-0000-4000-8000-000000000000/?x=1")
    assert response.status_code == 301
    assert response["Location"] == "https://testserver/answers/00000000-0000-4000-8000-000000000000/?x=1"
    assert behind_proxy.get("/api/answers/", HTTP_X_FORWARDED_PROTO="http").status_code == 301


@pytest.mark.django_db
def test_the_health_probe_answers_over_plain_http(behind_proxy: Client):
    response = behind_proxy.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_https_reported_by_the_proxy_is_served_with_hsts(behind_proxy: Client):
    response = behind_proxy.get("/", HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 200
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    assert "Content-Security-Policy" in response
    assert response.cookies["csrftoken"]["secure"] is True


@pytest.mark.django_db
def test_a_forwarded_proto_header_is_not_trusted_unless_configured(without_proxy_header: Client):
    response = without_proxy_header.get("/", HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 301
    assert "Strict-Transport-Security" not in response
