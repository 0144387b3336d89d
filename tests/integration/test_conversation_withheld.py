"""A conversation after its sources' access tightened (docs/reference/access.md, "Redaction"):
every surface that shows a source withholds it alike (the conversation API as the answer API, `answer.md`),
and a follow-up's prompts carry no turn that cited it but as its question alone.

The three scripted turns (tests/fixtures/conversations.py): turn 1 cites the nonlocal statement's
document, turn 2 the global statement's and the nonlocal one's, turn 3 the global one's. Then the
nonlocal document is re-ingested for staff only.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from answers.content.storage import document_upsert
from answers.models import Answer
from tests.fixtures.api import ask
from tests.fixtures.conversations import (
    CLOSURES,
    GLOBAL,
    NONLOCAL,
    SCOPE_DOCUMENTS,
    TURNS,
    history_of,
    openai_script,
    three_turns_json,
)
from tests.fixtures.providers import Reply, StubOpenAIServer

pytestmark = pytest.mark.django_db

NONLOCAL_DOCUMENT = next(d for d in SCOPE_DOCUMENTS if d.title == NONLOCAL)
# Words only the nonlocal document's title, URL and excerpt hold.
NONLOCAL_WORDS = (NONLOCAL, NONLOCAL_DOCUMENT.url, "nearest enclosing function scope")
WITHHELD = {"number": 1, "withheld": True}


def _nonlocal_for_staff_only() -> None:
    """The nonlocal document re-ingested (as a site would) for staff only."""
    document_upsert(
        key=NONLOCAL_DOCUMENT.key,
        title=NONLOCAL_DOCUMENT.title,
        url=NONLOCAL_DOCUMENT.url,
        body=NONLOCAL_DOCUMENT.body,
        access="staff",
    )


@pytest.fixture
def tightened(client: Client, scope_documents, openai_settings, stub_openai: StubOpenAIServer):
    """The three turns asked anonymously (the `client`'s session owns the conversation), then the
    nonlocal document made staff-only: the three answers' bodies as asked."""
    stub_openai.enqueue(*openai_script())
    bodies = three_turns_json(client)
    assert [r["title"] for r in bodies[1]["references"]] == [GLOBAL, NONLOCAL]
    _nonlocal_for_staff_only()
    return bodies


def _said(value: Any) -> str:
    return json.dumps(value)


def test_the_conversation_api_withholds_what_the_answer_api_withholds(client: Client, tightened) -> None:
    conversation = client.get(f"/api/conversations/{tightened[0]['conversation']}/").json()

    turns = conversation["answers"]
    for turn in turns:
        alone = client.get(f"/api/answers/{turn['id']}/").json()
        assert turn["references"] == alone["references"]
        assert turn["quotes"] == alone["quotes"]
    assert turns[0]["references"] == [WITHHELD]
    assert turns[1]["references"][0]["title"] == GLOBAL
    assert turns[1]["references"][1] == {"number": 2, "withheld": True}
    for words in NONLOCAL_WORDS:
        assert words not in _said([turn["references"] for turn in turns])
    # The reader's own answer's text stays theirs (docs/reference/access.md): only the sources are withheld.
    assert turns[0]["text"] == tightened[0]["text"]
    # Staff see every source whole.
    staff = Client()
    staff.force_login(User.objects.create_user("staff", is_staff=True))
    whole = staff.get(f"/api/conversations/{tightened[0]['conversation']}/").json()
    assert whole["answers"][0]["references"][0]["title"] == NONLOCAL


def test_answer_md_lists_a_withheld_source_by_its_number_only(client: Client, tightened) -> None:
    first = client.get(f"/answers/{tightened[0]['id']}/answer.md").content.decode()
    second = client.get(f"/answers/{tightened[1]['id']}/answer.md").content.decode()

    assert "1. This source is no longer available to you." in first
    assert "2. This source is no longer available to you." in second
    assert f"1. [{GLOBAL}](https://docs.example/global)" in second
    for words in NONLOCAL_WORDS:
        assert words not in first
        assert words not in second


def test_a_follow_up_carries_a_turn_citing_a_withheld_source_as_its_question_alone(
    client: Client, tightened, stub_openai: StubOpenAIServer
) -> None:
    stub_openai.enqueue(
        Reply(pieces=["What is a closure?"]), Reply(pieces=["A closure keeps enclosing variables [1]."])
    )
    asked = len(stub_openai.requests)

    fourth = ask(client, "And closures?", conversation=tightened[0]["conversation"])

    assert fourth.status_code == 201, fourth.content
    assert fourth.json()["references"][0]["title"] == CLOSURES
    rewrite, answer = stub_openai.requests[asked:]
    rewrite_text = _said(rewrite["messages"])
    answer_text = _said(answer["messages"])
    # Turns 1 and 2 cited the withheld document: their questions go, their answers do not.
    for turn in TURNS:
        assert turn.question.replace('"', '\\"') in rewrite_text
        assert turn.question in answer_text
    for turn in TURNS[:2]:
        assert turn.sentence not in rewrite_text
        assert turn.sentence not in answer_text
    # Turn 3 cited only what the asker still reads: it goes whole.
    assert TURNS[2].sentence in rewrite_text
    assert history_of(answer) == [f"{TURNS[2].sentence}."]
    assert Answer.objects.get(id=fourth.json()["id"]).history["sent"] == [1, 2, 3]


def test_an_idempotent_replay_withholds_too(
    client: Client, scope_documents, openai_settings, stub_openai: StubOpenAIServer
) -> None:
    stub_openai.enqueue(*openai_script(TURNS[:1]))
    first = ask(client, TURNS[0].question, key="replayed-key")
    assert first.json()["references"][0]["title"] == NONLOCAL
    _nonlocal_for_staff_only()

    replayed = ask(client, TURNS[0].question, key="replayed-key")

    assert replayed["Idempotent-Replayed"] == "true"
    assert replayed.json()["references"] == [WITHHELD]
