"""Quotes in the Sources list: the passage of a source that backs the answer is marked in its excerpt.

On the permalink page: a native-citation quote (the anthropic provider, against its stub
server) and a passage the support record names. In the API: the answer object's and the
`done` event's `quotes`. Answers come from the real pipeline; each test waits for the support
record the pipeline computes after `done`.
"""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import Client

from answers.models import Answer
from answers.pipeline import flow
from answers.pipeline.publisher import JSON
from tests.fixtures.answers import settled
from tests.fixtures.anthropic_stub import Block, Cite, Message, StubAnthropicServer
from tests.fixtures.content import MakeDocument

pytestmark = pytest.mark.django_db

QUESTION = "Where do zebras live, and what do their stripes do?"
HOSTILE = (
    'Zebras live in <script>window.__pwned = 1</script> grassland & "savanna" <img src=x onerror=alert(1)>.'
)
ZEBRAS = f"Zebras are African equines with stripes. {HOSTILE} Foals stand within an hour of birth."
STRIPES = (
    "Stripes confuse biting flies, field tests with horses in striped coats showed. Zebras sleep standing."
)


async def ask_and_settle(question: str) -> Answer:
    answer = await flow.ask(question=question, asker_id=None, publisher=JSON)
    await settled(answer.id)
    return answer


def sources(html: str) -> dict[int, str]:
    """Each Sources list item's excerpt markup, by the number it shows."""
    items = re.findall(r'<li id="source-(\d+)".*?<p class="source-excerpt">(.*?)</p>', html, re.S)
    return {int(number): excerpt for number, excerpt in items}


def marks(excerpt_html: str) -> list[str]:
    return [unescape(m) for m in re.findall(r"<mark>(.*?)</mark>", excerpt_html, re.S)]


@pytest.fixture
def zebra_documents(make_document: MakeDocument) -> None:
    make_document(title="Zebra habitats", body=ZEBRAS, url="https://example.org/zebras")
    make_document(title="Zebra stripes", body=STRIPES, url="https://example.org/stripes")


def test_a_native_quote_is_marked_in_its_sources_excerpt_and_stays_text(
    client: Client,
    zebra_documents: None,
    anthropic_settings: Any,
    stub_anthropic: StubAnthropicServer,
) -> None:
    stub_anthropic.enqueue(
        Message(blocks=[Block("Zebras live in grassland and savanna", Cite(0, HOSTILE)), Block(".")])
    )
    answer = async_to_sync(ask_and_settle)(QUESTION)
    assert answer.status == Answer.Status.DONE, answer.error_message
    assert answer.final_text == "Zebras live in grassland and savanna [1]."

    html = client.get(answer.get_absolute_url()).content.decode()

    excerpt = sources(html)[1]
    assert marks(excerpt) == [HOSTILE]
    assert "<script>" not in excerpt
    assert "<img" not in excerpt
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in excerpt
    # The excerpt around the quote still reads as written.
    assert unescape(re.sub(r"</?mark>", "", excerpt)) == ZEBRAS


def test_the_api_and_the_done_event_carry_the_quotes_by_final_number(
    client: Client,
    zebra_documents: None,
    anthropic_settings: Any,
    stub_anthropic: StubAnthropicServer,
) -> None:
    stub_anthropic.enqueue(Message(blocks=[Block("Zebras live in grassland", Cite(0, HOSTILE)), Block(".")]))

    body = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json").json()

    assert body["quotes"] == {"1": [HOSTILE]}
    assert body["references"][0]["title"] == "Zebra habitats"


def test_a_passage_the_support_record_names_is_marked(
    client: Client, answer_factory: Any, make_document: MakeDocument
) -> None:
    zebras = make_document(title="Zebra habitats", body=ZEBRAS)
    stripes = make_document(title="Zebra stripes", body=STRIPES)
    answer = answer_factory(
        text="Stripes confuse biting flies [2]. Foals stand within an hour of birth [1].",
        documents=[zebras, stripes],
    )
    assert answer.support is not None
    assert [s["verdict"] for s in answer.support["sentences"]] == ["supported", "supported"]

    html = client.get(answer.get_absolute_url()).content.decode()

    by_number = sources(html)
    assert marks(by_number[1]) == [
        "Stripes confuse biting flies, field tests with horses in striped coats showed."
    ]
    assert marks(by_number[2]) == ["Foals stand within an hour of birth."]
    assert "<script>" not in by_number[2]


def test_an_unsupported_citation_marks_nothing(
    client: Client, answer_factory: Any, make_document: MakeDocument
) -> None:
    stripes = make_document(title="Zebra stripes", body=STRIPES)
    answer = answer_factory(text="Penguins cannot fly at all [1].", documents=[stripes])
    assert answer.support is not None
    assert answer.support["sentences"][0]["verdict"] == "unsupported"

    excerpt = sources(client.get(answer.get_absolute_url()).content.decode())[1]

    assert "<mark>" not in excerpt
    assert unescape(excerpt) == STRIPES
