"""Declining when nothing is relevant (docs/explanation/trail.md): no provider request, the same
declined answer through the JSON API, the trail, the pages, admin, the health page, `/metrics`, `ask` and
`audit_citations`.

"Nothing relevant" is made the two ways a site meets it: a question whose terms are in no document, and
a threshold (ANSWERS_MIN_SCORE) above every candidate's score. The stub servers speak the real protocols,
so "the provider was not called" is checked where it would show: the stub received no request.
"""

from __future__ import annotations

import io
import re
from html import unescape

import pytest
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from answers.conf import DECLINE_TEXT
from answers.models import Answer
from answers.retrieval.query import query_terms
from tests.fixtures.answers import QUESTION
from tests.fixtures.providers import Reply

pytestmark = pytest.mark.django_db

URL = "/api/answers/"
# No word of it is in any document of the `corpus` fixture (walrus teacups and carpentry).
OFF_TOPIC = "How do zeppelins moor in Patagonia?"
ANSWER_KEYS = {"id", "question", "status", "text", "references", "fallback", "declined"}


def ask(client: Client, question: str = OFF_TOPIC) -> dict:
    response = client.post(URL, {"question": question}, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()


def ask_command(question: str = OFF_TOPIC) -> str:
    """`manage.py ask`: the real pipeline, which also waits for the support and coverage records."""
    out = io.StringIO()
    call_command("ask", question, stdout=out)
    return out.getvalue()


def answer_id_of(output: str) -> str:
    found = re.search(r"Answer id: ([0-9a-f-]{36})", output)
    assert found, output
    return found.group(1)


def assert_declined(body: dict, text: str = DECLINE_TEXT) -> None:
    assert set(body) >= ANSWER_KEYS
    assert body["status"] == "done"
    assert body["declined"] is True
    assert body["references"] == []
    assert body["text"] == text
    assert body["fallback"] is False


# --- the JSON path


def test_a_question_no_document_speaks_to_is_declined_without_a_request_to_the_model(
    client, corpus, openai_settings, stub_openai
):
    stub_openai.enqueue(Reply(pieces=["Zeppelins moor at masts [1]."]))

    body = ask(client)

    assert_declined(body)
    assert stub_openai.requests == []  # not one request: no cost, nothing to make an answer up from
    answer = Answer.objects.get(id=body["id"])
    assert (answer.declined, answer.raw_text, answer.final_text) == (True, DECLINE_TEXT, DECLINE_TEXT)
    assert answer.sources.count() == 0
    assert (answer.provider, answer.model) == ("openai", "stub-model")  # who would have been asked
    assert answer.generation_ms is None
    assert answer.total_ms is not None
    # The permalink's API object says the same.
    again = client.get(f"{URL}{body['id']}/").json()
    assert {k: again[k] for k in ANSWER_KEYS} == {k: body[k] for k in ANSWER_KEYS}


def test_a_threshold_above_every_candidate_declines_a_question_it_would_have_answered(
    client, corpus, openai_settings, stub_openai
):
    openai_settings.ANSWERS_MIN_SCORE = 1.0
    declined = ask(client, QUESTION)
    assert_declined(declined)
    assert stub_openai.requests == []
    trace = Answer.objects.get(id=declined["id"]).retrieval_trace
    assert trace["kept"] == []
    assert len(trace["cut_by_threshold"]) >= 4

    openai_settings.ANSWERS_MIN_SCORE = 0.0
    stub_openai.enqueue(Reply(pieces=["Carpentry needs teacups [1]."]))
    answered = ask(client, QUESTION)
    assert answered["declined"] is False
    assert answered["text"] == "Carpentry needs teacups [1]."
    assert len(stub_openai.requests) == 1


def test_no_sources_answer_keeps_calling_the_model(client, corpus, openai_settings, stub_openai):
    openai_settings.ANSWERS_NO_SOURCES = "answer"
    stub_openai.enqueue(Reply(pieces=["I found nothing about zeppelins."]))

    body = ask(client)

    assert body["declined"] is False
    assert body["text"] == "I found nothing about zeppelins."
    (request,) = stub_openai.requests
    assert "zeppelins" in request["messages"][-1]["content"]


def test_the_decline_text_is_the_setting(client, corpus, openai_settings, stub_openai):
    openai_settings.ANSWERS_DECLINE_TEXT = "Nothing on this site covers that; try another question."
    assert_declined(ask(client), "Nothing on this site covers that; try another question.")
    assert stub_openai.requests == []


def test_the_anthropic_provider_is_not_called_either(client, corpus, anthropic_settings, stub_anthropic):
    body = ask(client)

    assert_declined(body)
    assert stub_anthropic.requests == []
    assert Answer.objects.get(id=body["id"]).provider == "anthropic"


# --- the trail, `ask`, audit_citations


def test_ask_prints_the_decline_and_the_trail_records_it_with_its_coverage(
    admin_client, corpus, openai_settings, stub_openai
):
    output = ask_command()

    assert output.startswith(DECLINE_TEXT)
    assert "(Declined: no retrieved source reached the relevance threshold" in output
    assert "Sources:" not in output
    assert stub_openai.requests == []
    trail = admin_client.get(f"{URL}{answer_id_of(output)}/trail/").json()
    assert trail["declined"] is True
    assert trail["sources"] == []
    assert trail["text"] == trail["raw_text"] == DECLINE_TEXT
    assert trail["stripped"] == []
    assert trail["markers"] == []
    assert trail["fallback"] is False
    terms = query_terms(OFF_TOPIC)
    assert "patagonia" in terms
    # Nothing is cited, so every term is missing; a declined answer is never "may not address".
    assert trail["coverage"] == {"terms": terms, "covered": [], "missing": terms, "key": [], "flag": False}
    (sentence,) = trail["support"]["sentences"]
    assert (sentence["text"], sentence["verdict"], sentence["grounded_by"]) == (DECLINE_TEXT, "uncited", [])


def test_audit_citations_accepts_a_declined_answer_and_reports_a_tampered_one(
    corpus, openai_settings, stub_openai, answer_factory
):
    answer_factory(text="Teacups [1].", source_count=2)
    declined_id = answer_id_of(ask_command())
    out = io.StringIO()
    call_command("audit_citations", stdout=out)
    assert "checked 2 answers, 0 differ" in out.getvalue()

    Answer.objects.filter(id=declined_id).update(final_text="Something else.")
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("audit_citations", stdout=out)
    assert (
        f"{declined_id}: declined, but the final text 'Something else.' is not the raw text" in out.getvalue()
    )


# --- pages


def test_the_permalink_of_a_declined_answer_has_no_sources_and_offers_example_questions(
    client, corpus, openai_settings, stub_openai
):
    body = ask(client)
    html = client.get(f"/answers/{body['id']}/").content.decode()

    container = re.search(r"<section[^>]*data-answer\b[^>]*>", html)
    assert container
    assert "data-answer-declined" in container.group(0)
    assert 'data-answer-status="done"' in container.group(0)
    text = re.search(r"<div[^>]*data-answer-text[^>]*>(.*?)</div>", html, re.DOTALL)
    assert text
    assert DECLINE_TEXT in unescape(text.group(1))
    sources = re.search(r"<ol[^>]*data-answer-sources[^>]*>(.*?)</ol>", html, re.DOTALL)
    assert sources
    assert " hidden" in sources.group(0).split(">")[0]
    assert "<li" not in sources.group(1)
    assert re.search(r"<div[^>]*data-answer-retrieved-block[^>]*hidden", html)
    assert "data-example-question=" in html

    stub_openai.enqueue(Reply(pieces=["Carpentry needs teacups [1]."]))
    answered = ask(client, QUESTION)
    html = client.get(f"/answers/{answered['id']}/").content.decode()
    assert "data-answer-declined" not in html
    assert "data-example-question=" not in html


# --- admin, health, metrics


@pytest.fixture
def declined_and_answered(corpus, openai_settings, stub_openai, answer_factory):
    """One declined answer (openai / stub-model) and one answered one (scripted / scripted-1)."""
    declined = Answer.objects.get(id=answer_id_of(ask_command()))
    answered = answer_factory(text="Teacups [1].", source_count=2)
    return declined, answered


def changelist_questions(client: Client, query: str) -> list[str]:
    response = client.get(reverse("admin:answers_answer_changelist") + query)
    assert response.status_code == 200
    return [a.question for a in response.context["cl"].result_list]


def test_admin_filters_declined_answers_and_its_page_says_why(admin_client, declined_and_answered):
    declined, answered = declined_and_answered

    assert changelist_questions(admin_client, "?declined__exact=1") == [declined.question]
    assert changelist_questions(admin_client, "?declined__exact=0") == [answered.question]
    page = admin_client.get(reverse("admin:answers_answer_change", args=[declined.pk])).content.decode()
    assert "Yes: no retrieved source reached the threshold (0), so the provider was not called" in page
    assert "Declined: no source was cited" in page


def test_health_page_shows_the_declined_share_per_provider_and_model(admin_client, declined_and_answered):
    response = admin_client.get(reverse("admin:answers_answer_health"))
    rows = {(r["provider"], r["model"]): r for r in response.context["rows"]}

    assert rows["openai", "stub-model"]["declined"] == "100%"
    assert rows["scripted", "scripted-1"]["declined"] == "0%"
    assert response.context["total"]["declined"] == "50%"
    assert "<title>declined (nothing relevant): 100%</title>" in response.content.decode()


def outcome(client: Client, name: str) -> float:
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-token")
    assert response.status_code == 200
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            if sample.name == "answers_citation_outcomes_total" and sample.labels == {"outcome": name}:
                return float(sample.value)
    return 0.0


@override_settings(ANSWERS_METRICS_TOKEN="metrics-token")
def test_metrics_count_declined_answers(client, corpus, openai_settings, stub_openai):
    before = outcome(client, "declined")
    ask(client)
    ask(client, "Which lighthouse optics focus beams?")
    assert outcome(client, "declined") == before + 2
