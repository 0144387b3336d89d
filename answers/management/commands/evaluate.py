"""`manage.py evaluate NAME`: ask every item of an evaluation set through the pipeline, then its metrics;
`manage.py evaluate --agreement`: the support check against reviewers' flags (docs/evaluation.md).

Exit status: 0; 1 when a `--fail-under` metric is under its value (or null), or with
`--fail-on-regression` when an item regressed; 2 for a usage error (unknown set, run, metric,
provider or user); 130 when Ctrl-C stopped the run (what finished is kept, the run `cancelled`).
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from tqdm import tqdm

from answers.evaluation import selectors, services
from answers.evaluation.agreement import agreement
from answers.evaluation.comparison import GateError, failed_gates, parse_gate
from answers.evaluation.metrics import metric_rows
from answers.evaluation.runner import DEFAULT_CONCURRENCY, Stop, run_items, run_settings
from answers.management.since import add_since_argument, since_start
from answers.models import EvaluationRun, EvaluationSet
from answers.providers.base import Provider
from answers.providers.registry import get_provider
from answers.support.compute import get_support_method

USAGE, GATE, INTERRUPTED = 2, 1, 130


@dataclass(frozen=True)
class _Plan:
    """A run's arguments, checked before anything is asked (a usage error costs no answer)."""

    set: EvaluationSet
    provider: Provider
    asker_id: int | None
    asker: str | None
    gates: list[tuple[str, float]]
    compare: EvaluationRun | str | None  # a run, "previous", or none


