"""Fuzz the JSON API from its own OpenAPI schema (schemathesis): no 500s, every response as documented.

Runs against a real daphne server with production settings (DEBUG off) and the
offline extractive provider, bounded and repeatable: Hypothesis derandomized (the
suite's "ci" profile), a fixed number of examples per operation, throttles out of
the way. Once as an anonymous client and once as an administrator with a token,
so the document endpoints are exercised past their permission checks too.
"""

from __future__ import annotations

import json
from collections import Counter

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import Case, GenerationMode
from schemathesis.schemas import BaseSchema
from schemathesis.specs.openapi.checks import ignored_auth, positive_data_acceptance

from tests.fixtures.live_server import LiveServer, manage

EXAMPLES_PER_OPERATION = 30

_ADMIN = r"""
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
user = get_user_model().objects.create_superuser("fuzz-admin", password="a-long-test-password-2")
print("ADMIN_TOKEN=" + Token.objects.create(user=user).key)
"""


@pytest.fixture(scope="module")
def live_settings() -> dict[str, str]:
    # Production settings, and the offline provider (the module's stub is never called).
    return {
        "DEBUG": "false",
        "SECURE_SSL_REDIRECT": "false",  # plain http on loopback
        "ANSWERS_PROVIDER": "extractive",
    }


@pytest.fixture(scope="module")
def fuzz_server(stub_served: LiveServer) -> tuple[LiveServer, str]:
    """The module's live server and an administrator's API token on it."""
    out = manage(["shell", "-c", _ADMIN], stub_served.env)
    token = next(ln for ln in out.splitlines() if ln.startswith("ADMIN_TOKEN=")).removeprefix("ADMIN_TOKEN=")
    return stub_served, token


@pytest.fixture(scope="module")
def api_schema(fuzz_server: tuple[LiveServer, str]) -> BaseSchema:
    live, _ = fuzz_server
    return schemathesis.openapi.from_url(f"{live.url}/api/schema/", timeout=10)


FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def fuzz(schema: BaseSchema, mode: GenerationMode, headers: dict[str, str]) -> dict[str, str]:
    """Every operation's failures (the first example that failed, shrunk), by operation label.

    Driven through Hypothesis directly: schemathesis's own pytest plugin cannot
    load a schema from a fixture under this pytest version.
    """
    failures: dict[str, str] = {}
    calls: Counter[str] = Counter()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.label for op in operations} >= {"POST /api/answers/", "GET /api/answers/{answer_id}/"}
    for operation in operations:

        @FUZZ_SETTINGS
        @given(case=operation.as_strategy(generation_mode=mode))
        def check(case: Case) -> None:
            calls[case.operation.label] += 1
            # With our token sent by hand, schemathesis takes the cookie it generated for the
            # session scheme as the credentials, and a success with them as ignored auth.
            excluded = [ignored_auth] if "Authorization" in headers else []
            if "Idempotency-Key" in (case.headers or {}):
                # Examples share generated keys across different bodies: a valid request is then
                # rightly refused (422, key reused). Status and body are still checked.
                excluded.append(positive_data_acceptance)
            case.call_and_validate(headers=headers, excluded_checks=excluded, timeout=20)

        try:
            check()
        except (Exception, BaseExceptionGroup) as exc:  # collected, reported together below
            failures[operation.label] = str(exc)[:3000]
    # Really fuzzed: each operation got many requests (fewer only if Hypothesis ran out of cases).
    assert all(calls[op.label] >= 10 for op in operations if op.label not in failures), calls
    return failures


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=lambda m: m.value)
@pytest.mark.parametrize("who", ["anonymous", "administrator"])
def test_every_operation_answers_as_its_schema_says(
    api_schema: BaseSchema, fuzz_server: tuple[LiveServer, str], who: str, mode: GenerationMode
) -> None:
    _, token = fuzz_server
    headers = {"Authorization": f"Token {token}"} if who == "administrator" else {}
    failures = fuzz(api_schema, mode, headers)
    assert not failures, "\n\n".join(f"{label}:\n{detail}" for label, detail in failures.items())


def test_the_schema_is_served_as_openapi_3(fuzz_server: tuple[LiveServer, str]) -> None:
    live, _ = fuzz_server
    response = httpx.get(f"{live.url}/api/schema/?format=json", timeout=10)
    assert json.loads(response.text)["openapi"].startswith("3.")


@pytest.mark.parametrize(
    "path", ["/api/documents/not-a-number/", "/api/answers/a/b/c/", "/api/no-such-thing/"]
)
def test_an_unknown_api_url_is_a_json_404(fuzz_server: tuple[LiveServer, str], path: str) -> None:
    live, _ = fuzz_server
    response = httpx.get(f"{live.url}{path}", timeout=10)
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}
    page = httpx.get(f"{live.url}/no-such-page/", timeout=10)
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")


def test_asking_takes_json_only(fuzz_server: tuple[LiveServer, str]) -> None:
    live, _ = fuzz_server
    response = httpx.post(
        f"{live.url}/api/answers/", data={"question": "Zebras?", "stream": "true"}, timeout=10
    )
    assert response.status_code == 415
    assert "application/x-www-form-urlencoded" in response.json()["detail"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_real_answer_and_its_trail_match_the_schema(
    api_schema: BaseSchema, fuzz_server: tuple[LiveServer, str], stream: bool
) -> None:
    """Random ids only ever find nothing; a real answer shows the documented 2xx bodies."""
    live, token = fuzz_server
    admin = {"Authorization": f"Token {token}"}
    with httpx.Client(base_url=live.url, timeout=20) as client:
        asked = client.post("/api/answers/", json={"question": "Where do zebras live?", "stream": stream})
        api_schema["/api/answers/"]["POST"].validate_response(asked)
        answer_id = asked.json()["id"]
        answer = client.get(f"/api/answers/{answer_id}/")
        trail = client.get(f"/api/answers/{answer_id}/trail/", headers=admin)

    assert asked.status_code == (202 if stream else 201)
    assert answer.status_code == trail.status_code == 200
    api_schema["/api/answers/{answer_id}/"]["GET"].validate_response(answer)
    api_schema["/api/answers/{answer_id}/trail/"]["GET"].validate_response(trail)
    if not stream:
        assert answer.json()["references"], "the zebra documents are cited"
