"""Answers given offline (the default: extractive provider, demo corpus, default threshold), through the
API: they say what the question asks; a follow-up says something new, and a comparison speaks of each side
from its page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from tests.fixtures.api import ask

pytestmark = pytest.mark.django_db

# The README's example: the first screen's nonlocal question, then its follow-up.
FIRST = "What should I know about the nonlocal statement?"
GLOBAL = "and how is that different from global?"
CONTINUE = "and how is that different from continue?"

_MARKERS = re.compile(r"\s*\[\d[\d,\s]*\]")


def _sentences(text: str) -> set[str]:
    """The answer's sentences without their markers (an extractive answer: one quoted sentence each)."""
    return {s.strip() for s in re.split(r"(?<=[.!?])\s+", _MARKERS.sub("", text)) if s.strip()}


def _cited_titles(body: dict[str, Any]) -> list[str]:
    return [reference["title"] for reference in body["references"]]


@pytest.fixture
def offline(settings: Any, demo_corpus: Any) -> Client:
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_EMBEDDINGS = "none"
    return Client()


def _turns(client: Client, *questions: str) -> list[dict[str, Any]]:
    first = ask(client, questions[0])
    assert first.status_code == 201, first.content
    bodies = [first.json()]
    for question in questions[1:]:
        response = ask(client, question, conversation=bodies[0]["conversation"])
        assert response.status_code == 201, response.content
        bodies.append(response.json())
    assert [b["turn"] for b in bodies] == list(range(1, len(questions) + 1))
    return bodies


def test_a_follow_up_quotes_nothing_an_earlier_turn_quoted_and_speaks_of_each_side(offline: Client) -> None:
    first, second = _turns(offline, FIRST, GLOBAL)

    assert second["text"] != first["text"]
    assert not _sentences(first["text"]) & _sentences(second["text"])
    # The comparison quotes both pages: the one on nonlocal, and the one on global.
    assert {"The nonlocal statement", "The global statement"} <= set(_cited_titles(second))
    assert "interpreted as globals" in second["text"]


def test_a_third_turn_naming_another_subject_speaks_of_it(offline: Client) -> None:
    first, second, third = _turns(offline, FIRST, GLOBAL, CONTINUE)

    assert "The continue statement" in _cited_titles(third)
    assert "next cycle of the nearest enclosing loop" in third["text"]
    assert not (_sentences(first["text"]) | _sentences(second["text"])) & _sentences(third["text"])


@pytest.mark.parametrize(
    ("question", "said"),
    [
        # The steps the page gives, not only its opening sentence.
        ("How does the with statement work?", "is evaluated to obtain a context manager"),
        # What yield does, not only that it is equivalent to a yield expression.
        ("What does yield do?", "generator function"),
        # What break does, not only where it may be written.
        ("How do I leave a loop early?", "It terminates the nearest enclosing loop"),
        # Its two steps, a list finishing "is executed in two steps:", not only that there are two.
        ("What does the import statement do?", "two steps: find a module, loading and initializing it"),
    ],
)
def test_an_offline_answer_says_what_the_question_asks(offline: Client, question: str, said: str) -> None:
    (body,) = _turns(offline, question)
    assert said in body["text"]
