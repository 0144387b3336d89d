"""Every failure path ends in a persisted `failed` answer, an `error` event (SSE) and 502/504 (JSON).

The provider is the real openai client against the stub server; the database
fault is a real one: a trigger that refuses to store a finished answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from answers.citations.trail import compute_trail
from answers.conf import conf
from answers.models import Answer
from answers.pipeline import flow, lifecycle
from answers.sse.channels import channel_for
from answers.sse.publish import SSE
from answers.sse.storage import AnswerEventStorage
from tests.fixtures.answers import QUESTION
from tests.fixtures.db_faults import ALLOW_DONE, execute_for_vendor
from tests.fixtures.providers import Reply

pytestmark = pytest.mark.usefixtures("corpus", "openai_settings")


@dataclass(frozen=True)
class Fault:
    reply: Reply
    status: int  # on the JSON path
    kind: str
    raw_text: str  # what is kept
    database: bool = False  # the finished answer cannot be stored
    # The provider timeout: short only where the timeout is the fault; elsewhere room enough
    # that a busy CI machine does not turn another fault into a timeout.
    timeout_s: float = 10.0


FAULTS = {
    "provider-500": Fault(Reply(status=500), 502, "upstream", ""),
    "provider-503": Fault(Reply(status=503), 502, "upstream", ""),
    "provider-429": Fault(Reply(status=429, retry_after=0.1), 502, "upstream", ""),
    "timeout": Fault(Reply(pieces=["Slow [1]"], hang=3), 504, "timeout", "", timeout_s=1.0),
    "stream-cut": Fault(
        Reply(pieces=["Teacups [1] ", "are ", "never"], cut_after=2), 502, "upstream", "Teacups [1] are "
    ),
    "malformed-stream": Fault(
        Reply(pieces=["Fine [1] ", "then garbage"], malformed_at=1), 502, "bad_response", "Fine [1] "
    ),
    "error-in-stream": Fault(Reply(pieces=["Half [2] "], error_in_stream=True), 502, "upstream", "Half [2] "),
    # Half an emoji (a UTF-16 high surrogate) that no piece completes: not text, so not storable.
    "lone-surrogate": Fault(
        Reply(pieces=["Teacups [1] \ud83d", " and nothing after."]), 502, "bad_response", "Teacups [1] "
    ),
    "database-while-finalizing": Fault(
        Reply(pieces=["All [1] ", "of it [2]."]), 502, "storage", "All [1] of it [2].", database=True
    ),
}

_REFUSE = {
    "sqlite": [
        "CREATE TRIGGER refuse_done BEFORE UPDATE OF status ON answers_answer "
        "WHEN NEW.status = 'done' BEGIN SELECT RAISE(ABORT, 'disk full (simulated)'); END"
    ],
    "postgresql": [
        "CREATE FUNCTION refuse_done() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'disk full (simulated)'; END $$",
        "CREATE TRIGGER refuse_done BEFORE UPDATE ON answers_answer FOR EACH ROW "
        "WHEN (NEW.status = 'done') EXECUTE FUNCTION refuse_done()",
    ],
}


@pytest.fixture
def arrange(stub_openai, openai_settings) -> Iterator[object]:
    """Set a fault up (provider reply, a short timeout, the database trigger) and undo it afterwards."""
    armed: list[bool] = []

    def arm(fault: Fault) -> None:
        stub_openai.set_default(fault.reply)
        openai_settings.ANSWERS_PROVIDER_TIMEOUT = fault.timeout_s
        if fault.database:
            execute_for_vendor(_REFUSE)
            armed.append(True)

    yield arm
    if armed:
        execute_for_vendor(ALLOW_DONE)


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(FAULTS))
def test_a_fault_on_the_json_path_is_an_error_status_and_a_stored_failed_answer(client, arrange, name):
    fault = FAULTS[name]
    arrange(fault)

    response = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json")

    assert response.status_code == fault.status
    body = response.json()
    answer = Answer.objects.get(id=body["id"])
    assert answer.status == "failed"
    assert answer.error_kind == fault.kind
    assert answer.error_message == body["detail"]
    assert answer.raw_text == fault.raw_text
    assert answer.finished_at is not None
    assert answer.sources.count() == 4  # what was retrieved stays on record
    assert client.get(f"/api/answers/{answer.id}/").json()["status"] == "failed"


def stored_events(answer_id) -> list[tuple[str, dict]]:
    events = AnswerEventStorage().get_events(channel_for(answer_id), 0, limit=1000)
    return [(event.type, json.loads(event.data)) for event in events]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", list(FAULTS))
async def test_a_fault_on_the_sse_path_publishes_error_after_the_deltas_that_arrived(arrange, name):
    from asgiref.sync import sync_to_async

    fault = FAULTS[name]
    await sync_to_async(arrange)(fault)

    accepted = await flow.ask(question=QUESTION, asker_id=None, publisher=SSE)
    await lifecycle.wait_for_background()

    answer = await Answer.objects.aget(id=accepted.id)
    assert answer.status == "failed"
    assert answer.error_kind == fault.kind
    assert answer.raw_text == fault.raw_text
    events = await sync_to_async(stored_events)(answer.id)
    types = [kind for kind, _ in events]
    assert types[0] == "references"
    assert types[-1] == "error"
    assert set(types[1:-1]) <= {"delta", "cite"}
    assert "done" not in types
    assert events[-1][1] == {"detail": answer.error_message}
    # What a client saw streaming adds up to exactly what is stored, and its display to that text
    # as it reads once finalized: nothing stays held back.
    assert "".join(data["text"] for kind, data in events if kind == "delta") == answer.raw_text
    count = len(events[0][1]["references"])
    final = compute_trail(answer.raw_text, count, dialects=conf.MARKER_DIALECTS).final_text
    assert "".join(data["display"] for kind, data in events if kind == "delta") == final
