"""One result's data from a stored answer, and a run's metrics over results (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from answers.evaluation.jsonl import ItemSpec
from answers.evaluation.measure import StoredAnswer, StoredSource, item_data
from answers.evaluation.metrics import format_metric, percentile, run_metrics

RECORD = {
    "method": "lexical",
    "min_score": 0.5,
    "sentences": [
        {"verdict": "supported", "scores": {"1": 0.9}},
        {"verdict": "unsupported", "scores": {"1": 0.8, "2": 0.1}},
        {"verdict": "uncited", "scores": {}},
    ],
}


def stored(**changes: Any) -> StoredAnswer:
    values: dict[str, Any] = {
        "answer_id": "a1",
        "done": True,
        "declined": False,
        "fallback": False,
        "stripped": 1,
        "normalized": 2,
        "support": RECORD,
        "total_ms": 123.456,
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        "error": "",
        # Retrieved: a (1), b (2), c (3); finalized: c first, then a; b dropped.
        "sources": [StoredSource(1, 2, "a"), StoredSource(2, None, "b"), StoredSource(3, 1, "c")],
    }
    return StoredAnswer(**{**values, **changes})


def test_an_answered_item() -> None:
    data = item_data(
        ItemSpec(question="Q?", expected_documents=("key:a", "z")), stored(), canonical={"key:a": "a"}
    )
    assert data == {
        "question": "Q?",
        "answer_id": "a1",
        "declined": False,
        "expect_decline": False,
        "expected_documents": ["key:a", "z"],
        "retrieved": ["a", "b", "c"],
        "references": ["c", "a"],
        "right_first": False,  # c is not expected
        "retrieval_recall": 0.5,
        "cited_recall": 0.5,
        "fallback": False,
        "stripped": 1,
        "normalized": 2,
        "sentences": 3,
        "supported_sentences": 1,
        "citations": 3,
        "supported_citations": 2,
        "latency_ms": 123.5,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "failed": False,
        "error": "",
    }


def test_declined_failed_and_unasked_items() -> None:
    expecting = ItemSpec(question="Q?", expected_documents=("a",))
    declined = item_data(
        expecting, stored(declined=True, sources=[], support={"min_score": 0.5, "sentences": []})
    )
    assert declined["declined"]
    assert declined["right_first"] is False
    assert declined["cited_recall"] == 0.0

    failed = item_data(expecting, stored(done=False, support=None, usage=None, error="The provider failed."))
    assert failed["failed"]
    assert not failed["declined"]
    assert failed["right_first"] is False
    assert failed["references"] == []
    assert failed["retrieved"] == ["a", "b", "c"]
    assert failed["retrieval_recall"] == 1.0
    assert failed["sentences"] is None
    assert failed["prompt_tokens"] is None
    assert failed["error"] == "The provider failed."

    unasked = item_data(expecting, None, error="OperationalError: locked")
    assert unasked["failed"]
    assert unasked["answer_id"] is None
    assert unasked["error"] == "OperationalError: locked"

    decline_expected = item_data(ItemSpec(question="Q?", expect_decline=True), stored(declined=True))
    assert decline_expected["right_first"] is None
    assert decline_expected["retrieval_recall"] is None


def test_metrics_by_their_definitions() -> None:
    items = [
        # answered, right first, 2 of 3 sentences, 1 of 2 citations, fell back
        {
            "right_first": True,
            "retrieval_recall": 1.0,
            "cited_recall": 0.5,
            "sentences": 3,
            "supported_sentences": 2,
            "citations": 2,
            "supported_citations": 1,
            "fallback": True,
            "latency_ms": 10.0,
            "prompt_tokens": 7,
        },
        # answered, wrong first
        {
            "right_first": False,
            "retrieval_recall": 0.0,
            "cited_recall": 0.0,
            "sentences": 1,
            "supported_sentences": 1,
            "citations": 1,
            "supported_citations": 1,
            "latency_ms": 30.0,
            "prompt_tokens": 3,
        },
        # declined as expected (its sentences are not the citation rates')
        {
            "declined": True,
            "expect_decline": True,
            "right_first": None,
            "sentences": 1,
            "supported_sentences": 0,
            "latency_ms": 20.0,
        },
        # declined, not expected to
        {
            "declined": True,
            "right_first": False,
            "retrieval_recall": 0.0,
            "cited_recall": 0.0,
            "latency_ms": 40.0,
        },
        # expected to decline, answered; failed one
        {"expect_decline": True, "failed": True, "right_first": None},
    ]
    metrics = run_metrics(items)
    assert metrics == {
        "items": 5,
        "answered": 2,
        "declined": 2,
        "failed": 1,
        "right_first": round(1 / 3, 4),
        "retrieval_recall": round(1 / 3, 4),
        "cited_recall": round(0.5 / 3, 4),
        "citation_recall": 0.75,
        "citation_precision": round(2 / 3, 4),
        "decline_precision": 0.5,
        "decline_recall": 0.5,
        "false_decline_rate": round(1 / 3, 4),
        "fallback_rate": 0.5,
        "latency_p50_ms": 20.0,
        "latency_p95_ms": 40.0,
        "prompt_tokens": 10,
        "completion_tokens": None,
    }


def test_empty_denominators_are_null() -> None:
    metrics = run_metrics([])
    assert metrics["items"] == 0
    assert all(metrics[name] is None for name in ("right_first", "decline_precision", "citation_recall"))


@pytest.mark.parametrize(
    ("values", "share", "expected"), [([5.0], 0.5, 5.0), ([1, 2, 3, 4], 0.5, 2), ([1, 2, 3, 4], 0.95, 4)]
)
def test_nearest_rank_percentile(values: list[float], share: float, expected: float) -> None:
    assert percentile(values, share) == expected


def test_format() -> None:
    assert format_metric("right_first", 0.8123) == "81.2%"
    assert format_metric("latency_p50_ms", 12.34) == "12.3"
    assert format_metric("items", 4) == "4"
    assert format_metric("kappa", None) == "—"
