"""SIGTERM to a real daphne: answers in flight finish within the grace period or are failed, never left.

The server runs as in production (`daphne project.asgi:application`); after it
exits, its database is read with `manage.py shell` to see what it left behind, and
its log says which way the stop went. No test measures how long the stop took: the
path is proven by what was stored and logged (a grace far longer than any wait here
was not waited out; an answer cut by the grace fails as `shutdown`, where the
provider's timeout would have failed it as `timeout`).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.live_server import LiveServer, corpus, manage, running_server
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.sse_client import ask, client_for, read_stream
from tests.fixtures.waiting import await_until, wait_until

QUESTION = "What do zebras eat on the grass?"

_REPORT = r"""
import json
from answers.sse.channels import channel_for
from answers.sse.storage import AnswerEventStorage
from answers.models import Answer
out = []
for a in Answer.objects.order_by("created_at"):
    events = AnswerEventStorage().get_events(channel_for(a.id), 0, limit=1000)
    out.append({"id": str(a.id), "delivery": a.delivery, "status": a.status, "kind": a.error_kind,
                "raw": a.raw_text, "events": [[e.type, json.loads(e.data)] for e in events]})
print("REPORT=" + json.dumps(out))
"""


def _exited(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in {"Z", "X"}


def stop_server(pid: int, within: float = 60) -> None:
    """SIGTERM, then wait for the process to exit (`within` only bounds the wait)."""
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: _exited(pid), within=within, what="the server to exit after SIGTERM")


def report(env: dict[str, str]) -> dict[str, dict]:
    out = manage(["shell", "-c", _REPORT], env)
    line = next(ln for ln in out.splitlines() if ln.startswith("REPORT="))
    return {a["delivery"]: a for a in json.loads(line.removeprefix("REPORT="))}


async def _ask_and_wait_for_first_delta(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=20) as client:
        accepted = (await client.post("/api/answers/", json={"question": QUESTION, "stream": True})).json()
        async with client.stream("GET", accepted["events_url"]) as response:
            async for line in response.aiter_lines():
                if line == "event: delta":
                    return


async def _json_ask_in_flight(url: str) -> httpx.Response:
    """A JSON ask still waiting for its answer when the server is told to stop."""
    async with httpx.AsyncClient(base_url=url, timeout=20) as client:
        return await client.post("/api/answers/", json={"question": QUESTION})


@pytest.fixture
def stub(stub_openai: StubOpenAIServer) -> StubOpenAIServer:
    """A fresh stub for each test: each starts (and stops) a server of its own."""
    return stub_openai


def test_sigterm_lets_an_answer_in_flight_finish_within_the_grace_period(stub: StubOpenAIServer) -> None:
    stub.set_default(Reply(pieces=["Zebras ", "graze ", "on grass ", "[1]."], delay_s=0.3))
    # An hour's grace: the server exits once the answer is done, not when the grace ends
    # (stop_server's bound is a minute).
    env = {"ANSWERS_SHUTDOWN_GRACE": "3600", "LOG_LEVEL": "INFO"}
    with running_server(openai_base_url=stub.base_url, documents=corpus(), extra_env=env) as live:
        asyncio.run(_ask_and_wait_for_first_delta(live.url))

        stop_server(live.pid)
        left = report(live.env)
        log = live.log_tail(100_000)

    answer = left["sse"]
    assert answer["status"] == "done", log
    assert answer["raw"] == "Zebras graze on grass [1]."
    assert [kind for kind, _ in answer["events"]][-1] == "done"
    assert "shutdown: waiting up to 3600.0 s for 1 answer(s) in flight" in log
    assert "did not finish in time" not in log


def test_sigterm_fails_what_cannot_finish_in_time_and_publishes_error(stub: StubOpenAIServer) -> None:
    stub.set_default(Reply(pieces=["Zebras [1] ", "never finish"], hang_after=1, hang=60))
    with running_server(
        openai_base_url=stub.base_url, documents=corpus(), extra_env={"ANSWERS_SHUTDOWN_GRACE": "1"}
    ) as live:

        async def both_in_flight() -> asyncio.Task[httpx.Response]:
            json_ask = asyncio.create_task(_json_ask_in_flight(live.url))
            await _ask_and_wait_for_first_delta(live.url)
            await await_until(
                lambda: len(stub.requests) >= 2, within=20, what="the JSON ask to reach the provider too"
            )
            return json_ask

        async def scenario() -> httpx.Response:
            json_ask = await both_in_flight()
            await asyncio.to_thread(stop_server, live.pid)
            return await json_ask

        json_response = asyncio.run(scenario())
        left = report(live.env)
        log = live.log_tail(100_000)

    # The provider hangs for a minute and times out after 20 s: `shutdown`, not `timeout`, says the
    # grace period cut both answers.
    for delivery in ("sse", "json"):
        answer = left[delivery]
        assert answer["status"] == "failed", (delivery, log)
        assert answer["kind"] == "shutdown"
        assert answer["raw"] == "Zebras [1] "
    assert "shutdown: 2 answer(s) did not finish in time and were marked failed" in log
    stopped = next(line for line in log.splitlines() if "server stop: answers failed:" in line)
    assert {left["sse"]["id"], left["json"]["id"]} <= set(stopped.replace(",", " ").split())
    events = left["sse"]["events"]
    # The marker waits for what follows its blank; at the shutdown it is released, with its cite,
    # before `error`.
    assert [kind for kind, _ in events] == ["references", "delta", "cite", "delta", "error"]
    assert events[1][1] == {"text": "Zebras [1] ", "display": "Zebras"}
    assert (events[2][1]["number"], events[2][1]["original"]) == (1, 1)
    assert events[3][1] == {"text": "", "display": " [1] "}
    assert "stopped" in events[-1][1]["detail"]
    # The JSON ask is answered, not cut: 503 with the id of the answer stored as failed.
    assert json_response.status_code == 503, json_response.text
    assert json_response.json()["id"] == left["json"]["id"]
    assert "stopped" in json_response.json()["detail"]


GRACE_S = 8  # the window in which the test asks the stopping server (it is not waited out otherwise)
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@dataclass
class Listener:
    """One event stream of an answer, read until its last event or until the server closes it."""

    events: list[str] = field(default_factory=list)
    closed_by: str = ""  # how the connection ended without `done`/`error`, if it did
    in_flight: asyncio.Event = field(default_factory=asyncio.Event)  # a delta arrived

    async def follow(self, client: httpx.AsyncClient, url: str) -> None:
        try:
            await read_stream(client, url, on_event=self.saw, limit_s=120)
        except (httpx.HTTPError, AssertionError) as exc:
            self.closed_by = f"{type(exc).__name__}: {exc}"
        if not self.closed_by and self.events[-1:] not in (["error"], ["done"]):
            self.closed_by = "a bare close"

    def saw(self, event: Any) -> None:
        self.events.append(event.type)
        if event.type == "delta":
            self.in_flight.set()


async def _stopping(live: LiveServer) -> None:
    """SIGTERM, then wait for the stop to begin: its log line, not a request racing it (daphne drops
    a request still being read when the signal comes, with no response, until it exits)."""
    os.kill(live.pid, signal.SIGTERM)
    await await_until(
        lambda: "shutdown: waiting up to" in live.log_tail(100_000),
        within=GRACE_S,
        what="the server to say it is stopping",
    )


async def _asks_while_stopping(client: httpx.AsyncClient, csrf: str) -> list[httpx.Response]:
    """A JSON ask, an SSE ask and the no-JavaScript form, sent once the stop has begun."""
    return list(
        await asyncio.gather(
            client.post("/api/answers/", json={"question": QUESTION}),
            client.post("/api/answers/", json={"question": QUESTION, "stream": True}),
            client.post("/ask/", data={"question": QUESTION, "csrfmiddlewaretoken": csrf}),
        )
    )


@pytest.fixture(params=["one process", "redis"])
def fanout_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """Events reach listeners in this process directly, or through Redis (a round trip more between
    publishing the `error` and a stream seeing it)."""
    if request.param == "redis":
        return {"REDIS_URL": request.getfixturevalue("redis_url")}
    return {}


def test_sigterm_refuses_new_asks_fails_every_accepted_one_and_tells_every_listener(
    stub: StubOpenAIServer, fanout_env: dict[str, str]
) -> None:
    """Issue 44: asks after SIGTERM were accepted (202) and left `streaming`; some listeners saw the
    connection close with no `error`."""
    stub.set_default(Reply(pieces=["Zebras [1] ", "never finish"], hang_after=1, hang=120))
    env = {
        "ANSWERS_SHUTDOWN_GRACE": str(GRACE_S),
        "ANSWERS_PROVIDER_TIMEOUT": "300",
        "LOG_LEVEL": "INFO",
        **fanout_env,
    }
    with running_server(openai_base_url=stub.base_url, documents=corpus(), extra_env=env) as live:

        async def scenario() -> tuple[list[Listener], httpx.Response, list[httpx.Response]]:
            async with client_for(live) as client, client_for(live) as streams:
                csrf = _CSRF.search((await client.get("/")).text).group(1)  # type: ignore[union-attr]
                json_ask = asyncio.create_task(client.post("/api/answers/", json={"question": QUESTION}))
                listeners, following = [], []
                for _ in range(6):
                    events_url = (await ask(client, QUESTION))["events_url"]
                    for _ in range(2):
                        listener = Listener()
                        listeners.append(listener)
                        following.append(asyncio.create_task(listener.follow(streams, events_url)))
                for listener in listeners:
                    await asyncio.wait_for(listener.in_flight.wait(), 60)
                await await_until(
                    lambda: len(stub.requests) >= 7, within=60, what="every ask at the provider"
                )

                await _stopping(live)
                refused = await _asks_while_stopping(client, csrf)
                await asyncio.gather(*following)
                return listeners, await json_ask, refused

        listeners, json_response, refused = asyncio.run(scenario())
        wait_until(lambda: _exited(live.pid), within=60, what="the server to exit after SIGTERM")
        left = _answers(live.env)
        log = live.log_tail(100_000)

    for response in refused:
        assert response.status_code == 503, (response.request.url, response.text[:500])
        assert response.headers["Retry-After"] == "10"
    assert "takes no new questions" in refused[0].json()["detail"]
    assert "takes no new questions" in refused[2].text  # the form page, with the reason
    # Nothing of the refused asks was stored: the seven accepted before the stop, each failed.
    assert len(left) == 7, left
    assert {(a["status"], a["kind"]) for a in left} == {("failed", "shutdown")}, (left, log[-3000:])
    assert json_response.status_code == 503
    assert json_response.json()["id"] in {a["id"] for a in left}
    # Every listener got `error` before its connection closed.
    assert [listener.closed_by for listener in listeners] == [""] * 12, log
    assert all(listener.events[-1] == "error" for listener in listeners)
    assert "stream(s) closed before their answer's last event" not in log


_ANSWERS = r"""
import json
from answers.models import Answer
print("ANSWERS=" + json.dumps([
    {"id": str(a.id), "status": a.status, "kind": a.error_kind} for a in Answer.objects.all()
]))
"""


def _answers(env: dict[str, str]) -> list[dict[str, str]]:
    out = manage(["shell", "-c", _ANSWERS], env)
    line = next(ln for ln in out.splitlines() if ln.startswith("ANSWERS="))
    return list(json.loads(line.removeprefix("ANSWERS=")))
