"""The ask page's first screen: what the answers are drawn from, example questions, the favicon."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html import unescape
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import Client

from answers.examples import example_question
from answers.models import Answer, Document
from answers.pipeline import flow
from answers.pipeline.publisher import JSON
from tests.fixtures.answers import settled
from tests.fixtures.content import MakeDocument

pytestmark = pytest.mark.django_db


def corpus_line(html: str) -> str:
    match = re.search(r"<p[^>]*data-corpus-summary[^>]*>(.*?)</p>", html, re.S)
    assert match, "the ask page has no corpus line"
    return unescape(re.sub(r"<[^>]+>", "", match.group(1)))


def example_questions(html: str) -> list[str]:
    return [unescape(q) for q in re.findall(r'data-example-question="([^"]*)"', html)]


def test_the_corpus_line_counts_the_documents_and_names_the_last_update(
    client: Client, make_document: MakeDocument
) -> None:
    for i in range(3):
        make_document(title=f"Topic {i}")
    Document.objects.filter(title="Topic 1").update(updated_at=datetime(2026, 11, 30, 12, tzinfo=UTC))
    Document.objects.exclude(title="Topic 1").update(updated_at=datetime(2026, 11, 2, 12, tzinfo=UTC))

    line = corpus_line(client.get("/").content.decode())

    assert "3 documents" in line
    assert "last updated 30 November 2026" in line


def test_one_document_is_counted_in_the_singular(client: Client, make_document: MakeDocument) -> None:
    make_document(title="The only topic")

    assert "this site's 1 document " in corpus_line(client.get("/").content.decode())


def test_an_empty_corpus_offers_no_examples_and_says_there_is_nothing_to_answer_from(client: Client) -> None:
    html = client.get("/").content.decode()

    assert "no documents yet" in corpus_line(html)
    assert example_questions(html) == []
    assert "data-examples" not in html


def test_the_demo_offers_example_questions_about_its_topics(
    client: Client, demo_corpus: list[Document]
) -> None:
    html = client.get("/").content.decode()
    questions = example_questions(html)

    assert f"this site's {len(demo_corpus)} documents" in corpus_line(html)
    assert 2 <= len(questions) <= 4
    assert len(set(questions)) == len(questions)
    titles = {example_question(d.title) for d in demo_corpus}
    assert set(questions) <= titles
    # The same corpus offers the same questions on every visit.
    assert example_questions(client.get("/").content.decode()) == questions


async def ask_and_settle(question: str) -> Answer:
    """The real pipeline (retrieval and provider from the settings), its support record stored too."""
    answer = await flow.ask(question=question, asker_id=None, publisher=JSON)
    await settled(answer.id)
    return answer


def test_every_example_the_demo_offers_gets_a_cited_answer(
    client: Client, demo_corpus: list[Document], settings: Any
) -> None:
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_MIN_SCORE = 0.1
    questions = example_questions(client.get("/").content.decode())

    for question in questions:
        answer = async_to_sync(ask_and_settle)(question)
        assert answer.status == Answer.Status.DONE, question
        assert answer.fallback is False, question
        assert "[1]" in answer.final_text, question


def test_a_document_whose_text_never_says_its_title_is_no_example(
    client: Client, make_document: MakeDocument
) -> None:
    make_document(title="Interaction with dynamic features", body="Name resolution occurs at runtime.")
    make_document(title="Name resolution", body="Name resolution of free variables occurs at runtime.")

    assert example_questions(client.get("/").content.decode()) == [
        "What should I know about name resolution?"
    ]


def test_example_titles_are_escaped(client: Client, make_document: MakeDocument) -> None:
    make_document(
        title='<script>window.__pwned = 1</script> "quoted" topic',
        # Prose the offline answerer can quote: only questions it answers are offered.
        body="The quoted topic explains why a title holding a script such as window pwned 1 is escaped.",
    )

    html = client.get("/").content.decode()

    assert "<script>window.__pwned" not in html
    assert example_questions(html) == [
        'What should I know about <script>window.__pwned = 1</script> "quoted" topic?'
    ]


@pytest.mark.parametrize(
    ("title", "question"),
    [
        ("The with statement", "What should I know about the with statement?"),
        ("Coroutines", "What should I know about coroutines?"),
        ("Format String Syntax", "What should I know about Format String Syntax?"),
        ("pdb — The Python Debugger", "What should I know about pdb — The Python Debugger?"),
        ("API", "What should I know about API?"),
    ],
)
def test_an_example_question_keeps_a_titles_capitals_unless_it_is_in_sentence_case(
    title: str, question: str
) -> None:
    assert example_question(title) == question


def test_q_fills_the_question_box_for_an_example_chosen_without_javascript(client: Client) -> None:
    html = client.get("/", {"q": "What should I know about <b>the with statement</b>?"}).content.decode()

    box = re.search(r"<textarea[^>]*name=\"question\"[^>]*>(.*?)</textarea>", html, re.S)
    assert box is not None
    assert box.group(1) == "What should I know about &lt;b&gt;the with statement&lt;/b&gt;?"


def test_a_refused_question_keeps_the_first_screen(client: Client, make_document: MakeDocument) -> None:
    make_document(title="A topic")

    response = client.post("/ask/", {"question": "   "})

    assert response.status_code == 400
    assert "1 document" in corpus_line(response.content.decode())


def test_favicon_ico_is_served_not_404(client: Client) -> None:
    response = client.get("/favicon.ico", follow=True)

    assert response.status_code == 200
    assert [status for _, status in response.redirect_chain] == [302]
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert body[:4] == b"\x00\x00\x01\x00"  # an ICO file


def test_pages_link_the_icon(client: Client) -> None:
    html = client.get("/").content.decode()

    assert re.search(r'<link rel="icon" href="/static/answers/favicon.svg" type="image/svg\+xml">', html)
