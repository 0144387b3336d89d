"""Evaluation in admin (docs/evaluation.md): sets and their items (JSON Lines import and export, CSV
through django-import-export), runs (the list's headline metrics, a run's page with failing items
first, *Compare with…* another run of its set), the result list (exported as CSV, XLSX or JSON,
honouring its filters and search), and the answer list's action *Add to evaluation set…*.

Runs are made by `manage.py evaluate` only: admin reads them. Markup is in templates
(templates/admin/answers/evaluation*/).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.safestring import SafeString
from django.utils.text import slugify
from import_export import resources, widgets
from import_export.admin import ImportExportMixin
from import_export.fields import Field
from import_export.formats import base_formats

from answers.admin.exports import QAExportMixin
from answers.evaluation import selectors, services
from answers.evaluation.comparison import item_citation_recall
from answers.evaluation.jsonl import ItemsRefused, dump_items, parse_items
from answers.evaluation.metrics import HEADLINE, format_metric, metric_rows, ratio
from answers.evaluation.services import ItemsReport
from answers.models import Answer, EvaluationItem, EvaluationResult, EvaluationRun, EvaluationSet
from answers.models.evaluation import SET_NAME_PATTERN

if TYPE_CHECKING:
    _SetAdmin = admin.ModelAdmin[EvaluationSet]
    _ItemAdmin = admin.ModelAdmin[EvaluationItem]
    _RunAdmin = admin.ModelAdmin[EvaluationRun]
    _ResultAdmin = admin.ModelAdmin[EvaluationResult]
    _ItemInline = admin.TabularInline[EvaluationItem, EvaluationSet]
else:
    _SetAdmin = _ItemAdmin = _RunAdmin = _ResultAdmin = admin.ModelAdmin
    _ItemInline = admin.TabularInline

TEMPLATES = "admin/answers/evaluation/"


# --- the answer list's action -------------------------------------------------------------------


class AddToSetForm(forms.Form):
    """Which set the selected answers go to: one that exists, or a new one named here."""

    set = forms.ModelChoiceField(EvaluationSet.objects.all(), required=False, empty_label="(a new set)")
    new_set = forms.RegexField(
        regex=SET_NAME_PATTERN,
        required=False,
        max_length=100,
        label="New set's name",
        error_messages={"invalid": "Letters, digits, hyphens and underscores only."},
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if bool(data.get("set")) == bool(data.get("new_set")):
            raise forms.ValidationError("Choose a set, or name a new one (not both).")
        if data.get("new_set") and EvaluationSet.objects.filter(name=data["new_set"]).exists():
            raise forms.ValidationError(f"A set is already called {data['new_set']!r}: choose it.")
        return data

    def chosen(self) -> EvaluationSet:
        return self.cleaned_data["set"] or services.set_get_or_create(self.cleaned_data["new_set"])


@admin.action(description="Add to evaluation set…", permissions=["view"])
def add_to_evaluation_set(model_admin: Any, request: HttpRequest, queryset: QuerySet[Answer]) -> Any:
    """Items made from the selected answers (a reviewed one by its latest review, docs/evaluation.md),
    in a set chosen or created on an intermediate page."""
    form = AddToSetForm(request.POST if "apply" in request.POST else None)
    if form.is_valid():
        evaluation_set = form.chosen()
        report = services.items_from_answers(
            evaluation_set, list(queryset.values_list("pk", flat=True)), user_id=request.user.pk
        )
        model_admin.message_user(request, _report_message(report), messages.SUCCESS)
        return None
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Add answers to an evaluation set",
        "opts": model_admin.opts,
        "form": form,
        "answers": queryset.only("id", "question")[:200],
        "count": queryset.count(),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, TEMPLATES + "add_to_set.html", context)


def _report_message(report: ItemsReport) -> str:
    said = f"Added {report.added} items to the evaluation set {report.set.name!r}"
    if report.skipped:
        said += f"; skipped {len(report.skipped)} (" + "; ".join(why for _, why in report.skipped[:3]) + ")"
    return said + "."


# --- sets and items ------------------------------------------------------------------------------


class EvaluationItemInline(_ItemInline):
    model = EvaluationItem
    fields = ("question", "expected_documents", "expect_decline", "notes", "from_answer")
    raw_id_fields = ("from_answer",)
    extra = 0
    show_change_link = True


class JSONLinesImportForm(forms.Form):
    file = forms.FileField(help_text="One item a line (docs/evaluation.md).")
    replace = forms.BooleanField(required=False, help_text="Replace the set's items with the file's.")


class EvaluationSetAdmin(_SetAdmin):
    list_display = ("name", "description", "item_count", "run_count", "created_at")
    search_fields = ("name", "description")
    inlines = (EvaluationItemInline,)
    change_form_template = TEMPLATES + "set_change_form.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[EvaluationSet]:
        return (
            super()
            .get_queryset(request)
            .annotate(items_n=Count("items", distinct=True), runs_n=Count("runs", distinct=True))
        )

    @admin.display(description="items", ordering="items_n")
    def item_count(self, obj: EvaluationSet) -> int:
        return int(getattr(obj, "items_n", 0))

    @admin.display(description="runs", ordering="runs_n")
    def run_count(self, obj: EvaluationSet) -> int:
        return int(getattr(obj, "runs_n", 0))

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        return [
            path("<int:set_id>/import/", view(self.import_view), name="answers_evaluationset_import"),
            path("<int:set_id>/export/", view(self.export_view), name="answers_evaluationset_export"),
            *super().get_urls(),
        ]

    def import_view(self, request: HttpRequest, set_id: int) -> HttpResponse:
        evaluation_set = get_object_or_404(EvaluationSet, pk=set_id)
        if not self.has_change_permission(request, evaluation_set):
            raise PermissionDenied
        form = JSONLinesImportForm(request.POST or None, request.FILES or None)
        if form.is_valid():
            try:
                lines = io.TextIOWrapper(form.cleaned_data["file"], encoding="utf-8")
                items = parse_items(lines)
            except (ItemsRefused, UnicodeDecodeError) as exc:
                form.add_error("file", f"{exc}; nothing was imported.")
            else:
                report = services.items_add(
                    evaluation_set, items, user_id=request.user.pk, replace=form.cleaned_data["replace"]
                )
                self.message_user(request, _report_message(report), messages.SUCCESS)
                for key in report.unknown_keys:
                    self.message_user(request, f"{key!r} names no indexed document (kept).", messages.WARNING)
                return HttpResponseRedirect(reverse("admin:answers_evaluationset_change", args=[set_id]))
        context = {
            **self.admin_site.each_context(request),
            "title": f"Import items into {evaluation_set.name}",
            "opts": self.opts,
            "original": evaluation_set,
            "form": form,
        }
        return TemplateResponse(request, TEMPLATES + "set_import.html", context)

    def export_view(self, request: HttpRequest, set_id: int) -> HttpResponse:
        evaluation_set = get_object_or_404(EvaluationSet, pk=set_id)
        if not self.has_view_permission(request, evaluation_set):
            raise PermissionDenied
        lines = dump_items([selectors.item_spec(item) for item in selectors.set_items(evaluation_set)])
        response = HttpResponse("".join(lines), content_type="application/x-ndjson; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{slugify(evaluation_set.name)}.jsonl"'
        return response


class EvaluationItemResource(resources.ModelResource):  # type: ignore[misc]  # untyped package
    """An item as a CSV row: its set by name, its expected documents as a JSON list."""

    set = Field(attribute="set", column_name="set", widget=widgets.ForeignKeyWidget(EvaluationSet, "name"))
    expected_documents = Field(
        attribute="expected_documents", column_name="expected_documents", widget=widgets.JSONWidget()
    )

    class Meta:
        model = EvaluationItem
        fields = ("set", "question", "expected_documents", "expect_decline", "notes")
        import_id_fields = ("set", "question")


class EvaluationItemAdmin(ImportExportMixin, _ItemAdmin):  # type: ignore[misc]  # untyped package
    list_display = ("question", "set", "expected_count", "expect_decline", "from_answer", "created_at")
    list_filter = ("set", "expect_decline")
    search_fields = ("question", "notes")
    raw_id_fields = ("from_answer",)
    resource_classes = (EvaluationItemResource,)
    formats = (base_formats.CSV,)

    def has_import_permission(self, request: HttpRequest) -> bool:
        return self.has_add_permission(request) and self.has_change_permission(request)

    def has_export_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    @admin.display(description="expected documents")
    def expected_count(self, obj: EvaluationItem) -> int:
        return len(obj.expected_documents or [])


# --- runs and results ---------------------------------------------------------------------------


class _ReadOnly:
    """Runs and results are `manage.py evaluate`'s: admin neither adds, changes nor deletes them."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def _headline(name: str) -> Any:
    @admin.display(description=name.replace("_", " "))
    def column(obj: EvaluationRun) -> str:
        return format_metric(name, (obj.metrics or {}).get(name))

    column.__name__ = name  # the column's class (column-right_first)
    return column


