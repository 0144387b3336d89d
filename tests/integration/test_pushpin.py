"""Pushpin (GRIP) in front of the event streams: what a client sees through it, and what it costs Django.

Pushpin (Debian's package, run by tests/fixtures/pushpin.py) has a config written into a
temporary directory: its ZeroMQ sockets are ipc paths there, its two TCP ports
(clients, and the publish endpoint Django posts to) are free ports picked here,
so parallel runs do not clash. daphne runs with GRIP_URL pointing at that
publish endpoint (tests/fixtures/live_server.py), and Pushpin's route points at daphne.

Without Pushpin installed these tests skip, except on CI (CI=true), where that
is a failure (.ci/run installs it). docs/pushpin.md describes the deployment.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.live_events import assert_live_events, events_of
from tests.fixtures.live_server import LiveServer, SecondProcess, free_port, manage
from tests.fixtures.providers import Reply, StubOpenAIServer
from tests.fixtures.pushpin import Pushpin, running_pushpin
from tests.fixtures.sse_client import READ_TIMEOUT_S, ask, read_stream, wait_until_finished

ROOT = Path(__file__).resolve().parents[2]
log = logging.getLogger(__name__)
IDLE_STREAMS = 200
# --- settings (no Pushpin needed)

_MIDDLEWARE_PROBE = """
from django.conf import settings
import django
django.setup()
from django.utils.module_loading import import_string
for path in settings.MIDDLEWARE:
    cls = import_string(path)
    print(path, getattr(cls, "async_capable", False), getattr(cls, "sync_capable", True))
"""


def _middleware(env: dict[str, str]) -> list[tuple[str, bool, bool]]:
    clean = {k: v for k, v in os.environ.items() if k not in {"GRIP_URL", "DATABASE_URL"}}
    clean.update({"SECRET_KEY": "s", "DJANGO_SETTINGS_MODULE": "project.settings", **env})
    result = subprocess.run(
        [sys.executable, "-c", _MIDDLEWARE_PROBE],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    return [(path, a == "True", s == "True") for path, a, s in rows]


def test_grip_url_puts_an_async_grip_middleware_first() -> None:
    with_grip = _middleware({"GRIP_URL": "http://127.0.0.1:5561"})
    without = _middleware({})

    assert with_grip[0] == ("answers.middleware.AsyncGripMiddleware", True, False)
    assert with_grip[1:] == without
    assert all(async_capable for _, async_capable, _ in with_grip), with_grip
    assert not any("Grip" in path for path, _, _ in without)


# --- the deployment under test: Pushpin in front of one daphne process


@dataclass
class Deployment:
    pushpin: Pushpin
    server: LiveServer

    @property
    def url(self) -> str:
        return self.pushpin.url

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=httpx.Timeout(READ_TIMEOUT_S), **kwargs)

    def events_requests(self, answer_id: str) -> list[str]:
        """The requests for this answer's stream that daphne has answered (its access log)."""
        log = self.server.log_path.read_text(errors="replace")
        return [line for line in log.splitlines() if f"GET /answers/{answer_id}/events/" in line]


@dataclass(frozen=True)
class Grip:
    """Pushpin's two ports and its signing key: chosen before daphne starts, whose GRIP_URL names them."""

    http_port: int
    control_port: int
    sig_key: str

    @property
    def url(self) -> str:
        # django_grip reads `key` (it needs it even when verify-key is given) to check Grip-Sig.
        return f"http://127.0.0.1:{self.control_port}?key={self.sig_key}&verify-iss=pushpin"


@pytest.fixture(scope="module")
def grip(pushpin_installed: None) -> Grip:
    return Grip(http_port=free_port(), control_port=free_port(), sig_key=secrets.token_hex(16))


@pytest.fixture(scope="module")
def live_settings(grip: Grip) -> dict[str, str]:
    return {"GRIP_URL": grip.url}


@pytest.fixture(scope="module")
def pushpin_in_front(grip: Grip, stub_served: LiveServer) -> Iterator[Deployment]:
    """Pushpin routing to the module's live server, which publishes to it (`live_settings`)."""
    with running_pushpin(
        backend_url=stub_served.url,
        http_port=grip.http_port,
        control_port=grip.control_port,
        sig_key=grip.sig_key,
    ) as pushpin:
        yield Deployment(pushpin=pushpin, server=stub_served)


@pytest.fixture
def deployment(pushpin_in_front: Deployment, live: LiveServer) -> Iterator[Deployment]:
    """The module's deployment, the stub reset (`live`); a failed test's report shows both servers' logs."""
    yield pushpin_in_front
    log.warning("daphne log (tail):\n%s", pushpin_in_front.server.log_tail())
    log.warning("pushpin logs (tail):\n%s", pushpin_in_front.pushpin.log_tail())