class Command(BaseCommand):
    help = "Evaluate citation quality over an evaluation set, or the support check against reviewers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", nargs="?", help="The evaluation set.")
        parser.add_argument("--label", default="", help='What this run tries: "gpt-4.1-mini, prompt 4".')
        parser.add_argument("--provider", help="A provider name or class path (default: ANSWERS_PROVIDER).")
        parser.add_argument("--model", help="The model (default: ANSWERS_MODEL).")
        parser.add_argument(
            "--concurrency", type=int, default=DEFAULT_CONCURRENCY, help="Items asked at once."
        )
        parser.add_argument(
            "--as", dest="as_user", metavar="USERNAME", help="Ask as this user (default: anonymous)."
        )
        parser.add_argument(
            "--json", dest="json_file", metavar="FILE", help="Write the whole run (or report) as JSON."
        )
        parser.add_argument("--compare", metavar="RUN_ID|previous", help="Compare with that run of the set.")
        parser.add_argument(
            "--fail-under",
            action="append",
            default=[],
            metavar="METRIC=VALUE",
            help="Exit 1 when METRIC < VALUE.",
        )
        parser.add_argument(
            "--fail-on-regression", action="store_true", help="Exit 1 when an item regressed."
        )
        parser.add_argument(
            "--agreement", action="store_true", help="The support check against reviewers' flags."
        )
        parser.add_argument(
            "--support-method",
            choices=["lexical", "judge"],
            help="With --agreement: recompute the check this way.",
        )
        add_since_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["agreement"]:
            self._agreement(options)
            return
        plan = self._plan(options)
        if options["concurrency"] < 1:
            raise CommandError("--concurrency must be at least 1.", returncode=USAGE)
        run = self._run(plan, options)
        document = selectors.run_document(run)
        baseline = self._baseline(run, plan.compare)
        if baseline is not None:
            document["compare"] = selectors.comparison(run, baseline)
        self._print(run, document)
        if options["json_file"]:
            Path(options["json_file"]).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        if run.status == EvaluationRun.Status.CANCELLED:
            raise CommandError(
                f"Run {run.pk} was cancelled: {run.metrics['items']} items kept.", returncode=INTERRUPTED
            )
        self._gates(run, document, plan, options)

    # --- before the run

    def _plan(self, options: dict[str, Any]) -> _Plan:
        name = options["name"]
        if not name:
            raise CommandError("Name an evaluation set (or give --agreement).", returncode=USAGE)
        evaluation_set = selectors.set_get(name)
        if evaluation_set is None:
            raise CommandError(f"No evaluation set is called {name!r}.", returncode=USAGE)
        try:
            gates = [parse_gate(text) for text in options["fail_under"]]
        except GateError as exc:
            raise CommandError(str(exc), returncode=USAGE) from None
        asker_id = None
        if options["as_user"]:
            user = get_user_model().objects.filter(username=options["as_user"]).first()
            if user is None:
                raise CommandError(f"No user is called {options['as_user']!r}.", returncode=USAGE)
            asker_id = user.pk
        return _Plan(
            set=evaluation_set,
            provider=_provider(options["provider"], options["model"]),
            asker_id=asker_id,
            asker=options["as_user"],
            gates=gates,
            compare=_compare_target(options["compare"], evaluation_set),
        )

    # --- the run

    def _run(self, plan: _Plan, options: dict[str, Any]) -> EvaluationRun:
        items = selectors.set_items(plan.set)
        settings = run_settings(plan.provider, asker=plan.asker, concurrency=options["concurrency"])
        run = services.run_start(plan.set, label=options["label"], settings=settings)
        stop = Stop()
        bar = tqdm(
            total=len(items),
            desc=f"{plan.set.name} (run {run.pk})",
            unit="item",
            disable=options["verbosity"] == 0,
        )
        try:
            with _stopping_on_sigint(stop):
                return async_to_sync(run_items)(
                    run,
                    items,
                    provider=plan.provider,
                    asker_id=plan.asker_id,
                    concurrency=options["concurrency"],
                    # Items' work on threads of their own, as a server's requests'; inside a
                    # transaction (a test's) on this thread, the only one that sees its rows.
                    threads=0 if connection.in_atomic_block else options["concurrency"],
                    stop=stop,
                    on_result=lambda _data: bar.update(1),
                )
        except KeyboardInterrupt:
            services.run_finish(run, EvaluationRun.Status.CANCELLED)  # a second Ctrl-C: at once
            raise
        except Exception:
            services.run_finish(run, EvaluationRun.Status.FAILED)
            raise
        finally:
            bar.close()

    # --- after the run

    def _baseline(self, run: EvaluationRun, target: EvaluationRun | str | None) -> EvaluationRun | None:
        if target == "previous":
            previous = selectors.previous_run(run)
            if previous is None:
                self.stderr.write("No earlier finished run of this set to compare with.")
            return previous
        return target if isinstance(target, EvaluationRun) else None

    def _print(self, run: EvaluationRun, document: Mapping[str, Any]) -> None:
        compare = document.get("compare")
        self.stdout.write(
            f"Run {run.pk} of {run.set.name!r} ({run.status}){': ' + run.label if run.label else ''}"
        )
        header = ("metric", f"run {run.pk}", f"run {compare['run']}" if compare else "")
        rows = [header, *metric_rows(run.metrics, compare["metrics"] if compare else None)]
        width = [max(len(row[i]) for row in rows) for i in range(3)]
        for row in rows:
            self.stdout.write("  ".join(cell.ljust(width[i]) for i, cell in enumerate(row)).rstrip())
        if compare:
            for title, entries in (
                ("Regressions", compare["regressions"]),
                ("Improvements", compare["improvements"]),
            ):
                self.stdout.write(f"{title} against run {compare['run']}: {len(entries)}")
                for entry in entries:
                    self.stdout.write(f"  {entry['question']}: {'; '.join(entry['changes'])}")

    def _gates(
        self, run: EvaluationRun, document: Mapping[str, Any], plan: _Plan, options: dict[str, Any]
    ) -> None:
        problems = failed_gates(run.metrics, plan.gates)
        compare = document.get("compare")
        if options["fail_on_regression"] and compare and compare["regressions"]:
            problems.append(f"{len(compare['regressions'])} items regressed against run {compare['run']}")
        if problems:
            raise CommandError("; ".join(problems), returncode=GATE)

    # --- --agreement

    def _agreement(self, options: dict[str, Any]) -> None:
        name = options["support_method"]
        method = get_support_method(name) if name else None
        pairs = selectors.agreement_pairs(since=since_start(options), method=method)
        report = agreement(pairs, method=name or "stored")
        width = max(len(key) for key in report)
        for key, value in report.items():
            self.stdout.write(f"{key.ljust(width)}  {'—' if value is None else value}")
        if options["json_file"]:
            Path(options["json_file"]).write_text(json.dumps(report, indent=2) + "\n")


def _provider(name: str | None, model: str | None) -> Provider:
    try:
        provider = get_provider(name)
    except (ImproperlyConfigured, TypeError, AttributeError) as exc:
        raise CommandError(f"--provider {name!r}: {exc}", returncode=USAGE) from None
    if model:
        provider.model = model
    return provider


def _compare_target(raw: str | None, evaluation_set: EvaluationSet) -> EvaluationRun | str | None:
    if raw is None or raw == "previous":
        return raw
    run = selectors.run_get(int(raw)) if raw.isdigit() else None
    if run is None or run.set_id != evaluation_set.pk:
        raise CommandError(
            f"--compare {raw!r}: no run of {evaluation_set.name!r} has that id.", returncode=USAGE
        )
    return run


@contextmanager
def _stopping_on_sigint(stop: Stop) -> Iterator[None]:
    """Ctrl-C asks the run to stop (what finished is kept); a second Ctrl-C interrupts as usual."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGINT, previous)
        stop.request()

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
