"""Prometheus metrics (the official prometheus-client) and `GET /metrics`.

The pipeline counts where it already decides: answers.pipeline.store (an answer done or
failed, its citation outcomes, its stage times), answers.pipeline.support (the support
record's outcomes) and answers.sse.stream (open streams). Each call here is a few
microseconds (an in-memory or mmap'd float; BENCHMARKS.md, "Metrics").

Several server processes: with PROMETHEUS_MULTIPROC_DIR set (an empty directory, per
machine, before the processes start), prometheus-client keeps each process's values in
files there and any process's `/metrics` adds them all up (its multiprocess collector):
counters and histograms summed over every process that ever ran since the directory was
emptied, `answers_open_streams` over the live ones (`livesum`). A process that exits
removes its live gauge files (mark_process_dead, at exit); one that was killed is
cleaned up by the next process to start on the machine.
"""

from __future__ import annotations

import atexit
import glob
import hmac
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import prometheus_client
from django.http import Http404, HttpRequest, HttpResponse
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, multiprocess

from answers.citations.trail import SourceStatus, Trail
from answers.conf import conf
from answers.support.record import UNSUPPORTED, below_bar, grounded_uncited

if TYPE_CHECKING:
    from answers.models import Answer

prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]  # no `*_created` series

# prometheus-client reads the environment itself, and conf reads the same variable.
MULTIPROC_DIR = conf.PROMETHEUS_MULTIPROC_DIR

# What citation finalizing and the support check decided (docs/citations.md; docs/reference/http.md).
DROPPED_SOURCE = "dropped_source"  # a retrieved source no marker cited, left out of the final list
RENUMBERED_SOURCE = "renumbered_source"  # a cited source whose final number is not its retrieval number
FALLBACK = "fallback"  # an answer citing nothing, listing every retrieved source
STRIPPED_MEMBER = "stripped_member"  # a marker member naming no retrieved source, removed
NORMALIZED_MARKER = "normalized_marker"  # a marker in another dialect, rewritten as [n]
UNSUPPORTED_CITATION = "unsupported_citation"  # a sentence's cited source scoring under the bar
GROUNDED_UNCITED = "grounded_uncited"  # a sentence without a marker that a retrieved source grounds
DECLINED = "declined"  # an answer declined: no source reached the threshold, no provider call
MAY_NOT_ADDRESS = "may_not_address"  # an answer whose cited sources miss a key term of the question
OUTCOMES = (
    DROPPED_SOURCE,
    RENUMBERED_SOURCE,
    FALLBACK,
    STRIPPED_MEMBER,
    NORMALIZED_MARKER,
    UNSUPPORTED_CITATION,
    GROUNDED_UNCITED,
    DECLINED,
    MAY_NOT_ADDRESS,
)
STAGES = ("rewrite", "retrieval", "first_piece", "generation", "total")
# From a fast lexical retrieval (milliseconds) to a slow model's whole answer (a minute or more).
STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)

ANSWERS = Counter(
    "answers",
    "Answers finished, by outcome, provider, delivery path and origin (a reader, or an evaluation run).",
    ["status", "provider", "delivery", "origin"],
)
CITATION_OUTCOMES = Counter(
    "answers_citation_outcomes",
    "What citation finalizing and the support check decided, one per source, marker member or sentence.",
    ["outcome"],
)
STAGE_SECONDS = Histogram(
    "answers_stage_seconds",
    "Time to rewrite a follow-up, to retrieve (every answer), to the first piece of text, of generation "
    "and in all (done answers).",
    ["stage"],
    buckets=STAGE_BUCKETS,
)
CONVERSATION_TURNS = Counter(
    "answers_conversation_turns",
    "Turns asked (answers created): first turns and follow-ups, by how a follow-up's standalone question "
    "was made (model, heuristic, or fallback: the heuristic after a failed or empty model rewrite).",
    ["kind", "rewrite"],
)
ASKS_REFUSED = Counter(
    "answers_asks_refused",
    "New questions a process did not take (503): while stopping, or at ANSWERS_MAX_GENERATING (busy).",
    ["reason"],
)
OPEN_STREAMS = Gauge(
    "answers_open_streams", "Event streams open, over every live server process.", multiprocess_mode="livesum"
)
# Series are created when first counted, not at import: in multiprocess mode each process that
# creates one leaves a file, and management commands (cron) would leave one per run.


# --- counting (called by the pipeline and the streams)


def answer_finished(*, status: str, provider: str, delivery: str, origin: str) -> None:
    ANSWERS.labels(status=status, provider=provider, delivery=delivery, origin=origin).inc()


def citation_outcomes(counts: Mapping[str, int]) -> None:
    for outcome, count in counts.items():
        if count:
            CITATION_OUTCOMES.labels(outcome=outcome).inc(count)


def stage_times(milliseconds: Mapping[str, float | None]) -> None:
    for stage, value in milliseconds.items():
        if value is not None:
            STAGE_SECONDS.labels(stage=stage).observe(value / 1000)