class EvaluationRunAdmin(_ReadOnly, _RunAdmin):
    list_display = (
        "__str__", "label", "set", "started_at", "status", "provider_model", *(_headline(n) for n in HEADLINE)
    )  # fmt: skip
    list_filter = ("set", "status")
    search_fields = ("label",)
    list_select_related = ("set",)

    @admin.display(description="provider / model")
    def provider_model(self, obj: EvaluationRun) -> str:
        settings = obj.settings or {}
        return " / ".join(str(settings[key]) for key in ("provider", "model") if settings.get(key))

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        return [
            path("<int:run_id>/compare/", view(self.compare_view), name="answers_evaluationrun_compare"),
            *super().get_urls(),
        ]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        run = self._run(request, object_id)
        context = {
            **self._context(request, run, f"{run}"),
            "settings": sorted((run.settings or {}).items()),
            "metrics": metric_rows(run.metrics or {}),
            "results": result_rows(run),
            "others": selectors.other_runs(run),
        }
        return TemplateResponse(request, TEMPLATES + "run.html", context)

    def compare_view(self, request: HttpRequest, run_id: int) -> HttpResponse:
        run = self._run(request, str(run_id))
        other_id = request.GET.get("with", "")
        other = selectors.run_get(int(other_id)) if other_id.isdigit() else None
        if other is not None and other.set_id != run.set_id:
            other = None
        comparison = selectors.comparison(run, other) if other is not None else None
        context = {
            **self._context(request, run, f"Compare {run}" + (f" with run {other.pk}" if other else "")),
            "other": other,
            "others": selectors.other_runs(run),
            "metrics": metric_rows(run.metrics or {}, other.metrics or {}) if other else [],
            "sections": [
                ("Regressions", comparison["regressions"], "regressions"),
                ("Improvements", comparison["improvements"], "improvements"),
            ]
            if comparison
            else [],
        }
        return TemplateResponse(request, TEMPLATES + "compare.html", context)

    def _run(self, request: HttpRequest, object_id: str) -> EvaluationRun:
        run = selectors.run_get(int(object_id)) if object_id.isdigit() else None
        if run is None:
            raise Http404("No evaluation run has this id.")
        if not self.has_view_permission(request, run):
            raise PermissionDenied
        return run

    def _context(self, request: HttpRequest, run: EvaluationRun, title: str) -> dict[str, Any]:
        return {
            **self.admin_site.each_context(request),
            "title": title,
            "opts": self.opts,
            "run": run,
            "original": run,
        }


