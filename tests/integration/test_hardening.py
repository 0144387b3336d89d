"""Issue 19's defects, found by probing the app as an attacker and as a clumsy client would.

Each test here failed before its fix: a leak, a bypass, a 500 or an HTML error page.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client

from answers.checks import check_settings
from answers.models import Answer, Document
from answers.pipeline import flow, lifecycle
from answers.sse.channels import channel_for
from answers.sse.publish import SSE
from answers.sse.storage import AnswerEventStorage
from tests.fixtures.answers import QUESTION
from tests.fixtures.api import ask, document_writer
from tests.fixtures.providers import Reply

ASK = "/api/answers/"
DOCUMENTS = "/api/documents/"


def stored_events(answer_id: Any) -> list[tuple[str, dict[str, Any]]]:
    events = AnswerEventStorage().get_events(channel_for(answer_id), 0, limit=1000)
    return [(event.type, json.loads(event.data)) for event in events]


# --- 1. Anonymous idempotency keys never let one client learn another's answer


@pytest.mark.django_db
@pytest.mark.usefixtures("corpus", "openai_settings")
@pytest.mark.parametrize("second", [{"question": "Something else about teacups?"}, {}], ids=["other", "same"])
def test_another_anonymous_client_reusing_a_key_never_learns_the_first_answer(stub_openai, second):
    first_client, second_client = Client(), Client()
    first = ask(first_client, key="1")
    assert first.status_code == 201
    secret_id = first.json()["id"]

    other = ask(second_client, key="1", **second)

    # The other client's key is its own: a new answer of its own, never the first one.
    assert other.status_code == 201
    assert other.json()["id"] != secret_id
    assert secret_id not in other.content.decode()
    assert not other.has_header("Idempotent-Replayed")
    assert Answer.objects.count() == 2


@pytest.mark.django_db
@pytest.mark.usefixtures("corpus", "openai_settings")
def test_a_made_up_session_cookie_shared_by_two_clients_does_not_share_their_keys(stub_openai):
    first_client, second_client = Client(), Client()
    for client in (first_client, second_client):
        client.cookies["sessionid"] = "made-up-session-key-shared-by-both"
    first = ask(first_client, key="1")

    other = ask(second_client, key="1", question="Something else about teacups?")

    assert other.status_code == 201
    assert other.json()["id"] != first.json()["id"]


@pytest.mark.django_db
@pytest.mark.usefixtures("corpus", "openai_settings")
def test_an_anonymous_client_keeping_its_session_still_gets_its_retry_replayed(stub_openai):
    client = Client()
    first = ask(client, key="retry-me")
    retry = ask(client, key="retry-me")
    reused = ask(client, key="retry-me", question="Something else about teacups?")

    assert retry.status_code == 201
    assert retry["Idempotent-Replayed"] == "true"
    assert retry.json()["id"] == first.json()["id"]
    assert reused.status_code == 422
    assert reused.json()["id"] == first.json()["id"]  # its own answer: it could read it already
    assert Answer.objects.count() == 1
    assert len(stub_openai.requests) == 1


# --- 2. X-Forwarded-For does not bypass the anonymous rate limit


@pytest.mark.django_db
@pytest.mark.usefixtures("corpus", "openai_settings")
def test_a_new_forwarded_for_address_per_request_does_not_reset_the_anonymous_limit(
    stub_openai, openai_settings
):
    openai_settings.ANSWERS_ANON_RATE = "2/min"
    statuses = [
        ask(Client(HTTP_X_FORWARDED_FOR=f"203.0.113.{i}"), question=f"{QUESTION} {i}").status_code
        for i in range(4)
    ]

    assert statuses == [201, 201, 429, 429]
    assert len(stub_openai.requests) == 2


@pytest.mark.django_db
@pytest.mark.usefixtures("corpus", "openai_settings")
def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_limit(stub_openai, openai_settings):
    openai_settings.ANSWERS_ANON_RATE = "1/min"
    openai_settings.ANSWERS_TRUSTED_PROXIES = ["127.0.0.0/8"]

    def from_client(address: str, chain: str = "") -> int:
        forwarded = f"{chain}{address}"
        return ask(Client(HTTP_X_FORWARDED_FOR=forwarded, REMOTE_ADDR="127.0.0.1")).status_code

    assert from_client("203.0.113.7") == 201
    assert from_client("203.0.113.8") == 201
    # The proxy appends the address it saw: whatever the client wrote before it is not believed.
    assert from_client("203.0.113.7", chain="198.51.100.99, ") == 429
    # A request not from the trusted proxy is limited by its own address.
    untrusted = ask(Client(HTTP_X_FORWARDED_FOR="203.0.113.9", REMOTE_ADDR="192.0.2.1"))
    assert untrusted.status_code == 201
    again = ask(Client(HTTP_X_FORWARDED_FOR="203.0.113.10", REMOTE_ADDR="192.0.2.1"))
    assert again.status_code == 429


def test_a_trusted_proxy_that_is_no_address_fails_the_system_check(settings):
    settings.ANSWERS_TRUSTED_PROXIES = ["10.0.0.0/8", "proxy.internal"]

    errors = check_settings()

    assert [(e.id, "proxy.internal" in e.msg) for e in errors] == [("answers.E025", True)]


def test_an_admin_sign_in_limit_that_locks_nothing_fails_the_system_check(settings):
    settings.AXES_FAILURE_LIMIT = 0

    assert [e.id for e in check_settings()] == ["answers.E026"]


# --- 3. A surrogate pair split across two streamed pieces


@pytest.mark.django_db
@pytest.mark.usefixtures("corpus", "openai_settings")
def test_an_emoji_split_across_two_pieces_is_reassembled_on_the_json_path(client, stub_openai):
    stub_openai.set_default(Reply(pieces=["Teacups [1] \ud83d", "\ude00 indeed."]))

    response = ask(client)

    assert response.status_code == 201, response.content
    assert response.json()["text"] == "Teacups [1] \U0001f600 indeed."
    assert Answer.objects.get().raw_text == "Teacups [1] \U0001f600 indeed."


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("corpus", "openai_settings")
async def test_an_emoji_split_across_two_pieces_is_reassembled_on_the_sse_path(stub_openai):
    stub_openai.set_default(Reply(pieces=["Teacups [1] \ud83d", "\ude00 indeed."]))

    accepted = await flow.ask(question=QUESTION, asker_id=None, publisher=SSE)
    await lifecycle.wait_for_background()

    answer = await Answer.objects.aget(id=accepted.id)
    assert answer.status == "done"
    events = await sync_to_async(stored_events)(answer.id)
    assert [kind for kind, _ in events][-1] == "done"
    assert "".join(data["text"] for kind, data in events if kind == "delta") == answer.raw_text
    assert events[-1][1]["text"] == "Teacups [1] \U0001f600 indeed."


# (A lone surrogate that nothing completes is a fault like any other: tests/integration/test_faults.py.)


# --- 4. A surrogate in a document's metadata


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"metadata": {"tag": "\ud83d"}}, "metadata"),
        ({"metadata": {"\ude00": "value"}}, "metadata"),
        ({"metadata": {"nested": [{"deep": "ok \udfff"}]}}, "metadata"),
        ({"title": "Tea \ud83d"}, "title"),
        ({"body": "Tea is a drink \ude00."}, "body"),
    ],
    ids=["metadata-value", "metadata-key", "metadata-nested", "title", "body"],
)
def test_a_lone_surrogate_in_a_document_is_400_naming_the_field_and_stores_nothing(change, field):
    payload = {"key": "https://example.com/tea", "title": "Tea", "body": "Tea is a drink.", **change}

    # As a client writes it: json.dumps escapes the surrogate (`"\\ud83d"`), as JSON allows.
    response = document_writer().post(DOCUMENTS, json.dumps(payload), content_type="application/json")

    assert response.status_code == 400
    assert field in response.json()
    assert not Document.objects.exists()


# --- 5. Deeply nested JSON


@pytest.mark.django_db
@pytest.mark.parametrize("url", [ASK, DOCUMENTS])
def test_deeply_nested_json_is_a_clear_400(url):
    deep = '{"question": ' + "[" * 1000 + "]" * 1000 + "}"
    assert len(deep) < 2048

    response = document_writer().post(url, deep, content_type="application/json")

    assert response.status_code == 400
    assert "nested" in response.json()["detail"]
    assert not Answer.objects.exists()
    assert not Document.objects.exists()


# --- 6. Bad stream-resume parameters


@pytest.fixture
def finished_answer(answer_factory):
    return answer_factory()


@pytest.mark.django_db
@pytest.mark.parametrize("last_id", ["abc", "1.5", "1e309", ""])
@pytest.mark.parametrize("where", ["query", "header"])
def test_a_malformed_last_event_id_is_a_clear_400(client, finished_answer, last_id, where):
    url = f"/answers/{finished_answer.id}/events/"
    value = f"answer-{finished_answer.id}:{last_id}"
    if where == "query":
        response = client.get(url, {"lastEventId": value})
    else:
        response = client.get(url, headers={"Last-Event-ID": value})

    assert response.status_code == 400
    assert "Last-Event-ID" in response.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize("query", [{"es-meta": "xxxx"}, {"recover": "true"}])
def test_proxy_only_resume_parameters_from_a_client_are_a_clear_400(client, finished_answer, query):
    response = client.get(f"/answers/{finished_answer.id}/events/", query)

    assert response.status_code == 400
    assert "detail" in response.json()


# --- 7. JSON errors under /api/ even for requests Django refuses itself (DEBUG off)


@pytest.mark.django_db
def test_a_body_over_the_size_limit_is_a_json_400_under_api(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = json.dumps({"question": "x" * 2000})

    response = Client().post(ASK, body, content_type="application/json")

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/answers/", "/api/documents/1/", "/api/nowhere"])
def test_a_disallowed_host_is_a_json_400_under_api(path):
    response = Client(HTTP_HOST="evil.example").get(path)

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json()["detail"]


@pytest.mark.django_db
def test_a_disallowed_host_elsewhere_is_still_the_html_page():
    response = Client(HTTP_HOST="evil.example").get("/")

    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")


# --- clumsy clients


@pytest.mark.django_db
@pytest.mark.usefixtures("corpus", "openai_settings")
def test_posting_without_the_trailing_slash_is_a_json_404_not_a_redirect(client, stub_openai):
    response = client.post("/api/answers", {"question": QUESTION}, content_type="application/json")

    assert response.status_code == 404
    assert response.json()["detail"]
    assert not Answer.objects.exists()


@pytest.mark.django_db
def test_getting_without_the_trailing_slash_still_redirects(client):
    response = client.get("/api/schema")
    assert response.status_code == 301
    assert response["Location"] == "/api/schema/"


@pytest.mark.django_db
@pytest.mark.usefixtures("corpus", "openai_settings")
def test_the_page_429_says_when_to_retry(client, openai_settings):
    openai_settings.ANSWERS_ANON_RATE = "1/min"
    client.post("/ask/", {"question": QUESTION})

    response = client.post("/ask/", {"question": QUESTION})

    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 60


BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


@pytest.mark.django_db
@pytest.mark.parametrize("control", list(BIDI_CONTROLS), ids=[f"U+{ord(c):04X}" for c in BIDI_CONTROLS])
def test_a_document_url_with_a_bidi_control_is_refused_like_javascript(control):
    payload = {
        "key": "https://example.com/tea",
        "title": "Tea",
        "body": "Tea is a drink.",
        "url": f"https://example.com/{control}gpj.exe",
    }

    response = document_writer().post(DOCUMENTS, payload, format="json")

    assert response.status_code == 201
    assert response.json()["url"] == ""  # stored without a link, as javascript: is
    assert "url" in response.json()["warnings"]
    assert Document.objects.get().url == ""


@pytest.mark.django_db
def test_admin_sign_in_is_locked_for_an_address_after_too_many_failures(settings):
    settings.AXES_FAILURE_LIMIT = 3
    User.objects.create_superuser("boss", password="the-right-password-42")

    def sign_in(password: str, address: str = "198.51.100.1") -> Any:
        client = Client(REMOTE_ADDR=address)
        return client.post("/admin/login/?next=/admin/", {"username": "boss", "password": password})

    failures = [sign_in(f"guess-{i}").status_code for i in range(3)]
    assert failures[:2] == [200, 200]  # the form again, with its error; the third reaches the limit
    locked = sign_in("the-right-password-42")
    elsewhere = sign_in("the-right-password-42", address="198.51.100.2")

    assert locked.status_code == 429
    assert "_auth_user_id" not in locked.wsgi_request.session
    assert elsewhere.status_code == 302  # signed in: the lockout is that address's only
    assert elsewhere["Location"] == "/admin/"
