"""The answer page shows, at every marker, what the stored trail record says became of it.

Multi-pass strips included: a marker that only forms once an out-of-range one
is stripped (`[2[9]]` → `[2]`) shows its rewrite like any other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from django.urls import reverse

from answers.models import Answer, AnswerSource
from tests.fixtures.markers import KEPT, REMOVED, check_markers, marker

pytestmark = pytest.mark.django_db

STRIP = '<del class="qa-stripped" title="stripped: points at no source">'


@dataclass(frozen=True)
class Case:
    raw_text: str
    source_count: int
    final_text: str
    record: list[dict[str, Any]]
    raw_html: str  # the raw-text panel, markers and all
    final_html: list[str]  # each marker of the final text
    decisions: list[tuple[str, str, str]]  # (pass, outcome, written → final) per row, in order
    sources: list[str]  # the renumbering list, one item per source


CASES = {
    "marker_formed_in_pass_2_is_rewritten_and_renumbered": Case(
        raw_text="See [2[9]] here [1].",
        source_count=2,
        final_text="See [1] here [2].",
        record=[
            marker((4, 10), "[2]", [2], KEPT, pass_number=2, final="[1]", final_start=4, final_members=[1]),
            marker((6, 9), "[9]", [9], REMOVED, stripped=[9]),
            marker((16, 19), "[1]", [1], KEPT, final="[2]", final_start=13, final_members=[2]),
        ],
        raw_html='See <mark class="qa-marker qa-formed" title="[2] formed in pass 2">'
        f"[2{STRIP}[9]</del>]</mark>"
        '<span class="qa-rewrite"> → [1]</span> here '
        '<mark class="qa-marker">[1]</mark><span class="qa-rewrite"> → [2]</span>.',
        final_html=['title="[1] Doc 2">[1]</mark>', 'title="[2] Doc 1">[2]</mark>'],
        decisions=[("2", "kept", "[2] → [1]"), ("1", "removed", "—"), ("1", "kept", "[1] → [2]")],
        sources=["1 → 2: <q>Doc 1</q>", "2 → 1: <q>Doc 2</q>"],
    ),
    "marker_formed_in_pass_2_around_the_stripped_one_keeps_its_number": Case(
        raw_text="[[9]1] a [2]",
        source_count=2,
        final_text="[1] a [2]",
        record=[
            marker((0, 6), "[1]", [1], KEPT, pass_number=2, final="[1]", final_start=0, final_members=[1]),
            marker((1, 4), "[9]", [9], REMOVED, stripped=[9]),
            marker((9, 12), "[2]", [2], KEPT, final="[2]", final_start=6, final_members=[2]),
        ],
        raw_html='<mark class="qa-marker qa-formed" title="[1] formed in pass 2">'
        f"[{STRIP}[9]</del>1]</mark>"
        '<span class="qa-rewrite"> → [1]</span> a '
        '<mark class="qa-marker">[2]</mark><span class="qa-rewrite"> → [2]</span>',
        final_html=['title="[1] Doc 1">[1]</mark>', 'title="[2] Doc 2">[2]</mark>'],
        decisions=[("2", "kept", "[1] → [1]"), ("1", "removed", "—"), ("1", "kept", "[2] → [2]")],
        sources=["1 → 1: <q>Doc 1</q>", "2 → 2: <q>Doc 2</q>"],
    ),
    "removed_marker_and_uncited_sources_dropped_rest_renumbered": Case(
        raw_text="Foo [9] [3]",
        source_count=3,
        final_text="Foo [1]",
        record=[
            marker((4, 7), "[9]", [9], REMOVED, stripped=[9]),
            marker((8, 11), "[3]", [3], KEPT, final="[1]", final_start=4, final_members=[1]),
        ],
        raw_html=f"Foo {STRIP}[9]</del> "
        '<mark class="qa-marker">[3]</mark><span class="qa-rewrite"> → [1]</span>',
        final_html=['title="[1] Doc 3">[1]</mark>'],
        decisions=[("1", "removed", "—"), ("1", "kept", "[3] → [1]")],
        sources=["1 dropped: <q>Doc 1</q>", "2 dropped: <q>Doc 2</q>", "3 → 1: <q>Doc 3</q>"],
    ),
}


def page(client, answer: Answer) -> str:
    response = client.get(reverse("admin:answers_answer_change", args=[answer.pk]))
    assert response.status_code == 200
    return response.content.decode()


def panel(html: str, heading: str) -> str:
    """The contents of the text box under `heading` on the answer page."""
    match = re.search(rf"<h4>{re.escape(heading)}</h4>\s*<div class=\"qa-text\">(.*?)</div>\n", html, re.S)
    assert match, heading
    return match.group(1)


def decision_rows(html: str) -> list[tuple[str, str, str]]:
    rows = re.findall(r'<tr class="qa-decision-\w+">(.*?)</tr>', html, re.S)
    cells = [re.findall(r"<td>(.*?)</td>", row, re.S) for row in rows]
    return [(c[1], c[5], re.sub(r"</?code>", "", c[6])) for c in cells]


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_answer_page_shows_every_rewrite_strip_and_renumbering(admin_client, answer_factory, case: Case):
    answer = answer_factory(text=case.raw_text, source_count=case.source_count)
    assert answer.final_text == case.final_text
    sources = {s.original_number: s.title for s in answer.sources.all()}
    # The record the pipeline stored is the one the case spells out (checked against both texts).
    assert answer.markers == check_markers(answer, case.record)

    html = page(admin_client, answer)

    assert panel(html, "Raw text (what the model wrote)") == _titles(case.raw_html, sources)
    final = panel(html, "Final text (what readers got)")
    assert final.count('<mark class="qa-marker"') == len(case.final_html)
    for fragment in case.final_html:
        assert _titles(fragment, sources) in final
    assert decision_rows(html) == case.decisions
    for item in case.sources:
        assert _titles(item, sources) in html
    assert "per-marker record is missing" not in html


def _titles(text: str, titles: dict[int, str]) -> str:
    """`Doc N` in an expected fragment stands for source N's title (the factory numbers its documents)."""
    return re.sub(r"Doc (\d+)", lambda m: titles[int(m.group(1))], text)


