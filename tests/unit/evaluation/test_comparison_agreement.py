"""Regressions and improvements, the --fail-under gates, and the support check against reviewers (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from answers.evaluation.agreement import Pair, agreement, answer_pairs, check_labels, kappa
from answers.evaluation.comparison import GateError, compare, failed_gates, parse_gate


def item(question: str, **values: Any) -> dict[str, Any]:
    return {
        "question": question,
        "answer_id": f"{question}-id",
        "declined": False,
        "expect_decline": False,
        **values,
    }


def test_each_rule_regresses_and_improves() -> None:
    before = [
        item("first", right_first=True),
        item("decline", declined=True, expect_decline=True),
        item("cited", cited_recall=1.0),
        item("sentences", sentences=5, supported_sentences=5),
        item("small", cited_recall=1.0, sentences=5, supported_sentences=5),
        item("only before"),
    ]
    after = [
        item("first", right_first=False, answer_id="first-2"),
        item("decline", declined=False, expect_decline=True),
        item("cited", cited_recall=0.5),
        item("sentences", sentences=5, supported_sentences=4),  # 1.0 → 0.8: not more than 0.2
        item("small", cited_recall=0.8, sentences=5, supported_sentences=3),  # 0.2 exactly; 0.4
        item("only after", right_first=False),
    ]
    regressions, improvements = compare(after, before)
    assert [(r["question"], r["changes"]) for r in regressions] == [
        ("first", ["right_first: true → false"]),
        ("decline", ["declined: true → false"]),
        ("cited", ["cited_recall: 1.00 → 0.50"]),
        ("small", ["citation_recall: 1.00 → 0.60"]),
    ]
    assert regressions[0]["answer_id"] == "first-2"
    assert regressions[0]["compare_answer_id"] == "first-id"
    assert improvements == []
    back, better = compare(before, after)
    assert back == []
    assert [b["question"] for b in better] == ["first", "decline", "cited", "small"]


def test_gates() -> None:
    assert parse_gate("right_first=0.8") == ("right_first", 0.8)
    for bad in ("right_first", "nonsense=1", "right_first=high"):
        with pytest.raises(GateError):
            parse_gate(bad)
    metrics = {"right_first": 0.8, "citation_recall": None}
    assert failed_gates(metrics, [("right_first", 0.8)]) == []
    assert failed_gates(metrics, [("right_first", 0.81), ("citation_recall", 0.0)]) == [
        "right_first = 0.8 is under 0.81",
        "citation_recall is null (under 0)",
    ]


def test_check_labels_take_the_lowest_score_citing_a_source() -> None:
    record = {
        "min_score": 0.5,
        "sentences": [
            {"scores": {"1": 0.9, "2": 0.7}},
            {"scores": {"2": 0.2}},
            {"scores": {}},
        ],
    }
    assert check_labels(record) == {1: False, 2: True}
    # Source 3 (final, cited by no sentence) makes no pair.
    assert answer_pairs(record, {1: True, 2: True, 3: False}) == [Pair(False, True), Pair(True, True)]


def test_agreement_and_kappa() -> None:
    pairs = [Pair(True, True), Pair(True, False), Pair(False, False), Pair(False, False)]
    report = agreement(pairs, method="lexical")
    assert report == {
        "method": "lexical",
        "pairs": 4,
        "agree": 3,
        "agreement": 0.75,
        "kappa": 0.5,  # observed 0.75, chance (2*1 + 2*3) / 16 = 0.5
        "check_unsupported": 2,
        "reviewer_unsupported": 1,
        "both_unsupported": 1,
        "precision": 0.5,
        "recall": 1.0,
    }
    assert agreement([], method="lexical")["kappa"] is None
    assert kappa(3, 3, 0, 0) is None  # chance agreement 1: undefined
