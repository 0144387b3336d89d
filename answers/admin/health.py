"""The citation health page: per provider/model shares of dropped, renumbered, fallback, stripped,
unsupported citations, grounded but uncited sentences, declined answers, answers that may not
address the question, failed, and of answers readers called unhelpful or whose sources they flagged."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, time, timedelta
from typing import Any

from django import forms
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from answers.admin.selectors import HealthRow, citation_health, health_total
from answers.models import Answer

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
    rows = citation_health(since=_day_start(since_day), until=_day_start(until_day + timedelta(days=1)))
    total = health_total(rows)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": "Citation health",
        "form": form,
        "since": since_day,
        "until": until_day,
        "rows": [_health_cells(r) for r in rows],
        "total": _health_cells(total),
        "chart": _health_chart([*rows, total] if len(rows) > 1 else rows),
    }
    return TemplateResponse(request, "admin/answers/answer/health.html", context)


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())


def _health_cells(row: HealthRow) -> dict[str, Any]:
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
    }


CHART_METRICS = (
    ("dropped", "with dropped sources", "#d9822b"),
    ("renumbered", "renumbered", "#447e9b"),
    ("fallback", "fallback", "#8a6fb0"),
    ("stripped", "stripped markers", "#c0392b"),
    ("normalized", "markers repaired (dialects)", "#2e8b57"),
    ("unhelpful", "readers: unhelpful", "#b8860b"),
    ("flagged", "readers: flagged a source", "#8b4513"),
    ("unsupported", "unsupported citations", "#b03060"),
    ("grounded_uncited", "grounded but uncited", "#1f6f8b"),
    ("declined", "declined (nothing relevant)", "#6b8e23"),
    ("may_not_address", "may not address the question", "#a0522d"),
    ("failed", "failed", "#555555"),
)
LEGEND_COLUMNS = 4
CHART_LABEL_WIDTH = 220
CHART_BAR_WIDTH = 400
CHART_BAR_HEIGHT = 12


def _health_chart(rows: Sequence[HealthRow]) -> dict[str, Any]:
    """Geometry for a small server-rendered SVG: one group of bars (shares, 0-100%) per provider/model."""
    groups = []
    y = 10
    for row in rows:
        shares = {key: getattr(row, f"{key}_share") for key, _, _ in CHART_METRICS}
        bars = []
        for i, (key, label, colour) in enumerate(CHART_METRICS):
            share = shares[key] or 0.0
            width = share * CHART_BAR_WIDTH
            bars.append(
                {
                    "x": CHART_LABEL_WIDTH,
                    "y": y + i * (CHART_BAR_HEIGHT + 2),
                    # Strings, not floats: the template must not localize an SVG coordinate.
                    "width": f"{width:.1f}",
                    "height": CHART_BAR_HEIGHT,
                    "colour": colour,
                    "label": f"{label}: {percent(shares[key])}",
                    "text_x": f"{CHART_LABEL_WIDTH + width + 4:.1f}",
                    "text_y": y + i * (CHART_BAR_HEIGHT + 2) + CHART_BAR_HEIGHT - 2,
                    "value": percent(shares[key]),
                }
            )
        group_height = len(CHART_METRICS) * (CHART_BAR_HEIGHT + 2)
        name = f"{row.provider} / {row.model}" if row.model else row.provider
        groups.append({"name": name, "label_y": y + group_height // 2 + 4, "bars": bars})
        y += group_height + 14
    # The legend, four to a line, so it stays within the chart's width.
    return {
        "width": CHART_LABEL_WIDTH + CHART_BAR_WIDTH + 60,
        "height": y + 16 + 16 * -(-len(CHART_METRICS) // LEGEND_COLUMNS),
        "legend": [
            {
                "x": 10 + (i % LEGEND_COLUMNS) * 170,
                "y": y + 10 + (i // LEGEND_COLUMNS) * 16,
                "text_x": 24 + (i % LEGEND_COLUMNS) * 170,
                "text_y": y + 19 + (i // LEGEND_COLUMNS) * 16,
                "label": label,
                "colour": colour,
            }
            for i, (_, label, colour) in enumerate(CHART_METRICS)
        ],
        "groups": groups,
    }
