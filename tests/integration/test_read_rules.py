"""Who may read an answer, on every way in: one table over a real daphne server.

The contract (docs/reference/access.md, "Who may read an answer"): an answer asked by a
signed-in user is for that user and staff only; an answer asked anonymously is for
whoever holds its URL; the trail is for the QA reviewers' permission. The same situation
gets the same status everywhere:

- a bad or unknown token (`Token` with no key, a key nobody holds), on the API, a stream
  or the page: `401` with `WWW-Authenticate: Token`, even beside a valid session;
- nobody signed in, or another signed-in user, for a signed-in user's answer: `404` from
  the answer object, its stream, its page and its feedback URL (existence is not revealed);
- staff without the QA reviewers' permission, for a trail: `403` from the API and from
  admin alike; a QA reviewer reads both.

Who asks is decided one way on every surface but admin (answers/auth.py): a token header,
whatever the case of its scheme, when sent; the session otherwise. Admin is for staff in
a browser: it reads the session only and sends everyone else to its login page.

Every row goes through every surface: the answer object, the event stream, the
permalink page, the trail, feedback (POST) and the admin answer page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import httpx
import pytest

from tests.fixtures.live_server import ZEBRA_QUESTION, LiveServer, manage
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.waiting import wait_until

ANSWER_TEXT = "Zebras live in grassland [1]."
TIMEOUT_S = 30

# A signed-in session for each of the live server's users (alice, bob, staff without any permission,
# reviewer in the QA reviewers group), made the way Django's login makes them.
_SESSIONS = r"""
import json
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
keys = {}
for user in get_user_model().objects.filter(username__in=["alice", "bob", "staff", "reviewer"]):
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.create()
    keys[user.username] = store.session_key
print("SESSIONS=" + json.dumps(keys))
"""


@dataclass(frozen=True)
class Caller:
    """How a client presents itself: a user's session cookie, an Authorization header, both or neither."""

    session: str | None = None
    authorization: str | None = None  # "{alice}" etc. stand for that user's token key


CALLERS: dict[str, Caller] = {
    "anonymous": Caller(),
    "alice/session": Caller(session="alice"),
    "alice/token": Caller(authorization="Token {alice}"),
    "alice/token, scheme in lowercase": Caller(authorization="token {alice}"),
    "bob/session": Caller(session="bob"),
    "bob/token": Caller(authorization="Token {bob}"),
    "staff/session": Caller(session="staff"),
    "staff/token": Caller(authorization="Token {staff}"),
    "reviewer/session": Caller(session="reviewer"),
    "reviewer/token": Caller(authorization="TOKEN {reviewer}"),
    "unknown token": Caller(authorization="Token not-a-real-token"),
    "bare Token": Caller(authorization="Token"),
    "alice/session + unknown token": Caller(session="alice", authorization="Token not-a-real-token"),
    "alice/session + bob/token": Caller(session="alice", authorization="Token {bob}"),
}


@dataclass(frozen=True)
class World:
    live: LiveServer
    sessions: dict[str, str]
    tokens: dict[str, str]
    answers: dict[str, str]  # "anonymous's" / "alice's" -> answer id

    def client(self, caller: str) -> httpx.Client:
        how = CALLERS[caller]
        headers = {}
        if how.authorization is not None:
            headers["Authorization"] = how.authorization.format(**self.tokens)
        cookies = {"sessionid": self.sessions[how.session]} if how.session else {}
        return httpx.Client(base_url=self.live.url, headers=headers, cookies=cookies, timeout=TIMEOUT_S)


@pytest.fixture(scope="module")
def world(stub_served: LiveServer, stub: StubOpenAIServer) -> World:
    """The module's live server, its sessions, and an answer each by an anonymous asker and alice."""
    live = stub_served
    out = manage(["shell", "-c", _SESSIONS], live.env)
    line = next(ln for ln in out.splitlines() if ln.startswith("SESSIONS="))
    sessions = json.loads(line.removeprefix("SESSIONS="))
    answers = {}
    with httpx.Client(base_url=live.url, timeout=TIMEOUT_S) as client:
        # On the streaming path, so each answer has events to read.
        for asker, headers in (("anonymous's", {}), ("alice's", live.auth("alice"))):
            stub.enqueue(Reply(pieces=[ANSWER_TEXT]))
            response = client.post(
                "/api/answers/", json={"question": ZEBRA_QUESTION, "stream": True}, headers=headers
            )
            assert response.status_code == 202, response.text
            answers[asker] = response.json()["id"]
            _wait_until_done(client, answers[asker], headers)
    return World(live=live, sessions=sessions, tokens=live.tokens, answers=answers)


