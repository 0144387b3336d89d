"""answers.sse.grip without Pushpin: what an answer's events put on the GRIP channel (whole, or a
stand-in when some reader of the answer may not read a source the event names), and whom a
recovery is answered for. Through a real Pushpin: test_pushpin.py."""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
import pytest
from django.contrib.auth.models import Group, User
from django.test import RequestFactory, override_settings

from answers.content.storage import document_upsert
from answers.models import Answer, Document
from answers.sse import grip
from answers.sse.channels import channel_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str | None, str]]:
    """What reached the GRIP proxy: (content, id, prev-id) per publish."""
    sent: list[tuple[str, str | None, str]] = []

    def publish(channel: str, formats: Any, id: str | None = None, prev_id: str = "", **_: Any) -> None:
        assert channel.startswith("events-answer-")
        sent.append((formats.content, id, prev_id))

    monkeypatch.setattr("django_grip.publish", publish)
    monkeypatch.setattr(grip, "grip_publish", publish)
    return sent


def _answer(asker: User | None) -> Answer:
    return Answer.objects.create(
        question="Where do walruses haul out?",
        asker=asker,
        asked_signed_in=asker is not None,
        delivery=Answer.Delivery.SSE,
        provider="extractive",
        min_score=0.0,
        max_sources=5,
    )


def _cite(document: Document) -> str:
    reference = {"number": 1, "document_id": document.pk, "title": document.title, "url": "", "excerpt": "x"}
    return json.dumps({"number": 1, "original": 1, "reference": reference})


def _document(access: object = None) -> Document:
    return document_upsert(
        key="walrus", title="Walrus haul-out notes", body="Walruses haul out.", access=access
    )[0]


@override_settings(GRIP_URL="http://127.0.0.1:1?key=k")
def test_an_event_whose_sources_every_reader_may_read_is_published_whole(published):
    answer, document = _answer(None), _document()

    grip.publish(channel_for(answer.id), "cite", _cite(document), 5)
    grip.publish(channel_for(answer.id), "delta", json.dumps({"text": "Walruses"}), 6)

    assert [(prev, "Walrus haul-out notes" in content) for content, _, prev in published] == [
        ("4", True),
        ("5", False),
    ]


@override_settings(GRIP_URL="http://127.0.0.1:1?key=k")
def test_a_source_some_reader_may_not_read_leaves_only_a_stand_in_on_the_channel(published):
    member = User.objects.create_user("member")
    member.groups.add(Group.objects.create(name="Members"))
    document = _document(access=["Members"])

    # The member's own answer: its readers (the member, staff) may read it.
    grip.publish(channel_for(_answer(member).id), "cite", _cite(document), 3)
    # An anonymous asker's answer is anyone's to read: a members-only source is not.
    grip.publish(channel_for(_answer(None).id), "cite", _cite(document), 3)
    # The member left the group: their answer's source is no longer theirs to read.
    member.groups.clear()
    grip.publish(
        channel_for(_answer(member).id),
        "done",
        json.dumps({"references": [json.loads(_cite(document))["reference"]]}),
        9,
    )
    # A deleted document is withheld from all but staff and QA.
    document.delete()
    grip.publish(
        channel_for(_answer(member).id),
        "references",
        json.dumps({"references": [{"number": 1, "document_id": None}]}),
        1,
    )

    whole, *stand_ins = published
    assert whole[2] == "2"
    assert "Walrus haul-out notes" in whole[0]
    assert [(content, event_id, prev) for content, event_id, prev in stand_ins] == [
        (":\n\n", "3", grip.RECOVER),
        (":\n\n", "9", grip.RECOVER),
        (":\n\n", "1", grip.RECOVER),
    ]


def test_without_a_grip_proxy_nothing_is_published(published, settings):
    settings.GRIP_URL = ""
    grip.publish(channel_for(_answer(None).id), "cite", _cite(_document()), 2)
    assert published == []


def _recovery(answer: Answer, user: str) -> Any:
    """A recovery request as Pushpin sends it: no credentials, django-eventstream's signed `es-meta`."""
    from django.conf import settings

    meta = {"iss": "es", "exp": int(time.time()) + 60, "channels": [channel_for(answer.id)], "user": user}
    token = jwt.encode(meta, settings.SECRET_KEY.encode(), algorithm="HS256")
    request = RequestFactory().get(f"/answers/{answer.id}/events/", {"link": "next", "es-meta": token})
    return grip.grip_response(request, answer.id)


@override_settings(SECRET_KEY="a-signing-key-long-enough-for-hs256-0123456789")
def test_a_recovery_for_a_user_who_may_not_read_the_answer_is_refused():
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    answer = _answer(alice)

    refused = _recovery(answer, str(bob.pk))
    alice_id = str(alice.pk)
    alice.delete()
    gone = _recovery(answer, alice_id)

    for response in (refused, gone):
        assert response["Content-Type"] == "text/event-stream"
        assert "event: stream-error" in response.content.decode()
        assert '"condition": "forbidden"' in response.content.decode()
