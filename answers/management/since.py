"""The `--since DATE` option the audit commands share: a day, read as its start in the current time zone."""

from __future__ import annotations

import argparse
from datetime import date, datetime, time
from typing import Any

from django.core.management.base import CommandParser
from django.utils import timezone


def _date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date (YYYY-MM-DD)") from None


def add_since_argument(parser: CommandParser) -> None:
    parser.add_argument("--since", type=_date, help="Only answers created on or after this day (YYYY-MM-DD).")


def since_start(options: dict[str, Any]) -> datetime | None:
    """The start of the `--since` day (None without the option)."""
    day: date | None = options["since"]
    if day is None:
        return None
    return datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())
