"""The answers' admin: the list with its trail columns and filters, and the read-only answer page.

The answer page shows what the pipeline stored (Answer.markers, AnswerSource
rows) and decides nothing itself; its panels are templates in
templates/admin/answers/answer/trail/, fed by answers.admin.panels (one module a panel).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import Field, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import URLPattern, path, reverse
from django.utils.safestring import SafeString

from answers.admin.conversations import FollowUpFilter, conversation_panel
from answers.admin.evaluation import add_to_evaluation_set
from answers.admin.exports import AnswerResource, QAExportMixin
from answers.admin.filters import (
    GroundedUncitedFilter,
    HasDroppedFilter,
    HasNormalizedFilter,
    HasStrippedFilter,
    MayNotAddressFilter,
    OriginFilter,
    ReaderFlaggedFilter,
    ReaderUnhelpfulFilter,
    RenumberedFilter,
    UnsupportedFilter,
    VerdictFilter,
)
from answers.admin.health import EMPTY, health_view, number
from answers.admin.panels.coverage import coverage_panel
from answers.admin.panels.dense import dense_panel
from answers.admin.panels.native import native_panel
from answers.admin.panels.sources import source_rows
from answers.admin.panels.support import support_panel
from answers.admin.panels.trail import trail_panels
from answers.admin.selectors import answer_detail_queryset, answer_list_annotate, answers_export_rows
from answers.models import Answer, AnswerSource, Review
from answers.payloads import answer_done_payload
from answers.selectors import may_read_trails, parse_answer_id

if TYPE_CHECKING:
    # The admin classes are generic only to the type checker (no django_stubs_ext monkeypatch at runtime).
    _AnswerAdminBase = admin.ModelAdmin[Answer]
else:
    _AnswerAdminBase = admin.ModelAdmin

PANELS = "admin/answers/answer/trail/"
# The list's question column: a line or two at 1280 px (the whole question is on the answer's page).
QUESTION_CHARS = 80
TRACE_COLUMNS = ("title", "document_id", "chunk_id", "score", "lexical_score")


def _copy_title(entry: dict[str, Any]) -> str:
    """A cut entry's title; for a copy, with the document and chunk kept in its place."""
    title = str(entry.get("title", EMPTY))
    same_as = entry.get("same_as")
    if not isinstance(same_as, dict):
        return title
    return f"{title} (same as chunk {same_as.get('chunk_id')} of document {same_as.get('document_id')})"


def _annotation(obj: Answer, name: str) -> Any:
    return getattr(obj, name)


def _sources(answer: Answer) -> list[AnswerSource]:
    return sorted(answer.sources.all(), key=lambda s: s.original_number)


def _panel(name: str, **context: Any) -> SafeString:
    return render_to_string(PANELS + name, context)


# --- Answers: the audit record, read-only ------------------------------------------------------


