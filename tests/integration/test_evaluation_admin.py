"""Evaluation in admin, as a QA reviewer uses it: runs (list, a run's page, a comparison), the result
list's export honouring its filters, a set's JSON Lines import and export, and the answer list's
*Add to evaluation set…*."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from answers.models import Answer, EvaluationItem, EvaluationResult, EvaluationSet, Review, ReviewSourceFlag
from tests.fixtures.answers import make_documents
from tests.fixtures.evaluation import (
    QUESTIONS,
    cite_first_then_claim,
    cite_second_first,
    evaluate,
    run_command,
)
from tests.fixtures.providers import StubOpenAIServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_runs(animal_set: EvaluationSet, stub_openai: StubOpenAIServer, tmp_path: Path) -> tuple[dict, dict]:
    """Run 1 by the good writer, run 2 by the one that cites the zebra page first for the walrus question."""
    first = evaluate("animals", "--label", "good writer", tmp_path=tmp_path)
    stub_openai.set_default(cite_second_first)
    second = evaluate("animals", "--label", "worse writer", tmp_path=tmp_path)
    stub_openai.set_default(cite_first_then_claim)
    return first, second


def test_the_run_list_shows_headline_metrics(qa_client: Any, two_runs: tuple[dict, dict]) -> None:
    page = qa_client.get(reverse("admin:answers_evaluationrun_changelist"))
    assert page.status_code == 200
    text = page.content.decode()
    for label in ("good writer", "worse writer", "openai / stub-model", "Right first", "Citation precision"):
        assert label in text
    first, second = two_runs
    assert f"{first['metrics']['right_first'] * 100:.1f}%" in text
    assert f"{second['metrics']['right_first'] * 100:.1f}%" in text


def test_a_runs_page_lists_failing_items_first_with_their_trail(
    qa_client: Any, two_runs: tuple[dict, dict]
) -> None:
    _, second = two_runs
    page = qa_client.get(reverse("admin:answers_evaluationrun_change", args=[second["run"]]))
    assert page.status_code == 200
    rows = page.context["results"]
    assert [row["failing"] for row in rows] == [True, False, False, False]
    assert rows[0]["question"] == QUESTIONS["walrus"]
    assert rows[0]["right_first"] is False
    text = page.content.decode()
    for item in second["items"]:
        assert reverse("admin:answers_answer_change", args=[item["answer_id"]]) in text
    assert "stub-model" in text
    assert "marker_dialects" in text
    assert 'data-metric="citation_precision"' in text


def test_compare_with_shows_both_metrics_and_every_change(
    qa_client: Any, two_runs: tuple[dict, dict]
) -> None:
    first, second = two_runs
    url = reverse("admin:answers_evaluationrun_compare", args=[second["run"]])
    page = qa_client.get(url, {"with": first["run"]})
    assert page.status_code == 200
    metrics = {name: (value, other) for name, value, other in page.context["metrics"]}
    assert metrics["right_first"] == (
        f"{second['metrics']['right_first'] * 100:.1f}%",
        f"{first['metrics']['right_first'] * 100:.1f}%",
    )
    sections = {kind: entries for _, entries, kind in page.context["sections"]}
    regressions, improvements = sections["regressions"], sections["improvements"]
    assert [(e["question"], e["changes"]) for e in regressions] == [
        (QUESTIONS["walrus"], ["right_first: true → false", "cited_recall: 0.50 → 0.00"])
    ]
    assert [e["question"] for e in improvements] == [QUESTIONS["walrus"]]
    text = page.content.decode()
    assert "right_first: true → false" in text
    assert "Compare with…" in text
    # A run of another set is not offered, nor compared.
    assert qa_client.get(url, {"with": 999}).context["metrics"] == []


def _export(client: Any, url: str, query: str, fmt: int) -> Any:
    form = client.get(f"{url}?{query}").context["form"]
    data = {name: "on" for name in form.fields if name.startswith("evaluationresultresource_")}
    data.update({"format": str(fmt), "resource": "0"})
    return client.post(f"{url}?{query}", data)


def test_the_result_export_honours_the_lists_filters(qa_client: Any, two_runs: tuple[dict, dict]) -> None:
    first, second = two_runs
    url = reverse("admin:answers_evaluationresult_export")
    query = f"run__id__exact={second['run']}&right_first=no"
    response = _export(qa_client, url, query, 0)  # CSV
    assert response.status_code == 200, response.content[:500]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(row["run"], row["question"], row["right_first"]) for row in rows] == [
        (str(second["run"]), QUESTIONS["walrus"], "False")
    ]
    assert rows[0]["answer_id"] == second["items"][2]["answer_id"]

    as_json = json.loads(_export(qa_client, url, f"run__id__exact={first['run']}&q=zebras", 2).content)
    assert [(row["question"], row["right_first"], row["latency_ms"]) for row in as_json] == [
        (QUESTIONS["zebra"], True, first["items"][0]["latency_ms"])
    ]
    xlsx = _export(qa_client, url, "", 1)
    assert xlsx.status_code == 200
    assert xlsx.content[:2] == b"PK"
    assert EvaluationResult.objects.count() == 8


def test_a_sets_json_lines_import_and_export(qa_client: Any, animal_set: EvaluationSet) -> None:
    export = qa_client.get(reverse("admin:answers_evaluationset_export", args=[animal_set.pk]))
    assert export.status_code == 200
    exported = export.content.decode()
    assert exported == run_command("evaluation", "export", "animals")[0]
    assert (
        reverse("admin:answers_evaluationset_import", args=[animal_set.pk])
        in qa_client.get(reverse("admin:answers_evaluationset_change", args=[animal_set.pk])).content.decode()
    )

    url = reverse("admin:answers_evaluationset_import", args=[animal_set.pk])
    bad = io.BytesIO(b'{"question": "New?"}\n{"question": 3}\n')
    bad.name = "bad.jsonl"
    refused = qa_client.post(url, {"file": bad})
    assert refused.status_code == 200
    assert "line 2" in refused.content.decode()
    assert animal_set.items.count() == 4

    good = io.BytesIO(b'{"question": "New?", "expected_documents": ["animals:zebra"]}\n')
    good.name = "good.jsonl"
    assert qa_client.post(url, {"file": good}).status_code == 302
    assert animal_set.items.get(question="New?").expected_documents == ["https://zoo.example/zebra"]


def test_the_item_list_exports_csv(qa_client: Any, animal_set: EvaluationSet) -> None:
    url = reverse("admin:answers_evaluationitem_export")
    form = qa_client.get(url).context["form"]
    data = {name: "on" for name in form.fields if name.startswith("evaluationitemresource_")}
    response = qa_client.post(url, {**data, "format": "0", "resource": "0"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["question"] for row in rows] == list(animal_set.items.values_list("question", flat=True))
    assert json.loads(rows[2]["expected_documents"]) == [
        "https://zoo.example/walrus",
        "https://zoo.example/quokka",
    ]


def test_add_to_evaluation_set_from_the_answer_list(
    qa_client: Any, answer_factory: Any, reviewer: Any
) -> None:
    docs = make_documents(3, prefix="Pick")
    unreviewed = answer_factory(
        text="Pick 1 says so [1]. Pick 2 too [2].", documents=docs, question="Unreviewed?"
    )
    reviewed = answer_factory(
        text="Pick 1 says so [1]. Pick 2 too [2].", documents=docs, question="Reviewed?"
    )
    review = Review.objects.create(answer=reviewed, reviewer=reviewer, verdict="wrong_citation")
    ReviewSourceFlag.objects.create(
        review=review, source=reviewed.sources.get(original_number=2), flag="irrelevant"
    )
    ReviewSourceFlag.objects.create(
        review=review, source=reviewed.sources.get(original_number=3), flag="should_be_cited"
    )
    listing = reverse("admin:answers_answer_changelist")
    chosen = {"action": "add_to_evaluation_set", "_selected_action": [str(unreviewed.pk), str(reviewed.pk)]}

    page = qa_client.post(listing, chosen)
    assert page.status_code == 200
    assert "Add answers to an evaluation set" in page.content.decode()
    assert not EvaluationSet.objects.exists()

    done = qa_client.post(listing, {**chosen, "apply": "1", "new_set": "picked"}, follow=True)
    assert "Added 2 items to the evaluation set &#x27;picked&#x27;" in done.content.decode()
    items = {i.from_answer_id: i for i in EvaluationItem.objects.filter(set__name="picked")}
    assert items[unreviewed.pk].expected_documents == [docs[0].url, docs[1].url]  # its final sources
    assert items[reviewed.pk].expected_documents == [
        docs[0].url,
        docs[2].url,
    ]  # less irrelevant, plus should-be
    assert all(item.created_by_id == reviewer.pk for item in items.values())

    again = qa_client.post(
        listing, {**chosen, "apply": "1", "set": EvaluationSet.objects.get().pk}, follow=True
    )
    assert "Added 0 items" in again.content.decode()
    assert "already in the set" in again.content.decode()
    assert Answer.objects.count() == 2
