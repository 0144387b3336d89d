"""Who may read an answer, on every way in: one table over a real daphne server.

docs/api.md: an answer asked by a signed-in user is for that user and staff only; an
answer asked anonymously is for whoever holds its URL. The trail is for staff
(and QA reviewers). Token auth works for the whole API and the event streams;
the pages are for browsers (session) only, so a token there counts for nothing.

A refusal never tells a stranger anything about the answer: an anonymous client
is asked to sign in (403; 401 for a bad token), a signed-in stranger is told the
answer does not exist (404), and no refusal carries the question or the text.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer, manage, served
from tests.fixtures.providers import Reply, StubOpenAIServer

ANSWER_TEXT = "Zebras live in grassland [1]."

# How each caller authenticates: no credentials, a session cookie, an API token, or a bad token.
CALLERS = [
    "anonymous",
    "alice/session",
    "alice/token",
    "bob/session",
    "bob/token",
    "staff/session",
    "staff/token",
    "bad-token",
]

_SESSIONS = r"""
import json
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
keys = {}
for user in get_user_model().objects.filter(username__in=["alice", "bob", "staff"]):
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.create()
    keys[user.username] = store.session_key
print("SESSIONS=" + json.dumps(keys))
"""


@dataclass(frozen=True)
class World:
    live: LiveServer
    sessions: dict[str, str]
    answers: dict[str, str]  # "anonymous's" / "alice's" -> answer id

    def client(self, caller: str) -> httpx.Client:
        user, _, how = caller.partition("/")
        headers, cookies = {}, {}
        if how == "token":
            headers = self.live.auth(user)
        elif how == "session":
            cookies = {"sessionid": self.sessions[user]}
        elif caller == "bad-token":
            headers = {"Authorization": "Token not-a-real-token"}
        return httpx.Client(base_url=self.live.url, headers=headers, cookies=cookies, timeout=10)


@pytest.fixture(scope="module")
def world(stub: StubOpenAIServer) -> Iterator[World]:
    with served(stub) as live:
        out = manage(["shell", "-c", _SESSIONS], live.env)
        line = next(ln for ln in out.splitlines() if ln.startswith("SESSIONS="))
        sessions = json.loads(line.removeprefix("SESSIONS="))
        answers = {}
        with httpx.Client(base_url=live.url, timeout=20) as client:
            # On the streaming path, so each answer has events to read.
            for asker, headers in (("anonymous's", {}), ("alice's", live.auth("alice"))):
                stub.enqueue(Reply(pieces=[ANSWER_TEXT]))
                response = client.post(
                    "/api/answers/", json={"question": ZEBRA_QUESTION, "stream": True}, headers=headers
                )
                assert response.status_code == 202, response.text
                answers[asker] = response.json()["id"]
                _wait_until_done(client, answers[asker], headers)
        yield World(live=live, sessions=sessions, answers=answers)


def _wait_until_done(client: httpx.Client, answer_id: str, headers: dict[str, str]) -> None:
    deadline = time.monotonic() + 20
    while client.get(f"/api/answers/{answer_id}/", headers=headers).json()["status"] != "done":
        assert time.monotonic() < deadline, f"answer {answer_id} did not finish"
        time.sleep(0.05)


def url_of(endpoint: str, answer_id: str) -> str:
    return {
        "answer object": f"/api/answers/{answer_id}/",
        "trail": f"/api/answers/{answer_id}/trail/",
        "event stream": f"/answers/{answer_id}/events/?lastEventId=answer-{answer_id}:0",
        "permalink page": f"/answers/{answer_id}/",
    }[endpoint]


# The table: endpoint -> answer -> caller -> expected status.
EVERYONE = dict.fromkeys(CALLERS, 200)
PRIVATE = {
    "anonymous": 403,
    "alice/session": 200,
    "alice/token": 200,
    "bob/session": 404,
    "bob/token": 404,
    "staff/session": 200,
    "staff/token": 200,
}
STAFF_ONLY = {**dict.fromkeys(CALLERS, 403), "staff/session": 200, "staff/token": 200}
# Pages see session users only: a token header is ignored, as if anonymous.
PAGE_PRIVATE = {**dict.fromkeys(CALLERS, 404), "alice/session": 200, "staff/session": 200}

EXPECTED: dict[str, dict[str, dict[str, int]]] = {
    "answer object": {
        "anonymous's": {**EVERYONE, "bad-token": 403},
        # DRF answers a failed authentication with 403: the session scheme comes first, and it
        # has no WWW-Authenticate challenge to send with a 401.
        "alice's": {**PRIVATE, "bad-token": 403},
    },
    "trail": {"anonymous's": STAFF_ONLY, "alice's": STAFF_ONLY},
    "event stream": {
        "anonymous's": {**EVERYONE, "bad-token": 401},
        "alice's": {**PRIVATE, "bad-token": 401},
    },
    "permalink page": {"anonymous's": EVERYONE, "alice's": PAGE_PRIVATE},
}

CASES = [
    pytest.param(endpoint, answer, caller, status, id=f"{endpoint}-{answer}-{caller}-{status}")
    for endpoint, by_answer in EXPECTED.items()
    for answer, by_caller in by_answer.items()
    for caller, status in by_caller.items()
]


def test_the_table_covers_every_endpoint_answer_and_caller() -> None:
    assert len(CASES) == 4 * 2 * len(CALLERS)


@pytest.mark.parametrize(("endpoint", "answer", "caller", "expected"), CASES)
def test_read_rules(world: World, endpoint: str, answer: str, caller: str, expected: int) -> None:
    url = url_of(endpoint, world.answers[answer])
    with world.client(caller) as client, client.stream("GET", url) as response:
        status = response.status_code
        content_type = response.headers.get("content-type", "")
        if endpoint == "event stream" and status == 200:
            # An open stream: read up to the replayed `done`, then hang up.
            body = ""
            for line in response.iter_lines():
                body += line + "\n"
                if line.startswith("event: done"):
                    break
        else:
            body = response.read().decode()

    assert status == expected, body[:300]
    if status == 200:
        assert ZEBRA_QUESTION in body or endpoint == "event stream"
        assert "Zebras live in grassland" in body
    else:
        assert ZEBRA_QUESTION not in body
        assert "grassland" not in body
        if endpoint != "permalink page":
            assert content_type == "application/json"
            assert json.loads(body)["detail"]


@pytest.mark.parametrize("caller", ["anonymous", "bob/token", "bob/session", "staff/token"])
@pytest.mark.parametrize("endpoint", ["answer object", "event stream", "permalink page"])
def test_a_missing_answer_looks_like_an_answer_one_may_not_read(
    world: World, endpoint: str, caller: str
) -> None:
    """A signed-in stranger cannot tell alice's answer from no answer at all."""
    missing = "00000000-0000-4000-8000-000000000000"
    with world.client(caller) as client:
        status = client.get(url_of(endpoint, missing)).status_code
    assert status == 404
