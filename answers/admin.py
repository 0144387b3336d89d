"""The QA reviewers' pages: answers and their trails (read-only), reviews, export, citation health."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Field, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from answers import admin_content  # noqa: F401  (registers the content pages)
from answers.admin_selectors import (
    HealthRow,
    answer_detail_queryset,
    answer_list_annotate,
    answers_export_rows,
    citation_health,
    health_total,
)
from answers.citations import render_marker, scan_markers
from answers.models import Answer, AnswerSource, Review, ReviewSourceFlag
from answers.rendering import link_url

EMPTY = "—"

if TYPE_CHECKING:
    # The admin classes are generic only to the type checker (no django_stubs_ext monkeypatch at runtime).
    _AnswerAdminBase = admin.ModelAdmin[Answer]
    _ReviewAdminBase = admin.ModelAdmin[Review]
    _FlagInlineBase = admin.TabularInline[ReviewSourceFlag, Review]
else:
    _AnswerAdminBase = _ReviewAdminBase = admin.ModelAdmin
    _FlagInlineBase = admin.TabularInline


def _join(parts: Iterable[Any]) -> SafeString:
    """Concatenate already-built HTML pieces; anything not marked safe is escaped."""
    return format_html_join("", "{}", ((part,) for part in parts))


def _annotation(obj: Answer, name: str) -> Any:
    return getattr(obj, name)


def _percent(share: float | None) -> str:
    return EMPTY if share is None else f"{share * 100:.0f}%"


def _number(value: float | None, digits: int = 1) -> str:
    return EMPTY if value is None else f"{value:.{digits}f}"


# --- The raw and final texts, markers highlighted --------------------------------------------------


def render_raw_text(
    raw_text: str, *, source_count: int, mapping: dict[int, int], rewritten: bool
) -> SafeString:
    """The raw text with every marker highlighted and what became of it.

    A marker whose members all point at no source is struck through (strip
    removes it); any other marker is followed by its rewrite (`→ [2]`) when the
    answer was finalized with citations, and its stripped members struck through.
    """
    parts: list[Any] = []
    position = 0
    for marker in scan_markers(raw_text):
        parts.append(raw_text[position : marker.start])
        written = raw_text[marker.start : marker.end]
        kept = [m for m in marker.members if 1 <= m <= source_count]
        gone = [m for m in marker.members if not 1 <= m <= source_count]
        if not kept:
            parts.append(
                format_html(
                    '<del class="qa-stripped" title="stripped: points at no source">{}</del>', written
                )
            )
        else:
            parts.append(format_html('<mark class="qa-marker">{}</mark>', written))
            if gone:
                parts.append(
                    format_html(
                        ' <span class="qa-note">(stripped <del class="qa-stripped">{}</del>)</span>',
                        ", ".join(str(m) for m in gone),
                    )
                )
            if rewritten:
                new = [mapping[m] for m in kept if m in mapping]
                rewrite = render_marker(new) if new and len(new) == len(kept) else "?"
                parts.append(format_html('<span class="qa-rewrite"> → {}</span>', rewrite))
        position = marker.end
    parts.append(raw_text[position:])
    return _join(parts)


def render_final_text(final_text: str, *, titles: dict[int, str]) -> SafeString:
    """The final text with every marker highlighted; hovering names the sources it cites."""
    parts: list[Any] = []
    position = 0
    for marker in scan_markers(final_text):
        parts.append(final_text[position : marker.start])
        names = "; ".join(f"[{m}] {titles.get(m, '?')}" for m in marker.members)
        parts.append(
            format_html(
                '<mark class="qa-marker" title="{}">{}</mark>', names, final_text[marker.start : marker.end]
            )
        )
        position = marker.end
    parts.append(final_text[position:])
    return _join(parts)


def _sources(answer: Answer) -> list[AnswerSource]:
    return sorted(answer.sources.all(), key=lambda s: s.original_number)


# --- List filters -------------------------------------------------------------------------------


class _YesNoFilter(admin.SimpleListFilter):
    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("no", "No")]


class HasDroppedFilter(_YesNoFilter):
    title = "has dropped sources"
    parameter_name = "dropped"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        if self.value() == "yes":
            return queryset.filter(dropped_count__gt=0)
        if self.value() == "no":
            return queryset.filter(dropped_count=0)
        return None


class RenumberedFilter(_YesNoFilter):
    title = "renumbered"
    parameter_name = "renumbered"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        if self.value() in ("yes", "no"):
            return queryset.filter(renumbered=self.value() == "yes")
        return None


class HasStrippedFilter(_YesNoFilter):
    title = "has stripped markers"
    parameter_name = "stripped"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        if self.value() == "yes":
            return queryset.exclude(stripped=[])
        if self.value() == "no":
            return queryset.filter(stripped=[])
        return None


class VerdictFilter(admin.SimpleListFilter):
    title = "latest review verdict"
    parameter_name = "verdict"
    UNREVIEWED = "unreviewed"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            (self.UNREVIEWED, "Unreviewed"),
            *((str(v), str(label)) for v, label in Review.Verdict.choices),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        value = self.value()
        if value == self.UNREVIEWED:
            return queryset.filter(latest_verdict__isnull=True)
        if value in Review.Verdict.values:
            return queryset.filter(latest_verdict=value)
        return None


# --- Answers: the audit record, read-only ------------------------------------------------------


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


@admin.register(Answer)
class AnswerAdmin(_AnswerAdminBase):
    list_display = (
        "question_short",
        "status",
        "delivery",
        "provider_model",
        "cited_retrieved",
        "dropped",
        "renumbered",
        "fallback",
        "stripped_count",
        "verdict",
        "created_at",
    )
    list_filter = (
        "status",
        "delivery",
        "provider",
        "model",
        "fallback",
        HasDroppedFilter,
        RenumberedFilter,
        HasStrippedFilter,
        VerdictFilter,
        "created_at",
    )
    search_fields = ("question", "raw_text", "final_text")
    ordering = ("-created_at", "-id")
    list_per_page = 50
    show_full_result_count = False
    actions = ("export_trails",)
    change_list_template = "admin/answers/answer/change_list.html"
    change_form_template = "admin/answers/answer/change_form.html"

    fieldsets_done = (
        (None, {"fields": ("question", "status", "delivery", "created_at", "finished_at")}),
        (
            "Raw text → final text",
            {"fields": ("text_comparison", "renumbering", "stripped_members", "fallback")},
        ),
        ("Sources, in retrieval order", {"fields": ("sources_table",)}),
        ("Retrieval", {"fields": ("retrieval",)}),
        ("Generation", {"fields": ("provider", "model", "prompt_version", "truncated", "timings")}),
        ("Reviews", {"fields": ("reviews",)}),
    )
    error_fieldset = ("Error", {"fields": ("error_kind", "error_message")})

    # The audit record: nobody adds, changes or deletes it through admin.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Answer | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Answer | None = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Answer | None = None) -> bool:
        user = request.user
        return user.is_active and user.has_perms(["answers.view_answer", "answers.view_trail"])

    def get_queryset(self, request: HttpRequest) -> QuerySet[Answer]:
        return answer_list_annotate(super().get_queryset(request))

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Answer | None:
        queryset = answer_detail_queryset(self.get_queryset(request))
        field = Answer._meta.get_field(from_field) if from_field else Answer._meta.pk
        if not isinstance(field, Field):
            return None
        try:
            return queryset.get(**{field.name: field.to_python(object_id)})
        except (Answer.DoesNotExist, ValidationError, ValueError):
            return None

    def get_fieldsets(self, request: HttpRequest, obj: Answer | None = None) -> Any:
        fieldsets = list(self.fieldsets_done)
        if obj is not None and (obj.status == Answer.Status.FAILED or obj.error_kind):
            fieldsets.insert(1, self.error_fieldset)
        return fieldsets

    def get_readonly_fields(self, request: HttpRequest, obj: Answer | None = None) -> list[str]:
        return [name for _, options in self.get_fieldsets(request, obj) for name in options["fields"]]

    def get_urls(self) -> list[URLPattern]:
        health = path("health/", self.admin_site.admin_view(self.health_view), name="answers_answer_health")
        return [health, *super().get_urls()]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        extra_context = dict(extra_context or {})
        if request.user.has_perm("answers.add_review"):
            extra_context["add_review_url"] = f"{reverse('admin:answers_review_add')}?answer={object_id}"
        return super().change_view(request, object_id, form_url, extra_context)

    # --- list columns

    @admin.display(description="question", ordering="question")
    def question_short(self, obj: Answer) -> str:
        return obj.question if len(obj.question) <= 100 else obj.question[:99] + "…"

    @admin.display(description="provider / model", ordering="provider")
    def provider_model(self, obj: Answer) -> str:
        return f"{obj.provider} / {obj.model}" if obj.model else obj.provider

    @admin.display(description="cited/retrieved", ordering="cited_count")
    def cited_retrieved(self, obj: Answer) -> str:
        return f"{_annotation(obj, 'cited_count')}/{_annotation(obj, 'retrieved_count')}"

    @admin.display(description="dropped", ordering="dropped_count")
    def dropped(self, obj: Answer) -> int:
        return int(_annotation(obj, "dropped_count"))

    @admin.display(description="renumbered", boolean=True, ordering="renumbered")
    def renumbered(self, obj: Answer) -> bool:
        return bool(_annotation(obj, "renumbered"))

    @admin.display(description="stripped")
    def stripped_count(self, obj: Answer) -> int:
        return len(obj.stripped)

    @admin.display(description="review verdict", ordering="latest_verdict")
    def verdict(self, obj: Answer) -> str:
        value = _annotation(obj, "latest_verdict")
        return str(Review.Verdict(value).label) if value in Review.Verdict.values else EMPTY

    # --- the answer's page

    @admin.display(description="raw text and final text")
    def text_comparison(self, obj: Answer) -> SafeString:
        sources = _sources(obj)
        mapping = {s.original_number: s.final_number for s in sources if s.final_number is not None}
        finalized = obj.status == Answer.Status.DONE
        raw = render_raw_text(
            obj.raw_text, source_count=len(sources), mapping=mapping, rewritten=finalized and not obj.fallback
        )
        if finalized:
            titles = {s.final_number: s.title for s in sources if s.final_number is not None}
            final: Any = render_final_text(obj.final_text, titles=titles)
        else:
            final = format_html('<span class="qa-note">(no final text: the answer is {})</span>', obj.status)
        return format_html(
            '<div class="qa-sbs"><div><h4>Raw text (what the model wrote)</h4>'
            '<div class="qa-text">{}</div></div>'
            '<div><h4>Final text (what readers got)</h4><div class="qa-text">{}</div></div></div>',
            raw,
            final,
        )

    @admin.display(description="renumbering")
    def renumbering(self, obj: Answer) -> SafeString:
        items = []
        for s in _sources(obj):
            if s.status == AnswerSource.Status.DROPPED:
                items.append(format_html("<li>{} dropped: <q>{}</q></li>", s.original_number, s.title))
            elif s.final_number is not None:
                items.append(
                    format_html(
                        '<li class="{}">{} → {}: <q>{}</q></li>',
                        "qa-moved" if s.final_number != s.original_number else "qa-same",
                        s.original_number,
                        s.final_number,
                        s.title,
                    )
                )
            else:
                items.append(format_html("<li>{} not finalized: <q>{}</q></li>", s.original_number, s.title))
        if not items:
            return format_html("{}", "No sources were retrieved.")
        note = " (fallback: the text cites nothing, every source kept as retrieved)" if obj.fallback else ""
        return format_html('<ul class="qa-mapping">{}</ul>{}', _join(items), note)

    @admin.display(description="stripped markers")
    def stripped_members(self, obj: Answer) -> SafeString:
        if not obj.stripped:
            return format_html("{}", "none")
        return format_html(
            "{} stripped (pointing at no source): {}",
            len(obj.stripped),
            _join(format_html('<del class="qa-stripped">[{}]</del> ', m) for m in obj.stripped),
        )

    @admin.display(description="sources")
    def sources_table(self, obj: Answer) -> SafeString:
        rows = []
        for s in _sources(obj):
            final: Any = (
                s.final_number if s.final_number is not None else format_html("<em>{}</em>", "dropped")
            )
            if s.status == AnswerSource.Status.PENDING:
                final = EMPTY
            url: Any = (
                format_html('<a href="{}" rel="noopener noreferrer">{}</a>', s.url, s.url)
                if link_url(s.url)
                else s.url or EMPTY
            )
            rows.append(
                format_html(
                    '<tr class="qa-source-{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>'
                    "<td>{}<br>{}</td><td><details><summary>{} chars</summary>"
                    '<div class="qa-text">{}</div></details></td><td>{}</td><td>{}</td></tr>',
                    s.status or "pending",
                    s.original_number,
                    final,
                    s.get_status_display() if s.status else "not finalized",
                    _number(s.rerank_score, 3),
                    _number(s.lexical_score, 3),
                    s.title,
                    url,
                    len(s.excerpt),
                    s.excerpt,
                    EMPTY if s.first_cited_offset is None else s.first_cited_offset,
                    s.citation_count,
                )
            )
        if not rows:
            return format_html("{}", "No sources were retrieved.")
        return format_html(
            '<table class="qa-table"><thead><tr><th>original</th><th>final</th><th>status</th>'
            "<th>score</th><th>lexical</th><th>title / URL (snapshot)</th><th>excerpt</th>"
            "<th>first cited at (raw offset)</th><th>markers</th></tr></thead><tbody>{}</tbody></table>",
            _join(rows),
        )

    @admin.display(description="retrieval trace")
    def retrieval(self, obj: Answer) -> SafeString:
        trace = obj.retrieval_trace if isinstance(obj.retrieval_trace, dict) else {}
        summary = format_html(
            "<p>threshold (min score) {} · entity cap (max sources) {} · candidates {} · backend {} · "
            "reranker {} · query terms {}</p>",
            obj.min_score,
            obj.max_sources,
            trace.get("candidates", EMPTY),
            trace.get("backend", EMPTY),
            trace.get("reranker", EMPTY),
            ", ".join(str(t) for t in trace.get("query_terms", []) or []) or EMPTY,
        )
        sections = [summary]
        for key, heading in (
            ("cut_by_threshold", "Cut by the threshold (score below min score)"),
            ("cut_by_cap", "Cut by the entity cap (beyond max sources)"),
        ):
            entries = [e for e in trace.get(key, []) or [] if isinstance(e, dict)]
            rows = format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                (
                    (
                        e.get("title", EMPTY),
                        e.get("document_id", EMPTY),
                        e.get("chunk_id", EMPTY),
                        e.get("score", EMPTY),
                        e.get("lexical_score", EMPTY),
                    )
                    for e in entries
                ),
            )
            if entries:
                sections.append(
                    format_html(
                        '<h4>{} — {}</h4><table class="qa-table"><thead><tr><th>title</th><th>document</th>'
                        "<th>chunk</th><th>score</th><th>lexical</th></tr></thead><tbody>{}</tbody></table>",
                        heading,
                        len(entries),
                        rows,
                    )
                )
            else:
                sections.append(format_html("<h4>{} — none</h4>", heading))
        sections.append(
            format_html(
                '<details><summary>Full trace (JSON)</summary><pre class="qa-text">{}</pre></details>',
                json.dumps(obj.retrieval_trace, indent=2, ensure_ascii=False, default=str),
            )
        )
        return _join(sections)

    @admin.display(description="timings (ms)")
    def timings(self, obj: Answer) -> str:
        return (
            f"retrieval {_number(obj.retrieval_ms)} · first piece {_number(obj.first_piece_ms)} · "
            f"generation {_number(obj.generation_ms)} · total {_number(obj.total_ms)}"
        )

    @admin.display(description="reviews")
    def reviews(self, obj: Answer) -> SafeString:
        rows = []
        for review in obj.reviews.all():
            flags = format_html_join(
                "",
                "<li>[{}] {}{}</li>",
                (
                    (f.source.original_number, f.get_flag_display(), f": {f.note}" if f.note else "")
                    for f in review.source_flags.all()
                ),
            )
            rows.append(
                format_html(
                    '<tr><td><a href="{}">{}</a></td><td>{}</td><td>{}</td><td class="qa-notes">{}</td>'
                    "<td><ul>{}</ul></td></tr>",
                    reverse("admin:answers_review_change", args=[review.pk]),
                    review.get_verdict_display(),
                    review.reviewer.get_username() if review.reviewer else EMPTY,
                    review.created_at.strftime("%Y-%m-%d %H:%M"),
                    review.notes,
                    flags,
                )
            )
        if not rows:
            return format_html("{}", "Not reviewed yet.")
        return format_html(
            '<table class="qa-table"><thead><tr><th>verdict</th><th>reviewer</th><th>at</th><th>notes</th>'
            "<th>source flags</th></tr></thead><tbody>{}</tbody></table>",
            _join(rows),
        )

    # --- export

    @admin.action(description="Export the selected answers' trails (JSON Lines)", permissions=["view"])
    def export_trails(self, request: HttpRequest, queryset: QuerySet[Answer]) -> HttpResponse:
        body = "".join(
            json.dumps(row, ensure_ascii=False) + "\n" for row in answers_export_rows(queryset=queryset)
        )
        response = HttpResponse(body, content_type="application/jsonl; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="answer-trails.jsonl"'
        return response

    # --- citation health

    def health_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
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
            **self.admin_site.each_context(request),
            "opts": self.opts,
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
        "dropped": _percent(row.dropped_share),
        "renumbered": _percent(row.renumbered_share),
        "fallback": _percent(row.fallback_share),
        "stripped": _percent(row.stripped_share),
        "failed": _percent(row.failed_share),
        "avg_retrieved": _number(row.avg_retrieved, 2),
        "avg_cited": _number(row.avg_cited, 2),
    }


CHART_METRICS = (
    ("dropped", "with dropped sources", "#d9822b"),
    ("renumbered", "renumbered", "#447e9b"),
    ("fallback", "fallback", "#8a6fb0"),
    ("stripped", "stripped markers", "#c0392b"),
    ("failed", "failed", "#555555"),
)
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
                    "label": f"{label}: {_percent(shares[key])}",
                    "text_x": f"{CHART_LABEL_WIDTH + width + 4:.1f}",
                    "text_y": y + i * (CHART_BAR_HEIGHT + 2) + CHART_BAR_HEIGHT - 2,
                    "value": _percent(shares[key]),
                }
            )
        group_height = len(CHART_METRICS) * (CHART_BAR_HEIGHT + 2)
        name = f"{row.provider} / {row.model}" if row.model else row.provider
        groups.append({"name": name, "label_y": y + group_height // 2 + 4, "bars": bars})
        y += group_height + 14
    return {
        "width": CHART_LABEL_WIDTH + CHART_BAR_WIDTH + 60,
        "height": y + 30,
        "legend_y": y + 10,
        "legend": [
            {"x": 10 + i * 130, "label": label, "colour": colour}
            for i, (_, label, colour) in enumerate(CHART_METRICS)
        ],
        "groups": groups,
    }


# --- Reviews: the only thing reviewers write --------------------------------------------------


def _answer_id_from(request: HttpRequest) -> uuid.UUID | None:
    raw = request.POST.get("answer") or request.GET.get("answer")
    try:
        return uuid.UUID(str(raw)) if raw else None
    except ValueError:
        return None


def _owns(request: HttpRequest, review: Review | None) -> bool:
    """Reviewers change only what they wrote; superusers anything."""
    return review is None or request.user.is_superuser or review.reviewer_id == request.user.pk


class ReviewSourceFlagInline(_FlagInlineBase):
    model = ReviewSourceFlag
    fields = ("source", "flag", "note")
    extra = 1

    def get_formset(
        self, request: HttpRequest, obj: Review | None = None, **kwargs: Any
    ) -> type[BaseInlineFormSet[Any, Any, Any]]:
        formset = super().get_formset(request, obj, **kwargs)
        answer_id = obj.answer_id if obj is not None else _answer_id_from(request)
        field = formset.form.base_fields.get("source")
        if isinstance(field, forms.ModelChoiceField):
            # Only the reviewed answer's own sources can be flagged.
            field.queryset = (
                AnswerSource.objects.filter(answer_id=answer_id).order_by("original_number")
                if answer_id
                else AnswerSource.objects.none()
            )
        return formset

    def has_add_permission(self, request: HttpRequest, obj: Review | None = None) -> bool:
        return super().has_add_permission(request, obj) and _owns(request, obj)

    # For an inline, `obj` is the parent review (the stubs type it as the inline's model).
    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and _owns(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and _owns(request, obj)


@admin.register(Review)
class ReviewAdmin(_ReviewAdminBase):
    list_display = ("answer_question", "verdict", "reviewer", "created_at", "updated_at")
    list_filter = ("verdict", "created_at")
    list_select_related = ("answer", "reviewer")
    search_fields = ("answer__question", "notes")
    ordering = ("-created_at", "-id")
    raw_id_fields = ("answer",)
    inlines = (ReviewSourceFlagInline,)
    fields = ("answer", "verdict", "notes", "reviewer", "created_at", "updated_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Review | None = None) -> tuple[str, ...]:
        # A review stays on the answer it was written for.
        return ("reviewer", "created_at", "updated_at", *(("answer",) if obj is not None else ()))

    def has_change_permission(self, request: HttpRequest, obj: Review | None = None) -> bool:
        return super().has_change_permission(request, obj) and _owns(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Review | None = None) -> bool:
        # Verdicts are kept with their reviewer and time.
        return False

    def save_model(self, request: HttpRequest, obj: Review, form: Any, change: bool) -> None:
        if not change:
            obj.reviewer = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)

    @admin.display(description="answer", ordering="answer__question")
    def answer_question(self, obj: Review) -> SafeString:
        question = obj.answer.question
        return format_html(
            '<a href="{}">{}</a>',
            reverse("admin:answers_answer_change", args=[obj.answer_id]),
            question if len(question) <= 80 else question[:79] + "…",
        )
