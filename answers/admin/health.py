"""The citation health page: per provider/model shares of dropped, renumbered, fallback, stripped,
unsupported citations, grounded but uncited sentences, declined answers, answers that may not
address the question, failed, of answers readers called unhelpful or whose sources they flagged,
and of the reviewers' verdicts (each answer's latest review)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime, time, timedelta
from typing import Any

from django import forms
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from answers.admin.selectors import HealthRow, citation_health, health_total, review_verdicts
from answers.models import Answer, Review

EMPTY = "—"


def percent(share: float | None) -> str:
    return EMPTY if share is None else f"{share * 100:.0f}%"


def number(value: float | None, digits: int = 1) -> str:
    return EMPTY if value is None else f"{value:.{digits}f}"


class HealthPeriodForm(forms.Form):
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(
        required=False, widget=forms.DateInput(attrs={"type": "date"}), help_text="inclusive"
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            raise ValidationError("The period starts after it ends.")
        return data


def health_view(request: HttpRequest, *, model_admin: ModelAdmin[Answer]) -> HttpResponse:
    """The citation health page of the answer admin (same permission as the answers)."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    today = timezone.localdate()
    form = HealthPeriodForm(request.GET or None)
    since_day, until_day = today - timedelta(days=29), today
    if form.is_valid():
        since_day = form.cleaned_data.get("since") or since_day
        until_day = form.cleaned_data.get("until") or until_day
    since, until = _day_start(since_day), _day_start(until_day + timedelta(days=1))
    rows = citation_health(since=since, until=until)
    verdicts = review_verdicts(since=since, until=until)
    total = health_total(rows)
    cells = [_health_cells(r, verdicts.get((r.provider, r.model), {})) for r in rows]
    total_cells = _health_cells(total, _verdicts_total(verdicts.values()))
    columns = [*cells, total_cells] if len(cells) > 1 else cells
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": "Citation health",
        "form": form,
        "since": since_day,
        "until": until_day,
        "rows": cells,
        "total": total_cells,
        "columns": columns,
        "sections": _health_sections(columns),
        "chart": _health_chart([*rows, total] if len(rows) > 1 else rows),
    }
    return TemplateResponse(request, "admin/answers/answer/health.html", context)


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())