def result_rows(run: EvaluationRun) -> list[dict[str, Any]]:
    """Every result of a run as its page lists it, failing items first (failed, right_first false, or a
    decline that does not match), then in the set's order."""
    rows = []
    for result in EvaluationResult.objects.filter(run=run).order_by("item_id", "id"):
        data = result.data
        rows.append(
            {
                "question": result.question,
                "outcome": outcome(data),
                "failing": failing(data),
                "right_first": data.get("right_first"),
                "citation_precision": format_metric(
                    "citation_precision",
                    ratio(data.get("supported_citations") or 0, data.get("citations") or 0),
                ),
                "citation_recall": format_metric("citation_recall", item_citation_recall(data)),
                "cited_recall": format_metric("cited_recall", data.get("cited_recall")),
                "error": data.get("error") or "",
                "trail": reverse("admin:answers_answer_change", args=[result.answer_id])
                if result.answer_id
                else "",
            }
        )
    return sorted(rows, key=lambda row: not row["failing"])


def outcome(data: dict[str, Any]) -> str:
    if data.get("failed"):
        return "failed"
    said = "declined" if data.get("declined") else "answered"
    return (
        said
        if bool(data.get("declined")) == bool(data.get("expect_decline"))
        else f"{said} (expected the other)"
    )


def failing(data: dict[str, Any]) -> bool:
    mismatch = bool(data.get("declined")) != bool(data.get("expect_decline"))
    return bool(data.get("failed")) or data.get("right_first") is False or mismatch


