"""Excerpts readers can read (issue 33): the passage that backs the answer is known at `done` (before
the support record), and the same passage under two titles is listed once, naming both."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from answers.models import Answer, Document
from answers.payloads import answer_done_payload

pytestmark = pytest.mark.django_db

CATS = "Cats sleep most of the day in warm places. "
ZEBRAS = "Zebras live in grassland and savanna across Africa."


def document(title: str, body: str, n: int) -> Document:
    return Document.objects.create(
        key=f"https://example.org/{n}",
        title=title,
        url=f"https://example.org/{n}",
        body=body,
        content_hash=f"{n:064d}",
    )


def test_done_marks_the_best_matching_sentence_before_the_support_record_exists(answer_factory):
    body = CATS * 3 + ZEBRAS
    answer = answer_factory(text="Zebras live in grassland [1].", documents=[document("Zebras", body, 1)])
    Answer.objects.filter(pk=answer.pk).update(support=None)  # as at `done`: the record comes after
    answer.refresh_from_db()

    payload = answer_done_payload(answer=answer)

    start = body.index(ZEBRAS)
    assert payload["passages"] == {"1": [[start, start + len(ZEBRAS)]]}


def test_the_same_passage_under_two_titles_is_listed_once_naming_both(client: Client, answer_factory):
    body = "Names are bound in blocks; a *global* statement binds at module level, excluding globals."
    answer = answer_factory(
        text="Names bind in blocks [1] and modules [2].",
        documents=[document("Execution model", body, 1), document("Naming and binding", body, 2)],
    )
    assert answer_done_payload(answer=answer)["same_passage"] == {"2": 1}

    html = client.get(answer.get_absolute_url()).content.decode()
    items = re.findall(r'<li id="source-\d+".*?</li>', html, re.S)
    assert len(items) == 2, "each source keeps its own numbered entry"
    first, second = items
    assert first.count('class="source-excerpt"') == 1
    assert "Also in [2] Naming and binding." in first
    assert 'class="source-excerpt"' not in second
    assert "Same passage as [1]." in second
    # The excerpt is the passage as a reader reads it: no Markdown marks.
    assert "a global statement" in first
    assert "*global*" not in first
