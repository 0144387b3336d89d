"""An asyncio load client for the answers' Server-Sent Events (aiohttp), with percentiles.

    .venv/bin/python bench/sse_client.py http://127.0.0.1:8000 --answers 4 --streams 50

asks `--answers` questions at once (`POST /api/answers/` with `stream: true`),
opens `--streams` event streams to each answer (replay from the channel's
start), reads every stream to `done`/`error`, and prints, per stream: time
from the POST to the `references` event and to `done`, events seen, ids out of
order, duplicates. The benchmarks import `ask`, `open_stream` and `read_stream`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

FINAL = ("done", "error")


@dataclass(frozen=True)
class SSEEvent:
    type: str
    id: str | None
    data: str
    t: float  # time.perf_counter() when its last line arrived

    def json(self) -> Any:
        return json.loads(self.data)

    @property
    def number(self) -> int | None:
        """The event's sequence number in its channel (`answer-<uuid>:<n>`), if it has one."""
        if not self.id or ":" not in self.id:
            return None
        try:
            return int(self.id.rsplit(":", 1)[1])
        except ValueError:
            return None


@dataclass
class StreamResult:
    status: int = 0
    opened_at: float = 0.0  # response headers received
    events: list[SSEEvent] = field(default_factory=list)
    duplicates: int = 0  # events sent again under an id already seen
    out_of_order: int = 0  # ids that went backwards or skipped ahead
    error: str = ""

    def of(self, kind: str) -> list[SSEEvent]:
        return [e for e in self.events if e.type == kind]

    def first(self, kind: str) -> SSEEvent | None:
        return next((e for e in self.events if e.type == kind), None)

    @property
    def final(self) -> SSEEvent | None:
        return next((e for e in reversed(self.events) if e.type in FINAL), None)

    @property
    def delta_text(self) -> str:
        return "".join(e.json()["text"] for e in self.of("delta"))


def session(limit: int = 0, timeout: float = 120) -> aiohttp.ClientSession:
    """A client session with no connection cap (each SSE stream keeps its own connection)."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=limit, force_close=False),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout),
        read_bufsize=2**20,
    )


def absolute(base_url: str, url: str) -> str:
    """`events_url` as the API returns it (absolute, or a path) made absolute against the server."""
    return base_url + url if url.startswith("/") else url


async def ask(
    client: aiohttp.ClientSession,
    base_url: str,
    question: str,
    *,
    stream: bool = True,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    """POST /api/answers/: (status, JSON body)."""
    async with client.post(
        f"{base_url}/api/answers/", json={"question": question, "stream": stream}, headers=headers
    ) as response:
        text = await response.text()
        try:
            body = json.loads(text)
        except ValueError:
            # An error page (e.g. a 500 when the database refused a connection): keep its title.
            title = (
                text.split("<title>", 1)[-1].split("</title>", 1)[0].strip() if "<title>" in text else text
            )
            body = {"detail": title[:200]}
        return response.status, body


async def events(response: aiohttp.ClientResponse) -> AsyncIterator[SSEEvent]:
    """Parse an SSE body into events (comments and the keep-alive padding are skipped)."""
    kind, event_id, data = "message", None, []
    async for raw in response.content:
        line = raw.decode().rstrip("\r\n")
        if not line:
            if data or kind != "message":
                yield SSEEvent(kind, event_id, "\n".join(data), time.perf_counter())
            kind, event_id, data = "message", None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            kind = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            event_id = value


async def read_stream(
    client: aiohttp.ClientSession,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    until: tuple[str, ...] = FINAL,
    on_open: Callable[[StreamResult], None] | None = None,
    on_event: Callable[[SSEEvent], None] | None = None,
    limit_s: float = 120,
) -> StreamResult:
    """Read one stream until an event in `until` (or the server closes it); never raises."""
    result = StreamResult()
    seen: set[int] = set()
    last = 0
    try:
        async with asyncio.timeout(limit_s), client.get(url, headers=headers) as response:
            result.status = response.status
            result.opened_at = time.perf_counter()
            if on_open is not None:
                on_open(result)
            if response.status != 200:
                result.error = f"HTTP {response.status}: {(await response.text())[:200]}"
                return result
            async for event in events(response):
                number = event.number
                if number is not None:
                    if number in seen:
                        result.duplicates += 1
                        continue
                    if number != last + 1:
                        result.out_of_order += 1
                    seen.add(number)
                    last = number
                if event.type in ("keep-alive", "stream-open"):
                    continue
                result.events.append(event)
                if on_event is not None:
                    on_event(event)
                if event.type in until:
                    return result
            result.error = "the server closed the stream"
    except TimeoutError:
        result.error = f"timed out after {limit_s:g} s"
    except (aiohttp.ClientError, OSError) as exc:
        result.error = f"{exc.__class__.__name__}: {exc}"
    return result


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def _load(base_url: str, answers: int, streams: int, question: str, limit_s: float) -> None:
    async with session() as client:

        async def one_answer(i: int) -> list[tuple[float, StreamResult]]:
            started = time.perf_counter()
            status, body = await ask(client, base_url, f"{question} ({i})")
            if status != 202:
                print(f"answer {i}: HTTP {status} {body}")
                return []
            url = absolute(base_url, body["events_url"])
            results = await asyncio.gather(
                *[read_stream(client, url, limit_s=limit_s) for _ in range(streams)]
            )
            return [(started, r) for r in results]

        began = time.perf_counter()
        per_answer = await asyncio.gather(*[one_answer(i) for i in range(answers)])
        wall = time.perf_counter() - began
    flat = [pair for group in per_answer for pair in group]
    refs = [r.first("references").t - s for s, r in flat if r.first("references")]  # type: ignore[union-attr]
    done = [r.final.t - s for s, r in flat if r.final and r.final.type == "done"]  # type: ignore[union-attr]
    failed = [r for _, r in flat if not (r.final and r.final.type == "done")]
    print(f"{answers} answers x {streams} streams in {wall:.2f} s; {len(failed)} streams without `done`")
    for name, values in (("POST -> references", refs), ("POST -> done", done)):
        print(
            f"{name:>20}: n={len(values)} p50={percentile(values, 0.5) * 1000:.1f} ms "
            f"p95={percentile(values, 0.95) * 1000:.1f} ms max={max(values, default=0) * 1000:.1f} ms"
        )
    print(f"events per stream (median): {sorted(len(r.events) for _, r in flat)[len(flat) // 2]}")
    duplicates = sum(r.duplicates for _, r in flat)
    print(f"duplicates: {duplicates}, out of order: {sum(r.out_of_order for _, r in flat)}")
    for r in failed[:5]:
        print("failed:", r.status, r.error)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url", help="The server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--answers", type=int, default=1, help="Questions asked at once.")
    parser.add_argument("--streams", type=int, default=1, help="Event streams opened to each answer.")
    parser.add_argument("--question", default="How does the with statement work?")
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    asyncio.run(_load(args.base_url.rstrip("/"), args.answers, args.streams, args.question, args.timeout))


if __name__ == "__main__":
    main()