class _AsIs(widgets.Widget):  # type: ignore[misc]
    """Numbers and booleans stay typed (JSON, XLSX); a list of keys is one cell, a key a line."""

    def render(self, value: Any, obj: Any = None, **kwargs: Any) -> Any:
        return "\n".join(map(str, value)) if isinstance(value, list) else value


def _data(name: str) -> Field:
    """A column read from the result's `data` (what was measured), typed as measured."""
    return Field(attribute=f"data__{name}", column_name=name, widget=_AsIs())


class EvaluationResultResource(resources.ModelResource):  # type: ignore[misc]
    """A result as an exported row: its run, question, answer id and what was measured (data)."""

    run_id = Field(attribute="run_id", column_name="run", widget=_AsIs())
    run_label = Field(attribute="run__label", column_name="run_label")
    set_name = Field(attribute="run__set__name", column_name="set")
    question = Field(attribute="question", column_name="question")
    answer_id = Field(attribute="answer_id", column_name="answer_id", widget=widgets.CharWidget())
    declined = _data("declined")
    expect_decline = _data("expect_decline")
    right_first = _data("right_first")
    retrieval_recall = _data("retrieval_recall")
    cited_recall = _data("cited_recall")
    sentences = _data("sentences")
    supported_sentences = _data("supported_sentences")
    citations = _data("citations")
    supported_citations = _data("supported_citations")
    fallback = _data("fallback")
    latency_ms = _data("latency_ms")
    prompt_tokens = _data("prompt_tokens")
    completion_tokens = _data("completion_tokens")
    failed = _data("failed")
    error = _data("error")
    expected_documents = _data("expected_documents")
    references = _data("references")

    class Meta:
        model = EvaluationResult
        # The columns are those declared above (the model's own are read through them).
        exclude = ("id", "run", "item", "answer", "data")
        export_order = ("run_id", "run_label", "set_name", "question", "answer_id", "failed", "declined")


class RightFirstFilter(admin.SimpleListFilter):
    title = "right first"
    parameter_name = "right_first"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("no", "No"), ("none", "Not measured")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        value = {"yes": True, "no": False, "none": None}.get(self.value() or "", ...)
        return queryset if value is ... else queryset.filter(right_first=value)


class EvaluationResultAdmin(_ReadOnly, QAExportMixin, _ResultAdmin):
    list_display = ("question", "run", "outcome_display", "right_first", "trail_link")
    list_filter = ("run__set", "run", "failed", "declined", RightFirstFilter)
    search_fields = ("question",)
    list_select_related = ("run", "run__set")
    resource_classes = (EvaluationResultResource,)

    @admin.display(description="outcome")
    def outcome_display(self, obj: EvaluationResult) -> str:
        return outcome(obj.data)

    @admin.display(description="trail")
    def trail_link(self, obj: EvaluationResult) -> SafeString:
        url = reverse("admin:answers_answer_change", args=[obj.answer_id]) if obj.answer_id else ""
        return render_to_string(TEMPLATES + "trail_link.html", {"url": url})
