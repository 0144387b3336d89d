"""`Idempotency-Key` on POST /api/answers/: a retried request gets the first attempt's answer."""

from __future__ import annotations

import asyncio

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from django.test import AsyncClient

from answers.models import Answer
from tests.fixtures.answers import QUESTION
from tests.fixtures.api import ask
from tests.fixtures.providers import Reply

pytestmark = pytest.mark.usefixtures("corpus", "openai_settings")

URL = "/api/answers/"


@pytest.mark.django_db
def test_a_retried_json_request_gets_the_same_answer_without_generating_again(client, stub_openai):
    stub_openai.set_default(Reply(pieces=["Carpentry [2] with teacups [1]."]))

    first = ask(client, key="order-7")
    retry = ask(client, key="order-7")

    assert first.status_code == retry.status_code == 201
    assert retry.json() == first.json()
    assert retry["Idempotent-Replayed"] == "true"
    assert not first.has_header("Idempotent-Replayed")
    assert Answer.objects.count() == 1
    assert len(stub_openai.requests) == 1


# Transactional: the stream's generation runs as a background task in a fresh context, so its
# database work (the answer's status, django-eventstream's EventCounter row for the answer's
# channel) goes through another connection. Inside the test's open transaction that connection
# waited on the rows the request had written uncommitted, while the request's event loop waited
# for the task: a timeout on PostgreSQL under load. Committed as they go, the rows block nothing,
# and the request's loop finishes the task before the response returns.
@pytest.mark.django_db(transaction=True)
def test_a_retried_stream_request_gets_the_same_answer_and_stream(client, stub_openai):
    first = ask(client, key="k-stream", stream=True)
    retry = ask(client, key="k-stream", stream=True)

    assert first.status_code == retry.status_code == 202
    assert retry.json()["id"] == first.json()["id"]
    assert retry.json()["events_url"] == first.json()["events_url"]
    assert Answer.objects.count() == 1


@pytest.mark.django_db
def test_a_failed_first_attempt_is_replayed_as_the_same_failure(client, stub_openai):
    stub_openai.set_default(Reply(status=500))

    first = ask(client, key="k-fail")
    retry = ask(client, key="k-fail")

    assert first.status_code == retry.status_code == 502
    assert retry.json() == first.json()
    assert retry["Idempotent-Replayed"] == "true"
    assert Answer.objects.count() == 1


@pytest.mark.django_db
def test_requests_without_a_key_or_with_different_keys_are_separate_answers(client, stub_openai):
    ask(client)
    ask(client)
    ask(client, key="a")
    ask(client, key="b")

    assert Answer.objects.count() == 4


@pytest.mark.django_db
@pytest.mark.parametrize(
    "second",
    [{"question": "Something else entirely about teacups?"}, {"stream": True}],
    ids=["other-question", "other-delivery"],
)
def test_reusing_a_key_for_a_different_request_is_422_and_generates_nothing(client, stub_openai, second):
    first = ask(client, key="k-reused")

    reused = ask(client, key="k-reused", **second)

    assert reused.status_code == 422
    assert "Idempotency-Key" in reused.json()["detail"]
    assert reused.json()["id"] == first.json()["id"]
    assert Answer.objects.count() == 1


@pytest.mark.django_db
def test_keys_are_scoped_to_the_asker(client, stub_openai):
    alice = User.objects.create_user("alice", password="pw-alice-123456")
    bob = User.objects.create_user("bob", password="pw-bob-1234567")

    client.force_login(alice)
    as_alice = ask(client, key="same-key")
    client.force_login(bob)
    as_bob = ask(client, key="same-key")
    client.logout()
    anonymous = ask(client, key="same-key")

    ids = {as_alice.json()["id"], as_bob.json()["id"], anonymous.json()["id"]}
    assert len(ids) == 3  # nobody receives another user's answer through a shared key
    assert Answer.objects.get(id=as_bob.json()["id"]).asker == bob


@pytest.mark.django_db
@pytest.mark.parametrize(
    "key", ["", "x" * 256, "tab\there", "caf\u00e9"], ids=["empty", "too-long", "control", "non-ascii"]
)
def test_a_malformed_key_is_400_naming_the_header(client, stub_openai, key):
    response = ask(client, key=key)

    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()
    assert Answer.objects.count() == 0


@pytest.mark.django_db(transaction=True)
async def test_concurrent_retries_generate_once_and_all_get_the_same_answer(stub_openai):
    stub_openai.set_default(Reply(pieces=["Slowly [1] ", "and surely [2]."], delay_s=0.2))
    client = AsyncClient()
    # An anonymous client's keys are its session's: this one holds a session (as a browser, or
    # a client that kept the cookie of an earlier request, does).
    session = SessionStore()
    await session.acreate()
    client.cookies[settings.SESSION_COOKIE_NAME] = session.session_key

    responses = await asyncio.gather(
        *[
            client.post(
                URL,
                {"question": QUESTION},
                content_type="application/json",
                headers={"Idempotency-Key": "burst"},
            )
            for _ in range(3)
        ]
    )

    assert [r.status_code for r in responses] == [201, 201, 201]
    assert len({r.json()["id"] for r in responses}) == 1
    assert {r.json()["text"] for r in responses} == {"Slowly [1] and surely [2]."}
    assert await Answer.objects.acount() == 1
    assert len(stub_openai.requests) == 1
