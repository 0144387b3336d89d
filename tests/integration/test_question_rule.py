"""One rule decides what a question may be: the API, the page's form and `manage.py ask` refuse alike."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from answers.models import Answer
from answers.questions import MAX_LENGTH, NO_VISIBLE_CHARACTER
from tests.fixtures.api import ask

REFUSED = [
    pytest.param("\u200b\u200b", NO_VISIBLE_CHARACTER, id="zero-width"),
    pytest.param("\ufeff \u200e", NO_VISIBLE_CHARACTER, id="bom-and-mark"),
    pytest.param("\u202e\u2066", NO_VISIBLE_CHARACTER, id="bidi-controls"),
    pytest.param("x" * (MAX_LENGTH + 1), f"at most {MAX_LENGTH} characters", id="over-long"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("question", "message"), REFUSED)
def test_the_api_the_form_and_ask_refuse_the_same_question_with_the_same_words(
    client, openai_settings, question: str, message: str
) -> None:
    api = ask(client, question=question)
    assert api.status_code == 400
    assert any(message in text for text in api.json()["question"])

    form = client.post("/ask/", {"question": question})
    assert form.status_code == 400
    assert message in form.content.decode()

    with pytest.raises(CommandError, match=message):
        call_command("ask", question)

    assert not Answer.objects.exists()
