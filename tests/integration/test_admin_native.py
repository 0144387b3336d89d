"""The answer's admin page marks the spans a provider's own citations name in the raw text
(docs/howto/providers.md): cohere's records by their span and marker, a record with only a marker
position (mistral's shape) by its marker, overlapping spans piece by piece, everything escaped."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from answers.admin.panels.native import native_panel
from answers.models import Answer
from tests.fixtures.answers import QUESTION
from tests.fixtures.cohere_stub import Chat, Cite, StubCohereServer

pytestmark = pytest.mark.django_db


def _page(client, answer_id: str) -> BeautifulSoup:
    html = client.get(f"/admin/answers/answer/{answer_id}/change/").content.decode()
    return BeautifulSoup(html, "html.parser")


def test_cohere_spans_and_markers_are_marked_in_the_raw_text_escaped(
    client, corpus, cohere_settings, stub_cohere: StubCohereServer, admin_user
) -> None:
    reply = "<b>Teacups</b> & glue hold. Walruses agree."
    stub_cohere.enqueue(Chat((reply, Cite(0, 27, "1"), Cite(28, 43, ("3", "8")))))
    body = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json").json()
    client.force_login(admin_user)

    page = _page(client, body["id"])

    text = page.select_one("[data-native-text]")
    assert text is not None
    assert text.get_text() == "<b>Teacups</b> & glue hold [1]. Walruses agree [3, 0]."
    assert [m.get_text() for m in text.select("[data-native-span='1']")] == [
        "<b>Teacups</b> & glue hold ",
        "[1]",
        ".",
    ]
    assert [m.get_text() for m in text.select("[data-native-marker]")] == ["[1]", "[3, 0]"]
    assert "".join(m.get_text() for m in text.select("[data-native-span='2']")) == "Walruses agree [3, 0]."
    assert not page.select("[data-native-text] b")  # the model's markup is text, never HTML
    rows = page.select("[data-native-row]")
    assert [r.select("code")[0].get_text() for r in rows] == [
        "<b>Teacups</b> & glue hold [1].",
        "Walruses agree [3, 0].",
    ]


def test_a_reply_without_native_citations_says_so(
    client, corpus, cohere_settings, stub_cohere: StubCohereServer, admin_user
) -> None:
    stub_cohere.enqueue(Chat(("Teacups need care.",)))
    body = client.post("/api/answers/", {"question": QUESTION}, content_type="application/json").json()
    client.force_login(admin_user)

    page = _page(client, body["id"])

    assert page.select("[data-native-text]") == []
    assert "the provider gave no native citations" in page.get_text()


def test_records_with_only_a_marker_position_mark_the_marker(answer_factory) -> None:
    answer = answer_factory(text="Doc one says [1]. Both say [1, 2].", source_count=2)
    # Mistral's shape: where the reference chunk came (`at`), its ids, where its marker went.
    Answer.objects.filter(pk=answer.pk).update(
        native=[
            {"at": 12, "ids": [0], "marker_at": 13},
            {"at": 26, "ids": ["0", 1], "marker_at": 27},
            {"at": 40, "ids": [5], "marker_at": 99},  # offsets past the text: listed, nothing marked
        ]
    )
    answer.refresh_from_db()

    panel = native_panel(answer)

    marked = [(p.text, p.markers) for p in panel.pieces if p.markers or p.spans]
    assert marked == [("[1]", (1,)), ("[1, 2]", (2,))]
    assert "".join(p.text for p in panel.pieces) == answer.raw_text
    assert [(r.number, r.marker, r.span) for r in panel.rows] == [
        (1, "[1]", None),
        (2, "[1, 2]", None),
        (3, None, None),
    ]


def test_overlapping_spans_are_cut_into_pieces_each_naming_its_citations(answer_factory) -> None:
    answer = answer_factory(text="Alpha beta gamma [1] delta [2].", source_count=2)
    Answer.objects.filter(pk=answer.pk).update(
        native=[
            {"span_at": [0, 16], "marker_at": 17},
            {"span_at": [6, 26], "marker_at": 27},
        ]
    )
    answer.refresh_from_db()

    pieces = [(p.text, p.spans, p.markers) for p in native_panel(answer).pieces]

    assert pieces == [
        ("Alpha ", (1,), ()),
        ("beta gamma", (1, 2), ()),
        (" ", (2,), ()),
        ("[1]", (2,), (1,)),
        (" delta", (2,), ()),
        (" ", (), ()),
        ("[2]", (), (2,)),
        (".", (), ()),
    ]