def _verdicts_total(groups: Iterable[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for group in groups:
        for verdict, count in group.items():
            total[verdict] = total.get(verdict, 0) + count
    return total


def _health_cells(row: HealthRow, verdicts: dict[str, int]) -> dict[str, Any]:
    """One provider/model's figures as the page shows them; `verdicts`: its answers by latest verdict."""
    reviewed = sum(verdicts.values())
    return {
        "provider": row.provider,
        "model": row.model,
        "answers": row.answers,
        "done": row.done,
        "dropped": percent(row.dropped_share),
        "renumbered": percent(row.renumbered_share),
        "fallback": percent(row.fallback_share),
        "stripped": percent(row.stripped_share),
        "normalized": percent(row.normalized_share),
        "unhelpful": percent(row.unhelpful_share),
        "flagged": percent(row.flagged_share),
        "support_checked": row.support_checked,
        "unsupported": percent(row.unsupported_share),
        "grounded_uncited": percent(row.grounded_uncited_share),
        "declined": percent(row.declined_share),
        "coverage_checked": row.coverage_checked,
        "may_not_address": percent(row.may_not_address_share),
        "failed": percent(row.failed_share),
        "avg_retrieved": number(row.avg_retrieved, 2),
        "avg_cited": number(row.avg_cited, 2),
        "reviewed": reviewed,
        **{
            f"verdict_{verdict}": percent(verdicts.get(verdict, 0) / reviewed if reviewed else None)
            for verdict in Review.Verdict.values
        },
    }


# The table: one row per figure (a column per provider/model, then all of them), in sections; each key is
# one of _health_cells'. What each figure counts, and over which answers, is the template's disclosure.
HEALTH_SECTIONS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Answers", (("answers", "answers"), ("done", "done"), ("failed", "failed"), ("declined", "declined"))),
    (
        "Citations",
        (
            ("dropped", "with dropped sources"),
            ("renumbered", "renumbered"),
            ("fallback", "fallback"),
            ("stripped", "stripped markers"),
            ("normalized", "markers repaired"),
        ),
    ),
    (
        "Support and coverage",
        (
            ("support_checked", "support checked"),
            ("unsupported", "unsupported citations"),
            ("grounded_uncited", "grounded but uncited"),
            ("coverage_checked", "coverage checked"),
            ("may_not_address", "may not address the question"),
        ),
    ),
    ("Readers", (("unhelpful", "readers: unhelpful"), ("flagged", "readers: flagged a source"))),
    ("Sources per done answer", (("avg_retrieved", "avg retrieved"), ("avg_cited", "avg cited"))),
)


def _health_sections(columns: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """HEALTH_SECTIONS, and the reviewers' verdicts (how many answers were reviewed, and the share of each
    latest verdict among them): each figure with its cell in each of `columns`."""
    reviews = (
        ("reviewed", "reviewed answers"),
        *((f"verdict_{value}", f"verdict: {label}") for value, label in Review.Verdict.choices),
    )
    return [
        {
            "title": title,
            "figures": [
                {"key": key, "label": label, "cells": [column[key] for column in columns]}
                for key, label in figures
            ],
        }
        for title, figures in (*HEALTH_SECTIONS, ("Reviewers' verdicts (latest review)", reviews))
    ]


# The chart's bars, each labelled by its name beside it (no colour key): (HealthRow share, label).
CHART_METRICS = (
    ("dropped", "with dropped sources"),
    ("renumbered", "renumbered"),
    ("fallback", "fallback"),
    ("stripped", "stripped markers"),
    ("normalized", "markers repaired (dialects)"),
    ("unhelpful", "readers: unhelpful"),
    ("flagged", "readers: flagged a source"),
    ("unsupported", "unsupported citations"),
    ("grounded_uncited", "grounded but uncited"),
    ("declined", "declined (nothing relevant)"),
    ("may_not_address", "may not address the question"),
    ("failed", "failed"),
)
CHART_LABEL_WIDTH = 200  # the longest label at the chart's 11 px font is ~170 px: none is cut
CHART_BAR_WIDTH = 360
CHART_BAR_HEIGHT = 14
CHART_GAP = 4
CHART_HEADING = 24  # each provider/model's name, over its bars


def _health_chart(rows: Sequence[HealthRow]) -> dict[str, Any]:
    """Geometry for a small server-rendered SVG: per provider/model, its name, then one bar per share
    (0-100%) with its label on the left and its value on the right."""
    groups = []
    y = 0
    step = CHART_BAR_HEIGHT + CHART_GAP
    for row in rows:
        bars = []
        for i, (key, label) in enumerate(CHART_METRICS):
            share = getattr(row, f"{key}_share")
            width = (share or 0.0) * CHART_BAR_WIDTH
            top = y + CHART_HEADING + i * step
            bars.append(
                {
                    "y": top,
                    # Strings, not floats: the template must not localize an SVG coordinate.
                    "width": f"{width:.1f}",
                    "label": label,
                    "title": f"{label}: {percent(share)}",
                    "text_y": top + CHART_BAR_HEIGHT - 3,
                    "value_x": f"{CHART_LABEL_WIDTH + width + 4:.1f}",
                    "value": percent(share),
                }
            )
        name = f"{row.provider} / {row.model}" if row.model else row.provider
        groups.append({"name": name, "name_y": y + 16, "bars": bars})
        y += CHART_HEADING + len(CHART_METRICS) * step + 12
    return {
        "width": CHART_LABEL_WIDTH + CHART_BAR_WIDTH + 44,
        "height": y,
        "label_x": CHART_LABEL_WIDTH - 6,
        "bar_x": CHART_LABEL_WIDTH,
        "bar_height": CHART_BAR_HEIGHT,
        "groups": groups,
    }
