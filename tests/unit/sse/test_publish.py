"""The SSE publisher's events satisfy the live display's invariants, on every text of the citation table
and every reply the SSE tests script, whatever the pieces and however they are coalesced.

The publisher (answers.sse.publish.DeltaCoalescer) runs as in production, with
its `send` collecting each coalesced stretch's events (delta_events, what
publish_delta stores and publishes) instead of storing them; `done` is built
from compute_trail, the function answer_complete stores the finalized pair with.

Its pacing runs on a fake clock (tests/fixtures/clock.py): pieces within the interval since the
last delta go out together when it ends, a piece after it goes out at once.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Collection
from typing import Any

import pytest

from answers.citations.trail import compute_trail
from answers.payloads import reference_payload
from answers.retrieval.types import RetrievedSource
from answers.sse.publish import DELTA_INTERVAL_SECONDS, Delta, DeltaCoalescer, delta_events
from tests.fixtures.citation_texts import table_texts
from tests.fixtures.clock import MOMENT, FakeClock
from tests.fixtures.live_events import assert_live_events, scripted_replies

DIALECTS: tuple[Collection[str] | None, ...] = (None, ())  # all dialects (the default), none


def _sources(count: int) -> list[RetrievedSource]:
    return [
        RetrievedSource(n, 100 + n, f"Source {n}", f"/docs/{n}/", f"Excerpt {n}.", 0.5, 0.5)
        for n in range(1, count + 1)
    ]


async def _events(
    pieces: list[str],
    count: int,
    *,
    interval: float,
    dialects: Collection[str] | None,
    live_budget: float | None = None,
) -> list[tuple[str, Any]]:
    sources = _sources(count)
    retrieved = [reference_payload(s, s.number) for s in sources]
    events: list[tuple[str, Any]] = [("references", {"references": retrieved})]

    async def collect(answer_id: uuid.UUID, delta: Delta) -> None:
        events.extend(delta_events(delta))

    budget = {} if live_budget is None else {"live_budget": live_budget}
    coalescer = DeltaCoalescer(
        uuid.uuid4(), sources, dialects=dialects, interval=interval, send=collect, **budget
    )
    for piece in pieces:
        await coalescer.add(piece)
    await coalescer.close()

    raw = "".join(pieces)
    assert "".join(data["text"] for kind, data in events if kind == "delta") == raw
    trail = compute_trail(raw, count, dialects=dialects)
    cited = [s for s in trail.sources if s.final_number is not None]
    final = sorted(cited, key=lambda s: s.final_number or 0)
    references = [reference_payload(sources[s.original_number - 1], s.final_number or 0) for s in final]
    events.append(("done", {"text": trail.final_text, "references": references, "fallback": trail.fallback}))
    return events


def _split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@pytest.mark.parametrize("dialects", DIALECTS, ids=["all-dialects", "no-dialects"])
@pytest.mark.parametrize("size", [1, 3, 7, 1000])
async def test_every_table_text_in_pieces_published_one_delta_per_piece(
    size: int, dialects: Collection[str] | None
) -> None:
    for text in table_texts():
        for count in (2, 5):
            assert_live_events(await _events(_split(text, size), count, interval=0, dialects=dialects))


@pytest.mark.parametrize("size", [1, 4])
async def test_every_table_text_coalesced_into_one_delta_at_close(size: int) -> None:
    for text in table_texts():
        events = await _events(_split(text, size), 5, interval=math.inf, dialects=None)
        assert_live_events(events)
        assert [kind for kind, _ in events].count("delta") <= 1


@pytest.mark.parametrize("pieces", scripted_replies(), ids=lambda pieces: repr("".join(pieces))[:40])
@pytest.mark.parametrize("interval", [0, math.inf])
async def test_every_scripted_sse_reply(pieces: list[str], interval: float) -> None:
    # The SSE tests' demo corpus retrieves four sources; fewer strips some markers.
    for count in (1, 4):
        assert_live_events(await _events(pieces, count, interval=interval, dialects=None))


async def test_the_raw_numbers_never_show_and_cites_come_first() -> None:
    """A reply citing [3] and [5] of five sources displays [1] and [2] from the start."""
    events = await _events(["Zebras graze [3", "] on grass", " [5][3]."], 5, interval=0, dialects=None)
    assert events[1:] == [
        ("delta", {"text": "Zebras graze [3", "display": "Zebras graze"}),
        ("cite", {"number": 1, "original": 3, "reference": reference_payload(_sources(5)[2], 1)}),
        ("delta", {"text": "] on grass", "display": " [1] on grass"}),
        ("cite", {"number": 2, "original": 5, "reference": reference_payload(_sources(5)[4], 2)}),
        ("delta", {"text": " [5][3].", "display": " [2][1]."}),
        ("done", events[-1][1]),
    ]
    assert events[-1][1]["text"] == "Zebras graze [1] on grass [2][1]."


async def test_a_fallback_answer_displays_its_text_and_cites_nothing() -> None:
    events = await _events(["No markers ", "[9] here", "."], 3, interval=0, dialects=None)
    assert_live_events(events)
    assert "cite" not in [kind for kind, _ in events]
    assert events[-1][1]["fallback"] is True
    assert events[-1][1]["text"] == "No markers here."


@pytest.mark.parametrize("dialects", DIALECTS, ids=["all-dialects", "no-dialects"])
@pytest.mark.parametrize("size", [1, 7])
async def test_past_its_budget_the_display_comes_whole_at_the_end_and_still_adds_up(
    size: int, dialects: Collection[str] | None
) -> None:
    """A display over its CPU budget (here: none at all) stops being live after the first stretch;
    the events still add up to the raw text, the final text and the references."""
    for text in table_texts():
        for count in (2, 5):
            events = await _events(_split(text, size), count, interval=0, dialects=dialects, live_budget=-1)
            assert_live_events(events)


async def test_a_marker_flood_past_the_budget_is_displayed_at_the_end_with_its_one_cite() -> None:
    flood = ["Floods [1]" + "[1]" * 400, "[1]" * 400, " end."]
    events = await _events(flood, 3, interval=0, dialects=None, live_budget=-1)
    assert_live_events(events)
    deltas = [data for kind, data in events if kind == "delta"]
    assert [data["display"] for data in deltas[1:-1]] == ["" for _ in deltas[1:-1]]
    assert deltas[-1]["display"].endswith("[1] end.")
    assert [data["number"] for kind, data in events if kind == "cite"] == [1]


# --- pacing


class Sent:
    """The coalescer's `send`: records each delta's raw text; `next()` waits for the next one."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._arrived = asyncio.Event()

    async def __call__(self, answer_id: uuid.UUID, delta: Delta) -> None:
        self.texts.append(delta.text)
        self._arrived.set()

    async def next(self) -> list[str]:
        await asyncio.wait_for(self._arrived.wait(), 10)
        self._arrived.clear()
        return self.texts