def _wait_until_done(client: httpx.Client, answer_id: str, headers: dict[str, str]) -> None:
    wait_until(
        lambda: client.get(f"/api/answers/{answer_id}/", headers=headers).json()["status"] == "done",
        within=60,
        what=f"answer {answer_id} done",
    )


SURFACES = ("answer object", "event stream", "permalink page", "feedback", "trail", "admin page")


def url_of(surface: str, answer_id: str) -> str:
    return {
        "answer object": f"/api/answers/{answer_id}/",
        "event stream": f"/answers/{answer_id}/events/?lastEventId=answer-{answer_id}:0",
        "permalink page": f"/answers/{answer_id}/",
        "feedback": f"/api/answers/{answer_id}/feedback/",
        "trail": f"/api/answers/{answer_id}/trail/",
        "admin page": f"/admin/answers/answer/{answer_id}/change/",
    }[surface]


# The table. Reading an answer (its object, stream, page; feedback is `201` where reading is `200`):
# caller -> (status for anonymous's answer, status for alice's answer).
READ: dict[str, tuple[int, int]] = {
    "anonymous": (200, 404),
    "alice/session": (200, 200),
    "alice/token": (200, 200),
    "alice/token, scheme in lowercase": (200, 200),
    "bob/session": (200, 404),
    "bob/token": (200, 404),
    "staff/session": (200, 200),
    "staff/token": (200, 200),
    "reviewer/session": (200, 200),
    "reviewer/token": (200, 200),
    "unknown token": (401, 401),
    "bare Token": (401, 401),
    "alice/session + unknown token": (401, 401),
    "alice/session + bob/token": (200, 404),  # the token decides: bob
}
# The trail, through the API (the same for both answers).
TRAIL: dict[str, int] = {
    "anonymous": 401,
    "alice/session": 403,
    "alice/token": 403,
    "alice/token, scheme in lowercase": 403,
    "bob/session": 403,
    "bob/token": 403,
    "staff/session": 403,
    "staff/token": 403,
    "reviewer/session": 200,
    "reviewer/token": 200,
    "unknown token": 401,
    "bare Token": 401,
    "alice/session + unknown token": 401,
    "alice/session + bob/token": 403,
}
# The trail, through admin: sessions of staff only; everyone else goes to the login page (302).
ADMIN: dict[str, int] = {
    **dict.fromkeys(CALLERS, 302),
    "staff/session": 403,
    "reviewer/session": 200,
}


def expected(surface: str, answer: str, caller: str) -> int:
    if surface == "trail":
        return TRAIL[caller]
    if surface == "admin page":
        return ADMIN[caller]
    status = READ[caller][0 if answer == "anonymous's" else 1]
    return 201 if surface == "feedback" and status == 200 else status


CASES = [
    pytest.param(
        surface, answer, caller, expected(surface, answer, caller), id=f"{surface}-{answer}-{caller}"
    )
    for surface in SURFACES
    for answer in ("anonymous's", "alice's")
    for caller in CALLERS
]


def test_the_table_covers_every_caller_and_matches_the_contracts_rows() -> None:
    assert set(READ) == set(TRAIL) == set(ADMIN) == set(CALLERS)
    assert len(CASES) == len(SURFACES) * 2 * len(CALLERS)
    # Staff without the QA reviewers' permission: refused the trail by the API and admin alike;
    # a QA reviewer reads it from both.
    assert (TRAIL["staff/session"], ADMIN["staff/session"]) == (403, 403)
    assert (TRAIL["reviewer/session"], ADMIN["reviewer/session"]) == (200, 200)


@dataclass(frozen=True)
class Outcome:
    status: int
    content_type: str
    www_authenticate: str | None
    location: str
    body: str