def test_an_answer_stored_before_the_record_says_so_and_shows_no_decisions(admin_client, answer_factory):
    answer = answer_factory(text="A [2] then [1].", source_count=2)
    Answer.objects.filter(pk=answer.pk).update(markers=[])

    html = page(admin_client, answer)

    assert "The per-marker record is missing" in html
    assert panel(html, "Raw text (what the model wrote)") == "A [2] then [1]."
    assert 'class="qa-decision-' not in html
    assert "2 → 1" in html  # the sources' outcomes are their own rows, still shown


def test_an_answer_without_markers_has_no_record_to_miss(admin_client, answer_factory):
    answer = answer_factory(text="No markers at all.", source_count=2)
    assert answer.sources.filter(status=AnswerSource.Status.FALLBACK).count() == 2

    html = page(admin_client, answer)

    assert "per-marker record is missing" not in html
    assert "No markers." in html


HOSTILE = '<img src=x onerror="window.__pwned=1">'


def test_the_hybrid_retrieval_panel_escapes_what_the_trace_carries(admin_client, answer_factory):
    answer = answer_factory(text="A [1].", source_count=1)
    used = {
        "dense": {"status": "used", "index": "sqlite-numpy", "model": HOSTILE, "candidates": 1},
        "fusion": [
            {"chunk_id": 7, "document_id": 3, "lexical_rank": None, "dense_rank": 1, "fused_rank": 1,
             "dense_similarity": 0.91234},
        ],
        "kept": [{"number": 1, "document_id": 3, "title": HOSTILE, "chunk_ids": [7], "score": 0.5}],
    }  # fmt: skip
    Answer.objects.filter(pk=answer.pk).update(retrieval_trace=used)

    html = page(admin_client, answer)

    assert HOSTILE not in html
    assert "model &lt;img src=x onerror=&quot;window.__pwned=1&quot;&gt;" in html
    assert re.search(
        r"<td>1</td>\s*<td>—</td>\s*<td>1</td>\s*<td>0\.912</td>\s*<td>&lt;img src=x onerror=&quot;"
        r"window\.__pwned=1&quot;&gt;</td>\s*<td>3</td>\s*<td>7</td>\s*<td>source 1</td>",
        html,
    )

    fallback = {"dense": {"status": "fallback", "reason": f"server said {HOSTILE}"}}
    Answer.objects.filter(pk=answer.pk).update(retrieval_trace=fallback)

    html = page(admin_client, answer)

    assert HOSTILE not in html
    assert (
        "lexical retrieval alone: server said &lt;img src=x onerror=&quot;window.__pwned=1&quot;&gt;" in html
    )


def test_the_retrieval_panel_names_where_a_copied_passage_was_kept(admin_client, make_document):
    """A passage two documents hold is one source; QA sees the copy cut and the chunk kept instead."""
    section = "# Basic customization\n\nThe zebra method initialises a new instance after it is created.\n"
    gathering = make_document(
        title="Special <method> names", body=section + "\n# Other\n\nUnrelated words.\n"
    )
    own_page = make_document(title="Basic customization", body=section)
    response = admin_client.post(
        "/api/answers/", {"question": "What does the zebra method do?"}, content_type="application/json"
    )
    answer = Answer.objects.get(id=response.json()["id"])
    (copy,) = answer.retrieval_trace["cut_as_copy"]
    kept_chunk = copy["same_as"]["chunk_id"]
    assert [s.document_id for s in answer.sources.all()] == [own_page.id]

    html = page(admin_client, answer)

    assert "Cut as a copy (the same passage, kept from the document with fewest chunks) — 1" in html
    assert (
        f"<td>Special &lt;method&gt; names (same as chunk {kept_chunk} of document {own_page.id})</td>"
        f"<td>{gathering.id}</td><td>{copy['chunk_id']}</td>"
    ) in html