def _path(url: str) -> str:
    return httpx.URL(url).raw_path.decode()


# --- what a client sees through Pushpin


async def test_events_arrive_live_and_in_order_through_pushpin(
    deployment: Deployment, stub: StubOpenAIServer
) -> None:
    pieces = [f"Zebras graze, part {i} [{1 + i % 2}]. " for i in range(6)]
    # The model starts once the stream is open (`gate`), and holds all but its first piece until
    # that piece has reached the reader (`resume`): the deltas come live, as generated, or the
    # stream never gets `done` and the read times out.
    opened, rest = threading.Event(), threading.Event()
    stub.enqueue(Reply(pieces=pieces, delay_s=0.3, gate=opened, resume=rest))
    held_by_pushpin: list[bool] = []

    async with deployment.client() as client:
        accepted = await ask(client)

        def on_event(event: Any) -> None:
            if event.type == "references":
                opened.set()
            if event.type == "delta" and not held_by_pushpin:
                # daphne logs a request when it has answered it: the stream is still open here,
                # so if daphne already answered it, Pushpin is the one holding it.
                held_by_pushpin.append(bool(deployment.events_requests(accepted["id"])))
                rest.set()

        stream = await read_stream(client, accepted["events_url"], on_event=on_event)
        fetched = (await client.get(f"/api/answers/{accepted['id']}/")).json()

    # Asked through Pushpin, the API hands out stream URLs through Pushpin.
    assert accepted["events_url"].startswith(f"{deployment.url}/answers/")
    assert held_by_pushpin == [True], "daphne was still serving the stream itself"
    assert stream.types[0] == "references"
    assert stream.types[-1] == "done"
    assert set(stream.types[1:-1]) == {"delta", "cite"}
    assert stream.delta_text == "".join(pieces)
    # `cite` and `display` come through Pushpin as stored: final numbers from the first marker.
    assert [(e.data["number"], e.data["original"]) for e in stream.of("cite")] == [(1, 1), (2, 2)]
    assert_live_events(events_of(stream))
    deltas = stream.of("delta")
    assert deltas[0].data["text"] == pieces[0], "the first delta came before the model went on"
    assert len(deltas) >= 3, "the text arrives piece by piece, not in one replay at the end"
    ids = [int(e.id.rsplit(":", 1)[1]) for e in stream.events if e.id]
    assert len(ids) == len(stream.events), "every event carries its stored id"
    assert ids == sorted(ids), "in order"
    assert fetched["status"] == "done"
    done = stream.of("done")[0].data
    assert {k: done[k] for k in ("text", "references", "fallback")} == {
        k: fetched[k] for k in ("text", "references", "fallback")
    }
    assert stream.events[0].data["references"] == [
        {k: r[k] for k in ("number", "document_id", "title", "url", "excerpt")}
        for r in stream.events[0].data["references"]
    ]


async def test_a_late_subscriber_through_pushpin_replays_everything(
    deployment: Deployment, stub: StubOpenAIServer
) -> None:
    pieces = ["Zebras [2]", " live ", "in grassland [1]."]
    stub.enqueue(Reply(pieces=pieces, delay_s=0.1))
    async with deployment.client() as client:
        accepted = await ask(client)
        first = await read_stream(client, accepted["events_url"])
        late = await read_stream(client, accepted["events_url"])
        resumed = await read_stream(
            client, accepted["events_url"].split("?")[0], headers={"Last-Event-ID": str(first.events[0].id)}
        )

    assert first.types[-1] == "done"
    assert [(e.type, e.id, e.data) for e in late.events] == [(e.type, e.id, e.data) for e in first.events]
    assert late.delta_text == "".join(pieces)
    assert late.display_text == "Zebras [1] live in grassland [2]."
    assert_live_events(events_of(late))
    # A browser's EventSource reconnecting with Last-Event-ID resumes right after it.
    assert [e.id for e in resumed.events] == [e.id for e in first.events[1:]]


async def test_strangers_are_refused_through_pushpin(deployment: Deployment, stub: StubOpenAIServer) -> None:
    stub.enqueue(Reply(pieces=["Alice's private answer [1]."]))
    async with deployment.client() as client:
        accepted = await ask(client, headers=deployment.server.auth("alice"))
        url = accepted["events_url"]
        other = await client.get(url, headers=deployment.server.auth("bob"))
        anonymous = await client.get(url)
        bad_token = await client.get(url, headers={"Authorization": "Token not-a-real-token"})
        own = await read_stream(client, url, headers=deployment.server.auth("alice"))

    assert url.startswith(deployment.url)
    assert (other.status_code, anonymous.status_code, bad_token.status_code) == (404, 404, 401)
    for response in (other, anonymous, bad_token):
        assert response.headers["content-type"] == "application/json"
        assert response.json()["detail"]
        assert "Alice" not in response.text
    assert own.types[-1] == "done"
    assert own.delta_text == "Alice's private answer [1]."


