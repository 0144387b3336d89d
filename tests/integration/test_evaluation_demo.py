"""`make run` loads the demo corpus's labeled questions as the set `demo`, once: each labeled document
by its url, an off-topic question as an expected decline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from answers.models import Document, EvaluationItem
from tests.fixtures.evaluation import run_command

pytestmark = pytest.mark.django_db

LABELED = Path(__file__).resolve().parents[2] / "bench" / "relevance_labeled.jsonl"


def test_the_makefile_loads_the_labeled_questions_as_demo() -> None:
    makefile = (LABELED.parents[1] / "Makefile").read_text()
    assert "manage.py evaluation import demo bench/relevance_labeled.jsonl --if-missing" in makefile


def test_demo_set_from_the_labeled_questions(demo_corpus: Any) -> None:
    out, err = run_command("evaluation", "import", "demo", str(LABELED), "--if-missing")
    labeled = [json.loads(line) for line in LABELED.read_text().splitlines() if line.strip()]
    assert f"Added {len(labeled)} items" in out
    assert err == ""  # every labeled document is in the demo corpus
    urls = dict(Document.objects.values_list("key", "url"))
    items = {item.question: item for item in EvaluationItem.objects.filter(set__name="demo")}
    for line in labeled:
        item = items[line["question"]]
        assert item.expected_documents == [urls[key] for key in line["documents"]]
        assert item.expect_decline is (line["documents"] == [])
        assert item.notes == line["kind"]

    again, _ = run_command("evaluation", "import", "demo", str(LABELED), "--if-missing")
    assert again.strip() == "The set 'demo' exists: nothing imported."
    assert EvaluationItem.objects.filter(set__name="demo").count() == len(labeled)
