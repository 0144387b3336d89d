"""`manage.py evaluation import|export|from-reviews`: an evaluation set's items (docs/evaluation.md).

evaluation import NAME FILE.jsonl [--replace] [--if-missing]
evaluation export NAME [FILE]
evaluation from-reviews NAME [--since YYYY-MM-DD]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from answers.evaluation import selectors, services
from answers.evaluation.jsonl import ItemsRefused, dump_items, parse_items
from answers.evaluation.services import ItemsReport
from answers.management.since import add_since_argument, since_start
from answers.models import EvaluationSet

USAGE_ERROR = 2


class Command(BaseCommand):
    help = "Import, export or build from reviewed answers an evaluation set's items (JSON Lines)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="import|export|from-reviews")
        load = actions.add_parser("import", help="Add a JSON Lines file's items to the set (created if new).")
        load.add_argument("name")
        load.add_argument("file")
        load.add_argument("--replace", action="store_true", help="Replace the set's items with the file's.")
        load.add_argument(
            "--if-missing",
            action="store_true",
            help="Do nothing when the set exists (how `make run` loads `demo`).",
        )
        dump = actions.add_parser("export", help="Write the set's items as JSON Lines (stdout without FILE).")
        dump.add_argument("name")
        dump.add_argument("file", nargs="?")
        reviews = actions.add_parser(
            "from-reviews", help="Add an item for each reviewed answer, as its latest review says."
        )
        reviews.add_argument("name")
        add_since_argument(reviews)

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "import":
            self._import(options)
        elif action == "export":
            self._export(options)
        else:
            evaluation_set = _set_for_adding(options["name"])
            self._report(services.items_from_reviews(evaluation_set, since=since_start(options)))

    def _import(self, options: dict[str, Any]) -> None:
        name = options["name"]
        if options["if_missing"] and selectors.set_get(name) is not None:
            self.stdout.write(f"The set {name!r} exists: nothing imported.")
            return
        path = Path(options["file"])
        try:
            with path.open(encoding="utf-8") as lines:
                items = parse_items(lines)
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}", returncode=USAGE_ERROR) from None
        except (ItemsRefused, UnicodeDecodeError) as exc:
            raise CommandError(f"{path}: {exc}; nothing was imported.", returncode=USAGE_ERROR) from None
        evaluation_set = _set_for_adding(name)
        self._report(services.items_add(evaluation_set, items, replace=options["replace"]))

    def _export(self, options: dict[str, Any]) -> None:
        evaluation_set = _existing_set(options["name"])
        lines = dump_items([selectors.item_spec(item) for item in selectors.set_items(evaluation_set)])
        if options["file"] is None:
            for line in lines:
                self.stdout.write(line, ending="")
            return
        with Path(options["file"]).open("w", encoding="utf-8") as out:
            count = sum(1 for line in lines if out.write(line))
        self.stderr.write(f"Wrote {count} items of {evaluation_set.name!r} to {options['file']}.")

    def _report(self, report: ItemsReport) -> None:
        name = report.set.name
        if report.replaced:
            self.stdout.write(f"Removed the {report.replaced} items {name!r} had.")
        self.stdout.write(f"Added {report.added} items to {name!r} ({report.set.items.count()} in all).")
        for what, why in report.skipped:
            self.stdout.write(f"  skipped {what}: {why}")
        for key in report.unknown_keys:
            self.stderr.write(f"  warning: {key!r} names no indexed document (kept)")


def _existing_set(name: str) -> EvaluationSet:
    evaluation_set = selectors.set_get(name)
    if evaluation_set is None:
        raise CommandError(f"No evaluation set is called {name!r}.", returncode=USAGE_ERROR)
    return evaluation_set


def _set_for_adding(name: str) -> EvaluationSet:
    try:
        EvaluationSet._meta.get_field("name").run_validators(name)
    except ValidationError as exc:
        raise CommandError(f"{name!r} is not a set name: {exc.messages[0]}", returncode=USAGE_ERROR) from None
    return services.set_get_or_create(name)
