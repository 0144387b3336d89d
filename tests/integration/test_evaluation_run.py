"""An evaluation set imported, evaluated against the OpenAI stub, and read back as JSON: each item's data
agrees with its answer's trail and support record, the metrics with the items; gates and comparison."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management.base import CommandError
from prometheus_client import REGISTRY

from answers.models import Answer, EvaluationItem, EvaluationRun, EvaluationSet
from tests.fixtures.evaluation import (
    DECLINED_QUESTION,
    QUESTIONS,
    animal_items,
    cite_first_then_claim,
    cite_second_first,
    evaluate,
    run_command,
    write_items,
)
from tests.fixtures.providers import StubOpenAIServer, stub_usage

pytestmark = pytest.mark.django_db


def source_keys(answer: Answer, *, final: bool) -> list[str]:
    sources = list(answer.sources.select_related("document"))
    if final:
        sources = sorted((s for s in sources if s.final_number), key=lambda s: s.final_number)
    else:
        sources.sort(key=lambda s: s.original_number)
    return [s.url or s.document.key for s in sources]


def test_import_canonicalizes_keys_and_export_round_trips(animal_set: EvaluationSet, tmp_path: Path) -> None:
    quokka = animal_set.items.get(question=QUESTIONS["quokka"])
    assert quokka.expected_documents == ["https://zoo.example/quokka"]  # the ingest key, as its url

    out, _ = run_command("evaluation", "export", "animals")
    exported = [json.loads(line) for line in out.splitlines()]
    assert [line["question"] for line in exported] == [item["question"] for item in animal_items()]
    assert exported[3] == {
        "question": DECLINED_QUESTION,
        "expected_documents": [],
        "expect_decline": True,
        "notes": "",
    }

    # Exported, imported again elsewhere: the same items.
    path = tmp_path / "again.jsonl"
    path.write_text(out)
    run_command("evaluation", "import", "copy", str(path))
    copy = EvaluationSet.objects.get(name="copy")
    fields = ("question", "expected_documents", "expect_decline", "notes")
    assert list(copy.items.values_list(*fields)) == list(animal_set.items.values_list(*fields))


def test_a_malformed_line_stores_nothing_and_an_unknown_key_warns(animals: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"question": "Fine?"}\n\n{"question": "Also fine?", "expected_documents": "not a list"}\n'
    )
    with pytest.raises(CommandError) as refused:
        run_command("evaluation", "import", "bad", str(bad))
    assert "line 3" in str(refused.value)
    assert refused.value.returncode == 2
    assert not EvaluationSet.objects.filter(name="bad").exists()

    odd = write_items(
        tmp_path / "odd.jsonl", [{"question": "Q?", "expected_documents": ["https://nowhere.example/x"]}]
    )
    out, err = run_command("evaluation", "import", "odd", str(odd))
    assert "Added 1 items" in out
    assert "'https://nowhere.example/x' names no indexed document" in err
    assert EvaluationItem.objects.get(set__name="odd").expected_documents == ["https://nowhere.example/x"]


def test_each_item_agrees_with_its_answer_and_the_metrics_with_the_items(
    animal_set: EvaluationSet, stub_openai: StubOpenAIServer, tmp_path: Path
) -> None:
    labels = {"status": "done", "provider": "openai", "delivery": "json", "origin": "evaluation"}
    counted_before = REGISTRY.get_sample_value("answers_total", labels) or 0

    document = evaluate("animals", "--label", "stub, prompt 1", "--concurrency", "2", tmp_path=tmp_path)

    run = EvaluationRun.objects.get()
    assert document["run"] == run.pk
    assert document["set"] == "animals"
    assert document["label"] == "stub, prompt 1"
    assert run.status == "done"
    assert document["metrics"] == run.metrics
    assert document["settings"]["provider"] == "openai"
    assert document["settings"]["model"] == "stub-model"
    assert document["settings"]["min_score"] == 0.2
    assert document["settings"]["concurrency"] == 2
    items = document["items"]
    assert [item["question"] for item in items] == [item["question"] for item in animal_items()]
    bodies = {request["messages"][-1]["content"]: request for request in stub_openai.requests}
    for item in items:
        _agrees_with_its_answer(item, bodies)
    assert REGISTRY.get_sample_value("answers_total", labels) == counted_before + 4

    # The ones the test knows by construction.
    zebra, quokka, walrus, declined = items
    assert declined["declined"]
    assert declined["expect_decline"]
    assert declined["right_first"] is None
    assert declined["prompt_tokens"] is None  # no provider call
    assert zebra["right_first"] is True
    assert quokka["right_first"] is True
    assert walrus["retrieval_recall"] == 0.5
    assert walrus["cited_recall"] == 0.5
    assert walrus["retrieved"][1] == "https://zoo.example/zebra"
    assert (walrus["citations"], walrus["supported_citations"]) == (2, 1)  # the claim citing [2]
    assert (walrus["sentences"], walrus["supported_sentences"]) == (2, 1)
    _metrics_agree(run.metrics, items)


def _agrees_with_its_answer(item: dict[str, Any], bodies: dict[str, dict[str, Any]]) -> None:
    answer = Answer.objects.get(id=item["answer_id"])
    assert answer.origin == Answer.Origin.EVALUATION
    assert answer.asker_id is None
    assert item["declined"] == answer.declined
    assert item["failed"] is (answer.status == "failed")
    assert item["retrieved"] == source_keys(answer, final=False)
    assert item["references"] == source_keys(answer, final=True)
    assert item["fallback"] == answer.fallback
    assert item["stripped"] == len(answer.stripped)
    assert item["normalized"] == len(answer.normalized)
    assert item["latency_ms"] == round(answer.total_ms, 1)
    sentences = answer.support["sentences"]
    assert item["sentences"] == len(sentences)
    assert item["supported_sentences"] == sum(s["verdict"] == "supported" for s in sentences)
    scores = [score for s in sentences for score in s["scores"].values()]
    assert item["citations"] == len(scores)
    assert item["supported_citations"] == sum(score >= answer.support["min_score"] for score in scores)
    expected = set(item["expected_documents"])
    if expected:
        assert item["retrieval_recall"] == round(len(expected & set(item["retrieved"])) / len(expected), 4)
        assert item["cited_recall"] == round(len(expected & set(item["references"])) / len(expected), 4)
    if answer.declined:
        return
    # Tokens: what the stub reported for this very request.
    body = next(b for text, b in bodies.items() if answer.question in text)
    usage = stub_usage(body, answer.raw_text)
    assert (item["prompt_tokens"], item["completion_tokens"]) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )
    assert answer.usage == {
        "prompt_tokens": usage["prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
    }


def _metrics_agree(metrics: dict[str, Any], items: list[dict[str, Any]]) -> None:
    answered = [i for i in items if not i["declined"] and not i["failed"]]
    firsts = [i["right_first"] for i in items if i["right_first"] is not None]
    assert metrics["items"] == 4
    assert metrics["answered"] == 3
    assert metrics["declined"] == 1
    assert metrics["failed"] == 0
    assert metrics["right_first"] == round(sum(firsts) / len(firsts), 4)
    assert metrics["citation_recall"] == round(
        sum(i["supported_sentences"] for i in answered) / sum(i["sentences"] for i in answered), 4
    )
    assert metrics["citation_precision"] == round(
        sum(i["supported_citations"] for i in answered) / sum(i["citations"] for i in answered), 4
    )
    assert metrics["decline_precision"] == 1.0
    assert metrics["decline_recall"] == 1.0
    assert metrics["false_decline_rate"] == 0.0
    assert metrics["fallback_rate"] == 0.0
    assert metrics["prompt_tokens"] == sum(i["prompt_tokens"] for i in answered)
    assert metrics["completion_tokens"] == sum(i["completion_tokens"] for i in answered)
    latencies = sorted(i["latency_ms"] for i in items)
    assert metrics["latency_p50_ms"] == latencies[1]  # nearest rank of four: the second
    assert metrics["latency_p95_ms"] == latencies[3]


def test_fail_under_exits_1_under_its_value_and_0_otherwise(
    animal_set: EvaluationSet, tmp_path: Path
) -> None:
    evaluate(
        "animals", "--fail-under", "right_first=1", "--fail-under", "decline_recall=0.5", tmp_path=tmp_path
    )

    with pytest.raises(CommandError) as failed:
        evaluate("animals", "--fail-under", "citation_precision=0.99", tmp_path=tmp_path)
    assert failed.value.returncode == 1
    assert "citation_precision" in str(failed.value)
    # The run was stored all the same, with its metrics.
    assert EvaluationRun.objects.filter(status="done").count() == 2
    # Tokens reported: that gate passes.
    evaluate("animals", "--fail-under", "prompt_tokens=1", tmp_path=tmp_path)


def test_a_null_metric_fails_its_gate(animal_set: EvaluationSet, settings: Any, tmp_path: Path) -> None:
    settings.ANSWERS_PROVIDER = "extractive"  # reports no usage: its tokens are null
    with pytest.raises(CommandError) as failed:
        evaluate("animals", "--fail-under", "prompt_tokens=0", tmp_path=tmp_path)
    assert failed.value.returncode == 1
    assert "prompt_tokens is null" in str(failed.value)


@pytest.mark.parametrize(
    "args",
    [
        ["nosuchset"],
        ["animals", "--fail-under", "nonsense=1"],
        ["animals", "--provider", "nosuch"],
        ["animals", "--compare", "999"],
    ],
)
def test_usage_errors_exit_2_before_anything_is_asked(
    animal_set: EvaluationSet, args: list[str], stub_openai: StubOpenAIServer
) -> None:
    with pytest.raises(CommandError) as refused:
        run_command("evaluate", *args)
    assert refused.value.returncode == 2
    assert stub_openai.requests == []
    assert not EvaluationRun.objects.exists()


def test_fail_on_regression_compares_with_the_previous_run(
    animal_set: EvaluationSet, stub_openai: StubOpenAIServer, tmp_path: Path
) -> None:
    first = evaluate("animals", "--fail-on-regression", tmp_path=tmp_path)  # nothing to compare with: 0
    assert "compare" not in first

    stub_openai.set_default(cite_second_first)
    with pytest.raises(CommandError) as regressed:
        evaluate("animals", "--compare", "previous", "--fail-on-regression", tmp_path=tmp_path)
    assert regressed.value.returncode == 1
    second = json.loads(sorted(tmp_path.glob("run-*.json"))[-1].read_text())
    compare = second["compare"]
    assert compare["run"] == first["run"]
    assert compare["metrics"] == first["metrics"]
    was = {i["question"]: i for i in first["items"]}
    now = {i["question"]: i for i in second["items"]}
    walrus = QUESTIONS["walrus"]  # the second writer cites the zebra page first, and only it
    assert compare["regressions"] == [
        {
            "question": walrus,
            "answer_id": now[walrus]["answer_id"],
            "compare_answer_id": was[walrus]["answer_id"],
            "changes": ["right_first: true → false", "cited_recall: 0.50 → 0.00"],
        }
    ]
    assert [(e["question"], e["changes"]) for e in compare["improvements"]] == [
        (walrus, ["citation_recall: 0.50 → 1.00"])  # one supported sentence instead of one of two
    ]

    # The first writer again, compared with the first run by id: nothing changed, exit 0.
    stub_openai.set_default(cite_first_then_claim)
    third = evaluate("animals", "--compare", str(first["run"]), "--fail-on-regression", tmp_path=tmp_path)
    assert third["compare"]["run"] == first["run"]
    assert third["compare"]["regressions"] == []
    assert third["compare"]["improvements"] == []


def test_provider_model_and_asker_options(
    animal_set: EvaluationSet, stub_openai: StubOpenAIServer, reviewer: Any, tmp_path: Path
) -> None:
    document = evaluate("animals", "--model", "stub-model-2", "--as", "reviewer", tmp_path=tmp_path)
    assert document["settings"]["model"] == "stub-model-2"
    assert document["settings"]["asker"] == "reviewer"
    assert {request["model"] for request in stub_openai.requests} == {"stub-model-2"}
    answers = Answer.objects.filter(id__in=[item["answer_id"] for item in document["items"]])
    assert {(a.asker_id, a.asked_signed_in, a.model) for a in answers} == {
        (reviewer.pk, True, "stub-model-2")
    }

    offline = evaluate("animals", "--provider", "extractive", tmp_path=tmp_path)
    assert offline["settings"]["provider"] == "extractive"
    assert len(stub_openai.requests) == 3  # the first run's three answered items only


def test_a_run_is_bounded_by_its_own_concurrency_not_the_readers_admission_limit(
    animal_set: EvaluationSet, settings: Any, tmp_path: Path
) -> None:
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_MAX_GENERATING = 1  # a server process would refuse a second reader's ask

    document = evaluate("animals", "--concurrency", "4", tmp_path=tmp_path)

    assert document["metrics"]["failed"] == 0
    assert document["metrics"]["items"] == animal_set.items.count()