async def test_a_stream_survives_pushpin_recovering_from_an_out_of_order_publish(
    deployment: Deployment, stub: StubOpenAIServer
) -> None:
    """A publish Pushpin cannot place (lost or reordered, e.g. from another process) makes it
    re-read the channel from Django; the client still gets every event once, in order."""
    gate = threading.Event()
    pieces = ["Zebras ", "live in ", "grassland [1]."]
    stub.enqueue(Reply(pieces=pieces, gate=gate, delay_s=0.2))
    async with deployment.client() as client:
        accepted = await ask(client)
        channel = f"answer-{accepted['id']}"

        def on_event(event: Any) -> None:
            if event.type == "references":
                deployment.pushpin.publish(
                    {
                        "channel": f"events-{channel}",
                        "id": "9998",
                        "prev-id": "9997",
                        "formats": {"http-stream": {"content": 'event: delta\ndata: {"text": "BOGUS"}\n\n'}},
                    }
                )
                gate.set()

        stream = await read_stream(client, accepted["events_url"], on_event=on_event)

    assert stream.types[0] == "references"
    assert stream.types[-1] == "done"
    assert stream.delta_text == "".join(pieces)
    assert "BOGUS" not in stream.delta_text
    assert any("recover=true" in line for line in deployment.events_requests(accepted["id"])), (
        "Pushpin did not ask Django to recover"
    )


async def test_events_published_by_another_process_reach_streams_held_by_pushpin(
    deployment: Deployment, second_process: SecondProcess, stub: StubOpenAIServer
) -> None:
    """Every daphne process publishes to Pushpin, so a stream it holds gets an answer generated
    on a process it never talked to: no Redis needed for streams through Pushpin."""
    pieces = [f"Zebras graze, part {i} [1]. " for i in range(5)]
    opened = threading.Event()  # the model starts once the stream is open: every delta comes live
    stub.enqueue(Reply(pieces=pieces, delay_s=0.25, gate=opened))

    def on_event(event: Any) -> None:
        if event.type == "references":
            opened.set()

    # The second process runs without Redis (live_settings sets none, the environment's is dropped).
    assert "REDIS_URL" not in deployment.server.env
    async with (
        httpx.AsyncClient(base_url=second_process.url, timeout=READ_TIMEOUT_S) as on_second,
        deployment.client() as through_pushpin,
    ):
        accepted = await ask(on_second)  # generated on the second process
        stream = await read_stream(through_pushpin, _path(accepted["events_url"]), on_event=on_event)
        fetched = (await through_pushpin.get(f"/api/answers/{accepted['id']}/")).json()

    assert stream.types[0] == "references"
    assert stream.types[-1] == "done"
    assert stream.delta_text == "".join(pieces)
    assert len(stream.of("delta")) >= 2, "delivered live, not only replayed"
    assert_live_events(events_of(stream))
    done = stream.of("done")[0].data
    assert {k: done[k] for k in ("text", "references", "fallback")} == {
        k: fetched[k] for k in ("text", "references", "fallback")
    }


async def test_a_signed_in_askers_stream_survives_pushpin_recovering(
    deployment: Deployment, stub: StubOpenAIServer
) -> None:
    gate = threading.Event()
    pieces = ["Alice's ", "private ", "answer [1]."]
    stub.enqueue(Reply(pieces=pieces, gate=gate, delay_s=0.2))
    async with deployment.client() as client:
        accepted = await ask(client, headers=deployment.server.auth("alice"))

        def on_event(event: Any) -> None:
            if event.type == "references":
                deployment.pushpin.publish(
                    {
                        "channel": f"events-answer-{accepted['id']}",
                        "id": "9998",
                        "prev-id": "9997",
                        "formats": {"http-stream": {"content": "event: keep-alive\ndata:\n\n"}},
                    }
                )
                gate.set()

        async with asyncio.timeout(8):
            stream = await read_stream(
                client, accepted["events_url"], headers=deployment.server.auth("alice"), on_event=on_event
            )

    assert stream.delta_text == "".join(pieces)
    assert stream.types[-1] == "done"


def _shell(deployment: Deployment, code: str) -> None:
    """Run `code` in `manage.py shell` against the deployment's database (as the site's admin would)."""
    manage(["shell", "-c", code], env=deployment.server.env)