async def test_pieces_within_the_interval_go_out_together_when_it_ends() -> None:
    clock = FakeClock()
    sent = Sent()
    coalescer = DeltaCoalescer(uuid.uuid4(), send=sent, clock=clock, sleep=clock.asleep)

    await coalescer.add("One. ")  # nothing sent in the last interval: out at once
    assert await sent.next() == ["One. "]
    clock.advance(MOMENT)
    await coalescer.add("Two. ")  # starts a timer for the rest of the interval
    await asyncio.sleep(0)  # one turn of the loop: the timer starts sleeping, on the fake clock
    clock.advance(DELTA_INTERVAL_SECONDS - 2 * MOMENT)  # a moment before the interval ends
    await coalescer.add("Three. ")

    clock.advance(2 * MOMENT)  # past it: both go out in one delta (had either gone alone, it would show)
    assert await sent.next() == ["One. ", "Two. Three. "]
    await coalescer.close()


async def test_a_piece_an_interval_after_the_last_delta_goes_out_at_once() -> None:
    clock = FakeClock()
    sent = Sent()
    coalescer = DeltaCoalescer(uuid.uuid4(), send=sent, clock=clock, sleep=clock.asleep)

    await coalescer.add("One. ")
    clock.advance(DELTA_INTERVAL_SECONDS)
    await coalescer.add("Two. ")  # no timer: sent before add() returns
    assert sent.texts == ["One. ", "Two. "]
    clock.advance(DELTA_INTERVAL_SECONDS - MOMENT)
    await coalescer.add("Three. ")  # a moment early: held back until close
    assert sent.texts == ["One. ", "Two. "]
    await coalescer.close()
    assert sent.texts == ["One. ", "Two. ", "Three. "]
