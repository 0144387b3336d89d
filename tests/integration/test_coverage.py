"""The coverage record beside the support record: asked about Java, cited only Python pages, the answer is
flagged "may not address the question" in the trail, on the admin page, by a list filter, on the health
page and in `/metrics`.

Answers come from the real pipeline (JSON path, scripted replies over real documents, indexed so the
corpus counts are real); the factory waits for the records the pipeline computes after `done`.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import Client, override_settings
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from answers.models import Answer

pytestmark = pytest.mark.django_db

JAVA_QUESTION = "How are exceptions handled in Java?"
PYTHON_QUESTION = "How are exceptions handled in Python?"
KOTLIN_QUESTION = "How are exceptions handled in Kotlin?"
ANSWER = "Exceptions are raised with raise and handled with try and except [1]."


@pytest.fixture
def pages(make_document):
    """Two Python pages and a Java one: the site knows the word "java"."""
    return {
        "python": make_document(
            title="Python exceptions",
            body="Exceptions in Python are raised with raise and handled with try and except clauses.",
        ),
        "python_more": make_document(
            title="Python errors and tracebacks",
            body="A Python traceback shows where an exception was raised and how it was handled.",
        ),
        "java": make_document(
            title="Java exceptions",
            body="In Java, exceptions are thrown with throw and handled with try and catch blocks.",
        ),
    }


def trail(client: Client, answer: Answer) -> dict:
    response = client.get(f"/api/answers/{answer.pk}/trail/")
    assert response.status_code == 200
    return response.json()


def test_asked_about_java_cited_only_python_pages_is_flagged(admin_client, answer_factory, pages):
    answer = answer_factory(
        text=ANSWER, question=JAVA_QUESTION, documents=[pages["python"], pages["python_more"]]
    )

    coverage = trail(admin_client, answer)["coverage"]
    assert "java" in coverage["terms"]
    assert "exceptions" in coverage["terms"]
    assert "java" in coverage["missing"]
    assert "java" in coverage["key"]
    assert "exceptions" in coverage["covered"]
    assert coverage["flag"] is True
    answer.refresh_from_db()
    assert answer.may_not_address is True
    page = admin_client.get(reverse("admin:answers_answer_change", args=[answer.pk])).content.decode()
    assert "May not address the question:</strong> no cited source holds java." in page
    assert 'data-term="java" data-covered="false"' in page


def test_the_same_question_answered_from_the_java_page_is_not_flagged(admin_client, answer_factory, pages):
    answer = answer_factory(text=ANSWER, question=JAVA_QUESTION, documents=[pages["java"], pages["python"]])
    coverage = trail(admin_client, answer)["coverage"]
    assert "java" in coverage["covered"]
    assert coverage["flag"] is False


def test_a_term_no_document_holds_is_missing_but_does_not_flag(admin_client, answer_factory, pages):
    answer = answer_factory(text=ANSWER, question=KOTLIN_QUESTION, documents=[pages["python"]])
    coverage = trail(admin_client, answer)["coverage"]
    assert "kotlin" in coverage["missing"]
    assert "kotlin" not in coverage["key"]
    assert coverage["flag"] is False


def test_the_list_filter_and_the_health_page_show_answers_that_may_not_address_the_question(
    admin_client, answer_factory, pages
):
    flagged = answer_factory(text=ANSWER, question=JAVA_QUESTION, documents=[pages["python"]])
    fine = answer_factory(text=ANSWER, question=PYTHON_QUESTION, documents=[pages["python"]])
    changelist = reverse("admin:answers_answer_changelist")

    def listed(query: str) -> list[str]:
        return [a.question for a in admin_client.get(changelist + query).context["cl"].result_list]

    assert listed("?may_not_address=yes") == [flagged.question]
    assert listed("?may_not_address=no") == [fine.question]
    response = admin_client.get(reverse("admin:answers_answer_health"))
    (row,) = response.context["rows"]
    assert (row["coverage_checked"], row["may_not_address"]) == (2, "50%")
    assert "<title>may not address the question: 50%</title>" in response.content.decode()


def test_check_support_computes_the_coverage_again(admin_client, answer_factory, pages):
    answer = answer_factory(text=ANSWER, question=JAVA_QUESTION, documents=[pages["python"]])
    Answer.objects.filter(pk=answer.pk).update(coverage=None, may_not_address=None)
    assert trail(admin_client, answer)["coverage"] is None

    call_command("check_support", stdout=io.StringIO())

    assert trail(admin_client, answer)["coverage"]["flag"] is True
    assert Answer.objects.get(pk=answer.pk).may_not_address is True


def flagged_count(client: Client) -> float:
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-token")
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            if sample.name == "answers_citation_outcomes_total" and sample.labels == {
                "outcome": "may_not_address"
            }:
                return float(sample.value)
    return 0.0


@override_settings(ANSWERS_METRICS_TOKEN="metrics-token")
def test_metrics_count_answers_that_may_not_address_the_question(client, answer_factory, pages):
    before = flagged_count(client)
    answer_factory(text=ANSWER, question=JAVA_QUESTION, documents=[pages["python"]])
    answer_factory(text=ANSWER, question=PYTHON_QUESTION, documents=[pages["python"]])
    assert flagged_count(client) == before + 1