def _withheld(references: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [ref for ref in references if ref.get("withheld")]


async def test_a_source_its_reader_may_no_longer_read_is_withheld_through_pushpin(
    deployment: Deployment, stub: StubOpenAIServer
) -> None:
    """Alice's answer cites a document that becomes staff-only while it is written. Through Pushpin,
    as straight from daphne, she then sees that source as `{"number", "withheld": true}`: in the
    events still to come (their publishes carry no source; Pushpin fetches each from Django for her),
    and in every replay. Staff still read it whole."""
    key = f"https://example.org/walrus-{secrets.token_hex(3)}"
    title = "Walrus haul-out notes"
    _shell(
        deployment,
        "from answers.content.storage import document_upsert; "
        f"document_upsert(key={key!r}, title={title!r}, "
        "body='Walrus haul-out notes: walruses haul out on sea ice between feeding dives.')",
    )
    gate = threading.Event()
    pieces = ["Walruses haul out ", "on sea ice [1]."]
    stub.enqueue(Reply(pieces=pieces, gate=gate, delay_s=0.2))
    alice, staff = deployment.server.auth("alice"), deployment.server.auth("staff")
    async with deployment.client() as client:
        accepted = await ask(client, "Walrus haul-out notes: where do walruses haul out?", headers=alice)
        url = accepted["events_url"]

        def on_event(event: Any) -> None:
            if event.type == "references":
                # Her stream is held by Pushpin; the source moves to staff-only before it is cited.
                _shell(
                    deployment,
                    f"from answers.models import Document; Document.objects.filter(key={key!r})"
                    ".update(access='staff')",
                )
                gate.set()

        held = await read_stream(client, url, headers=alice, on_event=on_event)
        replayed = await read_stream(client, url, headers=alice)
        resumed = await read_stream(
            client, url.split("?")[0], headers={**alice, "Last-Event-ID": held.events[0].id}
        )
        whole = await read_stream(client, url, headers=staff)
        # Its stored events trimmed (manage.py trim_events), the stream replays from the record.
        _shell(
            deployment,
            "from django_eventstream.models import Event; "
            f"Event.objects.filter(channel='answer-{accepted['id']}').delete()",
        )
        recorded = await read_stream(client, url, headers=alice)

    assert held.delta_text == "".join(pieces)
    # What she got before the move was hers to read; nothing after it names the source.
    assert held.events[0].data["references"][0]["title"] == title
    after = [e for e in held.events[1:] if e.type in ("cite", "done")]
    assert [e.type for e in after] == ["cite", "done"]
    assert after[0].data["reference"] == {"number": 1, "withheld": True}
    assert _withheld(after[1].data["references"]) == [{"number": 1, "withheld": True}]
    assert all(title not in json.dumps(e.data) for e in after)
    assert any("recover=true" in line for line in deployment.events_requests(accepted["id"])), (
        "Pushpin did not fetch the withheld events from Django"
    )
    # Every replay for her, from the start or resumed, withholds it too; the ids are the stored ones.
    for stream in (replayed, resumed):
        assert stream.types[-1] == "done"
        assert title not in json.dumps([e.data for e in stream.events])
        assert all(_withheld(e.data["references"]) for e in stream.events if "references" in e.data)
    assert [e.id for e in resumed.events] == [e.id for e in replayed.events[1:]]
    assert [e.id for e in replayed.events] == [e.id for e in held.events]
    assert recorded.types == ["references", "done"]
    assert recorded.events[-1].id == held.events[-1].id
    assert title not in json.dumps([e.data for e in recorded.events])
    assert all(_withheld(e.data["references"]) for e in recorded.events)
    # Staff read every source of the answers they may read.
    assert whole.of("done")[0].data["references"][0]["title"] == title
    assert not _withheld(whole.of("done")[0].data["references"])


async def test_a_direct_request_with_a_forged_grip_signature_is_not_treated_as_proxied(
    deployment: Deployment, stub: StubOpenAIServer
) -> None:
    """Only Pushpin's signature (sig_key = GRIP_URL's key) makes Django answer with GRIP instructions."""
    import jwt

    stub.enqueue(Reply(pieces=["Zebras [1]."]))
    forged = jwt.encode(
        {"iss": "pushpin", "exp": int(time.time()) + 60}, secrets.token_hex(16), algorithm="HS256"
    )
    async with httpx.AsyncClient(base_url=deployment.server.url, timeout=READ_TIMEOUT_S) as direct:
        accepted = await ask(direct)
        path = _path(accepted["events_url"])
        async with direct.stream("GET", path, headers={"Grip-Sig": forged}) as response:
            headers = response.headers
        stream = await read_stream(direct, path, headers={"Grip-Sig": forged})

    assert not any(name.lower().startswith("grip-") for name in headers)
    assert stream.types[-1] == "done"


# --- what many streams cost Django


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def _sockets(pid: int) -> int:
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                count += 1
    return count


async def _settled(pid: int) -> tuple[int, int]:
    """Thread and socket counts once short-lived request threads are gone (the lowest of a few looks).

    Not a wait for something not to happen: a measure of counts that go up and down (a request's
    thread, a keep-alive socket), taken over two seconds so one passing thread does not count. The
    assertions on it allow for that: their bounds are per wave of streams, not per stream.
    """
    looks = []
    for _ in range(10):
        await asyncio.sleep(0.2)
        looks.append((_threads(pid), _sockets(pid)))
    return min(t for t, _ in looks), min(s for _, s in looks)


class _Opened:
    """Counts streams whose replay (the `references` event) has arrived; wakes a waiter at a target."""

    def __init__(self) -> None:
        self.count = 0
        self.target = 0
        self.reached = asyncio.Event()

    def expect(self, target: int) -> None:
        self.target = target
        self.reached.clear()

    def on_event(self, event: Any) -> None:
        if event.type == "references":
            self.count += 1
            if self.count >= self.target:
                self.reached.set()

    async def wait(self) -> None:
        await asyncio.wait_for(self.reached.wait(), READ_TIMEOUT_S)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_idle_streams_held_by_pushpin_cost_django_no_thread_or_connection_each(
    deployment: Deployment, stub: StubOpenAIServer
) -> None:
    """Streams through Pushpin in waves, then a few straight to daphne, all on one answer in flight.

    daphne answers each Pushpin request at once (the replay plus a hold instruction), so
    it keeps no thread per stream. The sockets it keeps are Pushpin's (zurl's) keep-alive
    pool: at most as many as requests were in flight at once (one wave), reused later.
    A wave is kept under PostgreSQL's connection limit: while daphne answers an opening
    request, that request holds a database connection.
    """
    waves, direct_streams = 5, 20
    wave = IDLE_STREAMS // waves
    gate = threading.Event()
    pieces = ["Zebras graze ", "in grassland [1]."]
    stub.enqueue(Reply(pieces=pieces, gate=gate, delay_s=0.2))
    pid = deployment.server.pid
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    opened, opened_direct = _Opened(), _Opened()

    async with (
        deployment.client(limits=limits) as through_pushpin,
        httpx.AsyncClient(base_url=deployment.server.url, timeout=READ_TIMEOUT_S, limits=limits) as direct,
    ):
        accepted = await ask(through_pushpin)
        path = _path(accepted["events_url"])
        before = await _settled(pid)

        streams: list[asyncio.Task[Any]] = []
        for n in range(1, waves + 1):
            opened.expect(n * wave)
            streams += [
                asyncio.create_task(read_stream(through_pushpin, path, on_event=opened.on_event))
                for _ in range(wave)
            ]
            await opened.wait()
        answered_while_open = len(deployment.events_requests(accepted["id"]))
        threads, sockets = with_pushpin = await _settled(pid)

        opened_direct.expect(direct_streams)
        streams += [
            asyncio.create_task(read_stream(direct, path, on_event=opened_direct.on_event))
            for _ in range(direct_streams)
        ]
        await opened_direct.wait()
        with_direct = await _settled(pid)

        gate.set()  # the answer goes on: one publish per event, Pushpin fans it out to all
        results = await asyncio.gather(*streams)
        answer = await wait_until_finished(through_pushpin, accepted["id"])

    measured = (
        f"daphne (threads, sockets): before {before}; with {IDLE_STREAMS} streams through Pushpin "
        f"{with_pushpin}; plus {direct_streams} straight to daphne {with_direct}"
    )
    # daphne had already answered every request Pushpin made while all the streams stayed open...
    assert answered_while_open >= IDLE_STREAMS, measured
    # ...so it holds no thread for them, and no connection each. (The requests' shared pool,
    # answers/handler.py, keeps up to its 16 threads once that many requests came at once.)
    assert threads - before[0] <= 4 + 16, measured
    assert sockets - before[1] <= wave + 10, measured
    # The measure does see streams daphne serves itself: a connection each.
    assert with_direct[1] - sockets >= direct_streams, measured
    # And every stream got the whole answer, live.
    assert answer["status"] == "done"
    for stream in results:
        assert stream.types[0] == "references"
        assert stream.types[-1] == "done"
        assert stream.delta_text == "".join(pieces)