class AnswerAdmin(QAExportMixin, _AnswerAdminBase):
    # The key columns, to fit a 1280 px window; the rest of the trail (delivery, dropped, renumbered,
    # stripped, fallback) is on the answer's page and behind the filters.
    list_display = (
        "question_short",
        "status_shown",
        "provider_model",
        "final_sources",
        "support_found",
        "coverage_found",
        "verdict",
        "feedback_unresolved",
        "created_at",
    )
    list_filter = (
        "status",
        "delivery",
        "provider",
        "model",
        "fallback",
        "declined",
        HasDroppedFilter,
        RenumberedFilter,
        HasStrippedFilter,
        HasNormalizedFilter,
        UnsupportedFilter,
        GroundedUncitedFilter,
        MayNotAddressFilter,
        VerdictFilter,
        ReaderUnhelpfulFilter,
        ReaderFlaggedFilter,
        FollowUpFilter,
        OriginFilter,
        "created_at",
    )
    search_fields = ("question", "raw_text", "final_text")
    ordering = ("-created_at", "-id")
    list_per_page = 50
    show_full_result_count = False
    actions = ("export_trails", add_to_evaluation_set)
    change_list_template = "admin/answers/answer/change_list.html"
    # The list's own template carries the Export link (import-export's would hide the health link).
    import_export_change_list_template = None
    resource_classes = (AnswerResource,)
    change_form_template = "admin/answers/answer/change_form.html"

    fieldsets_done = (
        (None, {"fields": ("question", "status", "delivery", "declined_note", "created_at", "finished_at")}),
        ("Conversation", {"fields": ("conversation_turns",)}),
        (
            "Raw text → final text",
            {
                "fields": (
                    "text_comparison",
                    "marker_decisions",
                    "native_citations",
                    "renumbering",
                    "normalized_markers",
                    "stripped_members",
                    "fallback",
                    "rules_version",
                )
            },
        ),
        ("Support check: which sentences the sources back", {"fields": ("support_check",)}),
        ("Coverage: does the answer address the question", {"fields": ("coverage_check",)}),
        ("Sources, in retrieval order", {"fields": ("sources_table",)}),
        ("Reader feedback", {"fields": ("reader_feedback",)}),
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
        # The trail API's own rule (answers.api.permissions): a QA reviewer sees both, staff without
        # the permission are refused by both (403).
        return may_read_trails(request.user)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Answer]:
        return answer_list_annotate(super().get_queryset(request))

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Answer | None:
        queryset = answer_detail_queryset(self.get_queryset(request))
        field = Answer._meta.get_field(from_field) if from_field else Answer._meta.pk
        if not isinstance(field, Field):
            return None
        if field is Answer._meta.pk and parse_answer_id(object_id) is None:
            return None  # the id in its one form only, as everywhere (an unknown answer otherwise)
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
        def health(request: HttpRequest) -> HttpResponse:
            return health_view(request, model_admin=self)

        return [
            path("health/", self.admin_site.admin_view(health), name="answers_answer_health"),
            *super().get_urls(),
        ]

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
        question = obj.question
        return question if len(question) <= QUESTION_CHARS else question[: QUESTION_CHARS - 1] + "…"

    @admin.display(description="status", ordering="status")
    def status_shown(self, obj: Answer) -> str:
        """The status, and for a done answer no source reached the threshold for: "declined"."""
        if obj.status == Answer.Status.DONE and obj.declined:
            return "Declined"
        return str(obj.get_status_display())

    @admin.display(description="provider / model", ordering="provider")
    def provider_model(self, obj: Answer) -> str:
        return f"{obj.provider} / {obj.model}" if obj.model else obj.provider

    @admin.display(description="final sources", ordering="cited_count")
    def final_sources(self, obj: Answer) -> str:
        """The Sources list readers got, of the sources retrieved (a fallback lists every one)."""
        retrieved = int(_annotation(obj, "retrieved_count"))
        final = retrieved if obj.fallback else int(_annotation(obj, "cited_count"))
        return f"{final} of {retrieved}" + (" (fallback)" if obj.fallback else "")

    @admin.display(description="support", ordering="unsupported_count")
    def support_found(self, obj: Answer) -> str:
        """The support check's findings (answers.support): unsupported citations, grounded uncited."""
        if obj.unsupported_count is None or obj.grounded_uncited_count is None:
            return EMPTY
        found = [
            f"{count} {what}"
            for count, what in (
                (obj.unsupported_count, "unsupported"),
                (obj.grounded_uncited_count, "grounded uncited"),
            )
            if count
        ]
        return ", ".join(found) or "OK"

    @admin.display(description="coverage", ordering="may_not_address")
    def coverage_found(self, obj: Answer) -> str:
        """Whether the cited sources hold the question's key terms (answers.support coverage)."""
        if obj.may_not_address is None:
            return EMPTY
        return "May not address" if obj.may_not_address else "OK"

    @admin.display(description="review verdict", ordering="latest_verdict")
    def verdict(self, obj: Answer) -> str:
        value = _annotation(obj, "latest_verdict")
        return str(Review.Verdict(value).label) if value in Review.Verdict.values else EMPTY

    @admin.display(description="unresolved feedback", ordering="unresolved_feedback")
    def feedback_unresolved(self, obj: Answer) -> int:
        return int(_annotation(obj, "unresolved_feedback"))

    # --- the answer's page: panels read from the stored trail

    @admin.display(description="raw text and final text")
    def text_comparison(self, obj: Answer) -> SafeString:
        return _panel(
            "texts.html",
            panels=trail_panels(obj, _sources(obj)),
            finalized=obj.status == Answer.Status.DONE,
            status=obj.status,
            truncated=obj.truncated and obj.status == Answer.Status.DONE,
            # The final text as readers see it: the `done` event's html (answers/rendering.py).
            rendered=answer_done_payload(answer=obj)["html"] if obj.status == Answer.Status.DONE else "",
        )

    @admin.display(description="turns")
    def conversation_turns(self, obj: Answer) -> SafeString:
        return conversation_panel(obj)

    @admin.display(description="marker decisions")
    def marker_decisions(self, obj: Answer) -> SafeString:
        return _panel("decisions.html", panels=trail_panels(obj, _sources(obj)))

    @admin.display(description="renumbering")
    def renumbering(self, obj: Answer) -> SafeString:
        return _panel("renumbering.html", rows=source_rows(_sources(obj)), fallback=obj.fallback)

    @admin.display(description="the provider's own citations")
    def native_citations(self, obj: Answer) -> SafeString:
        return _panel("native.html", panel=native_panel(obj))

    @admin.display(description="normalized dialects")
    def normalized_markers(self, obj: Answer) -> SafeString:
        return _panel("normalized.html", normalized=list(obj.normalized))

    @admin.display(description="stripped markers")
    def stripped_members(self, obj: Answer) -> SafeString:
        return _panel("stripped.html", stripped=list(obj.stripped))

    @admin.display(description="sentences and their sources")
    def support_check(self, obj: Answer) -> SafeString:
        return _panel("support.html", panel=support_panel(obj, _sources(obj)))

    @admin.display(description="question terms and the cited sources")
    def coverage_check(self, obj: Answer) -> SafeString:
        return _panel("coverage.html", panel=coverage_panel(obj))

    @admin.display(description="declined")
    def declined_note(self, obj: Answer) -> str:
        if not obj.declined:
            return "No"
        return (
            f"Yes: no retrieved source reached the threshold ({obj.min_score:g}), so the provider was not "
            "called and the answer says the documents do not cover the question."
        )

    @admin.display(description="sources")
    def sources_table(self, obj: Answer) -> SafeString:
        return _panel("sources.html", rows=source_rows(_sources(obj), obj.support))

    @admin.display(description="retrieval trace")
    def retrieval(self, obj: Answer) -> SafeString:
        trace = obj.retrieval_trace if isinstance(obj.retrieval_trace, dict) else {}
        summary = {key: trace.get(key, EMPTY) for key in ("candidates", "withheld", "backend", "reranker")}
        summary["query_terms"] = ", ".join(str(t) for t in trace.get("query_terms", []) or []) or EMPTY
        cuts = [
            (
                heading,
                [
                    [_copy_title(e) if name == "title" else str(e.get(name, EMPTY)) for name in TRACE_COLUMNS]
                    for e in trace.get(key, []) or []
                    if isinstance(e, dict)
                ],
            )
            for key, heading in (
                ("cut_by_threshold", "Cut by the threshold (score below min score)"),
                ("cut_by_cap", "Cut by the entity cap (beyond max sources)"),
                (
                    "cut_as_copy",
                    "Cut as a copy (the same passage, kept from the document with fewest chunks)",
                ),
            )
        ]
        return _panel(
            "retrieval.html",
            min_score=str(obj.min_score),
            max_sources=obj.max_sources,
            summary={key: str(value) for key, value in summary.items()},
            cuts=cuts,
            dense=dense_panel(trace),
            trace_json=json.dumps(obj.retrieval_trace, indent=2, ensure_ascii=False, default=str),
        )

    @admin.display(description="timings (ms)")
    def timings(self, obj: Answer) -> str:
        return (
            f"retrieval {number(obj.retrieval_ms)} · first piece {number(obj.first_piece_ms)} · "
            f"generation {number(obj.generation_ms)} · total {number(obj.total_ms)}"
        )

    @admin.display(description="reader feedback")
    def reader_feedback(self, obj: Answer) -> SafeString:
        return _panel("feedback.html", feedback=list(obj.feedback.all()))

    @admin.display(description="reviews")
    def reviews(self, obj: Answer) -> SafeString:
        return _panel("reviews.html", reviews=list(obj.reviews.all()))

    # --- export

    @admin.action(description="Export the selected answers' trails (JSON Lines)", permissions=["view"])
    def export_trails(self, request: HttpRequest, queryset: QuerySet[Answer]) -> HttpResponse:
        body = "".join(
            json.dumps(row, ensure_ascii=False) + "\n" for row in answers_export_rows(queryset=queryset)
        )
        response = HttpResponse(body, content_type="application/jsonl; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="answer-trails.jsonl"'
        return response