def fetch(world: World, surface: str, answer_id: str, caller: str) -> Outcome:
    """One request as `caller` to `surface`; a stream that opens is read up to its replayed `done`."""
    url = url_of(surface, answer_id)
    with world.client(caller) as client:
        if surface == "feedback":
            # As the page's script sends it: the CSRF token from the cookie a page set, in the header.
            client.get("/").raise_for_status()
            request = client.build_request(
                "POST",
                url,
                json={"verdict": "helpful", "comment": f"from {caller}"},
                headers={"X-CSRFToken": client.cookies["csrftoken"]},
            )
        else:
            request = client.build_request("GET", url)
        response = client.send(request, stream=True)
        try:
            if surface == "event stream" and response.status_code == 200:
                body = ""
                for line in response.iter_lines():
                    body += line + "\n"
                    if line.startswith("event: done"):
                        break
            else:
                body = response.read().decode()
        finally:
            response.close()
    return Outcome(
        status=response.status_code,
        content_type=response.headers.get("content-type", ""),
        www_authenticate=response.headers.get("www-authenticate"),
        location=response.headers.get("location", ""),
        body=body,
    )


@pytest.mark.parametrize(("surface", "answer", "caller", "status"), CASES)
def test_read_rules(world: World, surface: str, answer: str, caller: str, status: int) -> None:
    got = fetch(world, surface, world.answers[answer], caller)

    assert got.status == status, got.body[:300]
    if status in (200, 201):
        if surface == "feedback":
            assert json.loads(got.body)["verdict"] == "helpful"
        else:
            assert "Zebras live in grassland" in got.body
            assert ZEBRA_QUESTION in got.body or surface == "event stream"
        return
    # A refusal tells nothing about the answer.
    assert ZEBRA_QUESTION not in got.body
    assert "grassland" not in got.body
    if status == 302:
        assert got.location.startswith("/admin/login/")
        return
    if status == 401:
        assert got.www_authenticate == "Token"
    if surface in ("answer object", "event stream", "feedback", "trail"):
        assert got.content_type == "application/json"
        assert json.loads(got.body)["detail"]


MISSING = "00000000-0000-4000-8000-000000000000"


@pytest.mark.parametrize("caller", ["anonymous", "bob/token", "bob/session", "alice/session + bob/token"])
@pytest.mark.parametrize("surface", ["answer object", "event stream", "permalink page", "feedback"])
def test_a_missing_answer_looks_like_an_answer_one_may_not_read(
    world: World, surface: str, caller: str
) -> None:
    """Nobody who may not read alice's answer can tell it from no answer at all."""
    alices = world.answers["alice's"]
    refused = fetch(world, surface, alices, caller)
    missing = fetch(world, surface, MISSING, caller)

    assert (missing.status, missing.content_type) == (404, refused.content_type)
    # The same words too (a debug page names the URL it was asked: the id is left out of the comparison).
    assert missing.body.replace(MISSING, "<id>") == refused.body.replace(alices, "<id>")


def _other_spellings(answer_id: str) -> dict[str, str]:
    return {
        "uppercase": answer_id.upper(),
        "without hyphens": answer_id.replace("-", ""),
        "in braces": "{" + answer_id + "}",
        "as a URN": "urn:uuid:" + answer_id,
    }


@pytest.mark.parametrize("spelling", ["uppercase", "without hyphens", "in braces", "as a URN"])
@pytest.mark.parametrize(
    ("surface", "caller"),
    [
        ("answer object", "reviewer/token"),
        ("event stream", "reviewer/token"),
        ("permalink page", "reviewer/token"),
        ("feedback", "reviewer/token"),
        ("trail", "reviewer/token"),
        ("admin page", "reviewer/session"),
        ("answer object", "unknown token"),
        ("event stream", "unknown token"),
        ("permalink page", "unknown token"),
    ],
)
def test_an_answer_id_is_accepted_in_one_form_everywhere(
    world: World, surface: str, caller: str, spelling: str
) -> None:
    """The id as the API writes it (lowercase, hyphenated) is the only spelling: any other is
    answered exactly as an unknown id is, on every surface (after the same 401 for a bad token)."""
    answer_id = world.answers["anonymous's"]
    other = fetch(world, surface, _other_spellings(answer_id)[spelling], caller)
    missing = fetch(world, surface, MISSING, caller)
    canonical = fetch(world, surface, answer_id, caller)

    assert canonical.status == (401 if caller == "unknown token" else 201 if surface == "feedback" else 200)
    assert (other.status, other.content_type, other.location) == (
        missing.status,
        missing.content_type,
        missing.location,
    )
    assert other.status in (404, 401) or (surface == "admin page" and other.status == 302)
    assert "grassland" not in other.body
