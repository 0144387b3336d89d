"""An evaluation run's answers appear nowhere a reader or the health page looks; the answer list shows
them only under its origin filter, and a QA reviewer still reads their trail pages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse

from answers.models import Answer
from answers.pipeline.publisher import JSON
from tests.fixtures.answers import _ask_and_settle
from tests.fixtures.evaluation import QUESTIONS, animal_items, run_command, write_items

pytestmark = pytest.mark.django_db

READER_QUESTION = "Where do quokkas live on Rottnest Island?"


@pytest.fixture
def both(animals: Any, settings: Any, tmp_path: Path) -> tuple[Answer, Answer]:
    """A reader's answer and an evaluation run's, both to the zebra question (extractive provider)."""
    settings.ANSWERS_PROVIDER = "extractive"
    reader = async_to_sync(_ask_and_settle)(question=READER_QUESTION, asker_id=None, publisher=JSON)
    items = write_items(tmp_path / "zebra.jsonl", animal_items()[:1])
    run_command("evaluation", "import", "zebra", str(items))
    run_command("evaluate", "zebra")
    evaluation = Answer.objects.get(origin=Answer.Origin.EVALUATION)
    assert evaluation.question == QUESTIONS["zebra"]
    assert evaluation.status == "done"
    assert evaluation.conversation_id is not None
    return Answer.objects.get(pk=reader.pk), evaluation


def test_readers_pages_api_and_conversations_know_nothing_of_them(
    client: Any, both: tuple[Answer, Answer]
) -> None:
    reader, evaluation = both
    assert client.get(reverse("answers:permalink", args=[reader.pk])).status_code == 200
    assert client.get(reverse("answers:conversation", args=[reader.conversation_id])).status_code == 200

    assert client.get(reverse("answers:permalink", args=[evaluation.pk])).status_code == 404
    assert client.get(reverse("answers:markdown", args=[evaluation.pk])).status_code == 404
    assert client.get(reverse("answers:conversation", args=[evaluation.conversation_id])).status_code == 404
    assert client.get(f"/api/answers/{evaluation.pk}/").status_code == 404
    feedback = client.post(
        f"/api/answers/{evaluation.pk}/feedback/", {"verdict": "helpful"}, content_type="application/json"
    )
    assert feedback.status_code == 404
    # Nor can anyone continue its conversation.
    follow_up = client.post(
        "/api/answers/",
        {"question": "And zebras?", "conversation": str(evaluation.conversation_id)},
        content_type="application/json",
    )
    assert follow_up.status_code == 404
    # The first screen shows none of them.
    assert QUESTIONS["zebra"] not in client.get(reverse("answers:ask-page")).content.decode()


def test_health_counts_readers_only(qa_client: Any, both: tuple[Answer, Answer]) -> None:
    page = qa_client.get(reverse("admin:answers_answer_health"))
    assert page.status_code == 200
    assert page.context["total"]["answers"] == 1  # the reader's, not the run's


def test_the_answer_list_shows_them_only_under_the_origin_filter(
    qa_client: Any, both: tuple[Answer, Answer]
) -> None:
    listing = reverse("admin:answers_answer_changelist")

    default = qa_client.get(listing).content.decode()
    assert READER_QUESTION in default
    assert QUESTIONS["zebra"] not in default

    runs = qa_client.get(listing, {"origin": "evaluation"}).content.decode()
    assert QUESTIONS["zebra"] in runs
    assert READER_QUESTION not in runs

    # Its trail page is a QA reviewer's to read, as any answer's.
    _, evaluation = both
    trail = qa_client.get(reverse("admin:answers_answer_change", args=[evaluation.pk]))
    assert trail.status_code == 200
    assert QUESTIONS["zebra"] in trail.content.decode()