def ask_refused(reason: str) -> None:
    """A new question not taken (answers.pipeline.lifecycle.admit): nothing of it was stored."""
    ASKS_REFUSED.labels(reason=reason).inc()


def turn_started(answer: Answer) -> None:
    """An answer created as a conversation's turn; a follow-up's rewrite time is a stage of its own."""
    rewrite = answer.rewrite if isinstance(answer.rewrite, dict) else None
    if rewrite is None:
        CONVERSATION_TURNS.labels(kind="first", rewrite="none").inc()
        return
    method = "fallback" if rewrite.get("fallback") else str(rewrite.get("method"))
    CONVERSATION_TURNS.labels(kind="follow_up", rewrite=method).inc()
    stage_times({"rewrite": rewrite.get("ms")})


def answer_done(answer: Answer, trail: Trail) -> None:
    """A done answer: its count, what finalizing decided, and how long each stage took."""
    answer_finished(
        status=answer.status, provider=answer.provider, delivery=answer.delivery, origin=answer.origin
    )
    sources = trail.sources
    citation_outcomes(
        {
            DROPPED_SOURCE: sum(s.status == SourceStatus.DROPPED for s in sources),
            RENUMBERED_SOURCE: sum(s.renumbered for s in sources),
            FALLBACK: int(trail.fallback),
            STRIPPED_MEMBER: len(trail.stripped),
            NORMALIZED_MARKER: len(trail.normalized),
        }
    )
    stage_times(
        {"first_piece": answer.first_piece_ms, "generation": answer.generation_ms, "total": answer.total_ms}
    )


def answer_declined(answer: Answer) -> None:
    """A declined answer (done, no provider call): its count, the outcome, its total time."""
    answer_finished(
        status=answer.status, provider=answer.provider, delivery=answer.delivery, origin=answer.origin
    )
    citation_outcomes({DECLINED: 1})
    stage_times({"total": answer.total_ms})


def coverage_outcome(coverage: Mapping[str, Any]) -> None:
    """An answer flagged "may not address the question" (answers.support.coverage)."""
    citation_outcomes({MAY_NOT_ADDRESS: int(bool(coverage.get("flag")))})


def answer_failed(answer: Answer) -> None:
    answer_finished(
        status=answer.status, provider=answer.provider, delivery=answer.delivery, origin=answer.origin
    )


def support_outcomes(record: Mapping[str, Any]) -> None:
    """A support record's unsupported citations (sentence, cited source under the bar) and grounded
    uncited sentences."""
    bar = record.get("min_score", 0.0)
    sentences = record.get("sentences", [])
    citation_outcomes(
        {
            UNSUPPORTED_CITATION: sum(
                below_bar(score, bar)
                for s in sentences
                if s["verdict"] == UNSUPPORTED
                for score in s["scores"].values()
            ),
            GROUNDED_UNCITED: sum(bool(grounded_uncited(s)) for s in sentences),
        }
    )


def stream_opened() -> None:
    OPEN_STREAMS.inc()


def stream_closed() -> None:
    OPEN_STREAMS.dec()


# --- process bookkeeping (multiprocess mode)

_LIVE_GAUGE_FILE = re.compile(r"gauge_live\w+?_(\d+)\.db")


def _forget_dead_processes(directory: str) -> None:
    """Remove the live gauge files of processes that no longer run (killed, so no atexit ran)."""
    for path in glob.glob(os.path.join(directory, "gauge_live*_*.db")):
        found = _LIVE_GAUGE_FILE.fullmatch(os.path.basename(path))
        if found is None:
            continue
        pid = int(found.group(1))
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]
        except PermissionError:
            pass  # another user's process: alive


if MULTIPROC_DIR and os.path.isdir(MULTIPROC_DIR):
    _forget_dead_processes(MULTIPROC_DIR)
    atexit.register(multiprocess.mark_process_dead, os.getpid(), MULTIPROC_DIR)


# --- GET /metrics


def registry() -> Any:
    """Every process's values (multiprocess mode), or this process's."""
    if not MULTIPROC_DIR:
        return prometheus_client.REGISTRY
    collected = CollectorRegistry()
    multiprocess.MultiProcessCollector(collected, MULTIPROC_DIR)  # type: ignore[no-untyped-call]
    return collected


def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus text format, for `Authorization: Bearer <ANSWERS_METRICS_TOKEN>` only; 404 while unset."""
    token = conf.METRICS_TOKEN
    if not token:
        raise Http404("No metrics here.")
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(credentials.strip().encode(), token.encode()):
        response = HttpResponse(
            "Metrics need Authorization: Bearer <ANSWERS_METRICS_TOKEN>.\n",
            status=401,
            content_type="text/plain",
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(
        prometheus_client.generate_latest(registry()), content_type=prometheus_client.CONTENT_TYPE_LATEST
    )
