"""Reviewers' verdicts as gold: `evaluation from-reviews` makes the items the rules say (the latest review
counts), and `evaluate --agreement` matches the counts computed here by hand."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from answers.models import Answer, EvaluationItem, Review, ReviewSourceFlag
from tests.fixtures.answers import make_documents
from tests.fixtures.evaluation import run_command

pytestmark = pytest.mark.django_db

CLAIM = "Bananas orbit Jupiter quietly"


def body_of(answer: Answer, number: int) -> str:
    """Source `number`'s excerpt without its final period: a sentence that source supports."""
    return answer.sources.get(original_number=number).excerpt.rstrip(".")


def review(answer: Answer, verdict: str, **flags: list[int]) -> Review:
    """A review of `answer` with flags on its sources by original number: review(a, "ok", irrelevant=[3])."""
    made = Review.objects.create(answer=answer, verdict=verdict)
    for flag, numbers in flags.items():
        for number in numbers:
            ReviewSourceFlag.objects.create(
                review=made, source=answer.sources.get(original_number=number), flag=flag
            )
    return made


def url(answer: Answer, number: int) -> str:
    return answer.sources.get(original_number=number).url


@pytest.fixture
def reviewed(answer_factory: Any) -> dict[str, Answer]:
    """Answers whose reviews exercise every rule; texts whose support record the test can tell by hand."""
    docs = make_documents(4, prefix="Gold")
    made: dict[str, Answer] = {}
    # Cites 1-3 (4 is dropped): 1 and 3 by copying their text, 2 by a claim it does not hold.
    flagged = answer_factory(
        text="Gold 1 says something distinct number 1 [1]. " + CLAIM + " [2]. "
        "Gold 3 says something distinct number 3 [3].",
        documents=docs,
        question="Flagged?",
    )
    review(flagged, "wrong_citation", does_not_support=[2], irrelevant=[3], should_be_cited=[4])
    made["flagged"] = flagged
    # Declined (nothing retrieved), reviewed ok: a decline expected.
    made["declined_ok"] = answer_factory(text="", documents=[], question="Declined and right to?")
    review(made["declined_ok"], "ok")
    # Declined, reviewed as wrong: no document, no decline expected: skipped.
    made["declined_wrong"] = answer_factory(text="", documents=[], question="Declined but wrongly?")
    review(made["declined_wrong"], "other")
    # Reviewed twice: the first review's flag no longer counts.
    twice = answer_factory(
        text="Gold 1 says something distinct number 1 [1]. " + CLAIM + " [2].",
        documents=docs[:2],
        question="Reviewed twice?",
    )
    review(twice, "unsupported_claim", does_not_support=[1])
    review(twice, "ok")
    made["twice"] = twice
    # A follow-up: its standalone question is the item's.
    follow_up = answer_factory(
        text="Gold 1 says something distinct number 1 [1].", documents=docs[:1], question="And that one?"
    )
    Answer.objects.filter(pk=follow_up.pk).update(standalone_question="What does Gold 1 say?")
    review(follow_up, "ok")
    made["follow_up"] = follow_up
    # Cites nothing (every source listed as a fallback), reviewed ok: its sources are expected, and the
    # support check has no label for them.
    made["fallback"] = answer_factory(text="No markers at all.", documents=docs[:2], question="Fallback?")
    review(made["fallback"], "ok")
    # Never reviewed: from-reviews leaves it out.
    made["unreviewed"] = answer_factory(
        text="Gold 2 says something distinct number 2 [1].", documents=docs[1:2], question="Unreviewed?"
    )
    return made


def test_from_reviews_makes_the_items_the_rules_say(reviewed: dict[str, Answer]) -> None:
    out, _ = run_command("evaluation", "from-reviews", "gold")

    items = {item.from_answer_id: item for item in EvaluationItem.objects.filter(set__name="gold")}
    flagged, twice, follow_up, fallback = (reviewed[k] for k in ("flagged", "twice", "follow_up", "fallback"))
    assert {
        answer_id: (i.question, i.expected_documents, i.expect_decline) for answer_id, i in items.items()
    } == {
        # Final sources 1-3 less 2 (does_not_support) and 3 (irrelevant), plus 4 (should_be_cited).
        flagged.pk: ("Flagged?", [url(flagged, 1), url(flagged, 4)], False),
        reviewed["declined_ok"].pk: ("Declined and right to?", [], True),
        twice.pk: ("Reviewed twice?", [url(twice, 1), url(twice, 2)], False),
        follow_up.pk: ("What does Gold 1 say?", [url(follow_up, 1)], False),
        fallback.pk: ("Fallback?", [url(fallback, 1), url(fallback, 2)], False),
    }
    assert f"skipped {reviewed['declined_wrong'].pk}: no expected document and no expected decline" in out
    assert "Added 5 items" in out

    again, _ = run_command("evaluation", "from-reviews", "gold")
    assert "Added 0 items" in again
    assert again.count("already in the set") == 5


def test_from_reviews_since_reads_the_latest_reviews_day(reviewed: dict[str, Answer]) -> None:
    tomorrow = (timezone.localdate() + timedelta(days=1)).isoformat()
    out, _ = run_command("evaluation", "from-reviews", "later", "--since", tomorrow)
    assert "Added 0 items" in out


def test_agreement_matches_the_counts_by_hand(reviewed: dict[str, Answer], tmp_path: Path) -> None:
    # The stored records say what the test built the texts to say.
    verdicts = {
        name: [s["verdict"] for s in Answer.objects.get(pk=reviewed[name].pk).support["sentences"]]
        for name in ("flagged", "twice")
    }
    assert verdicts == {
        "flagged": ["supported", "unsupported", "supported"],
        "twice": ["supported", "unsupported"],
    }
    # Pairs: flagged [1] (check supported, reviewers supported), [2] (unsupported, flagged), [3]
    # (supported; `irrelevant` is not `does_not_support`); twice [1] (supported; the flag was on the
    # earlier review), [2] (unsupported, not flagged); follow_up [1] (supported, not flagged). The
    # declined and fallback answers give none.
    pairs, agree, check, reviewers, both = 6, 5, 2, 1, 1
    observed, chance = agree / pairs, (check * reviewers + (pairs - check) * (pairs - reviewers)) / pairs**2
    expected = {
        "pairs": pairs,
        "agree": agree,
        "agreement": round(5 / 6, 4),
        "kappa": round((observed - chance) / (1 - chance), 4),
        "check_unsupported": check,
        "reviewer_unsupported": reviewers,
        "both_unsupported": both,
        "precision": 0.5,
        "recall": 1.0,
    }

    for method in (None, "lexical"):
        path = tmp_path / f"agreement-{method}.json"
        args = ["--support-method", method] if method else []
        out, _ = run_command("evaluate", "--agreement", *args, "--json", str(path))
        report = json.loads(path.read_text())
        assert report == {"method": method or "stored", **expected}
        assert "kappa" in out
        assert str(expected["kappa"]) in out
