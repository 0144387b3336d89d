"""Tests of compute_trail: each marker decision pinned by hand, and properties against strip and finalize."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from answers.citations import finalize_citations, scan_markers, strip_out_of_range_markers
from answers.citations.finalize import Finalized
from answers.citations.normalize import Normalized, normalize_markers
from answers.citations.strip import StripResult
from answers.citations.trail import (
    MarkerDecision,
    MarkerOutcome,
    SourceStatus,
    Trail,
    compute_trail,
    run_steps,
)
from tests.fixtures.citation_texts import PROPERTY, source_counts, texts, with_dialects

KEPT, REWRITTEN, REMOVED, UNMARKED = MarkerOutcome

# A decision as (raw span, written, pass, outcome, stripped, final text, final members).
Row = tuple[tuple[int, int], str, int, MarkerOutcome, tuple[int, ...], str | None, tuple[int, ...]]

# (raw text, source count, final text, the decisions in order)
CASES = [
    pytest.param(
        "See [2[9]] here [1].",
        2,
        "See [1] here [2].",
        [
            ((4, 10), "[2]", 2, KEPT, (), "[1]", (1,)),
            ((6, 9), "[9]", 1, REMOVED, (9,), None, ()),
            ((16, 19), "[1]", 1, KEPT, (), "[2]", (2,)),
        ],
        id="passes/a-marker-formed-in-pass-2-spans-its-raw-characters-and-is-renumbered",
    ),
    pytest.param(
        "[[9]1] a [2]",
        2,
        "[1] a [2]",
        [
            ((0, 6), "[1]", 2, KEPT, (), "[1]", (1,)),
            ((1, 4), "[9]", 1, REMOVED, (9,), None, ()),
            ((9, 12), "[2]", 1, KEPT, (), "[2]", (2,)),
        ],
        id="passes/a-removal-inside-brackets-forms-a-marker-around-it",
    ),
    pytest.param(
        "[9[9[9]]] [1]",
        1,
        "[1]",
        [
            ((0, 9), "[9]", 3, REMOVED, (9,), None, ()),
            ((2, 8), "[9]", 2, REMOVED, (9,), None, ()),
            ((4, 7), "[9]", 1, REMOVED, (9,), None, ()),
            ((10, 13), "[1]", 1, KEPT, (), "[1]", (1,)),
        ],
        id="passes/one-level-per-pass",
    ),
    pytest.param(
        "Foo [9] [3]",
        3,
        "Foo [1]",
        [
            ((4, 7), "[9]", 1, REMOVED, (9,), None, ()),
            ((8, 11), "[3]", 1, KEPT, (), "[1]", (1,)),
        ],
        id="renumbering/the-only-cited-source-becomes-1",
    ),
    pytest.param(
        "a [3, 9, 1] b",
        3,
        "a [1, 2] b",
        [((2, 11), "[3, 9, 1]", 1, REWRITTEN, (9,), "[1, 2]", (1, 2))],
        id="rewritten/out-of-range-member-stripped-the-rest-renumbered",
    ),
    pytest.param(
        "a [2-4] [1]",
        3,
        "a [1, 2] [3]",
        [
            ((2, 7), "[2-4]", 1, REWRITTEN, (4,), "[1, 2]", (1, 2)),
            ((8, 11), "[1]", 1, KEPT, (), "[3]", (3,)),
        ],
        id="rewritten/a-range-loses-its-out-of-range-end",
    ),
    pytest.param(
        "Foo [9]. [1]",
        1,
        "Foo. [1]",
        [((4, 7), "[9]", 1, REMOVED, (9,), None, ()), ((9, 12), "[1]", 1, KEPT, (), "[1]", (1,))],
        id="removed/with-the-blank-run-before",
    ),
    pytest.param(
        "[9] Foo [1]",
        1,
        "Foo [1]",
        [((0, 3), "[9]", 1, REMOVED, (9,), None, ()), ((8, 11), "[1]", 1, KEPT, (), "[1]", (1,))],
        id="removed/with-the-blank-run-after-when-none-before",
    ),
    pytest.param(
        "a [9] [8] b [1]",
        1,
        "a b [1]",
        [
            ((2, 5), "[9]", 1, REMOVED, (9,), None, ()),
            ((6, 9), "[8]", 1, REMOVED, (8,), None, ()),
            ((12, 15), "[1]", 1, KEPT, (), "[1]", (1,)),
        ],
        id="removed/two-in-a-row",
    ),
    pytest.param(
        "a\n[9] [1]: x",
        1,
        "a\n[1]: x",
        [((2, 5), "[9]", 1, REMOVED, (9,), None, ()), ((6, 9), "[1]", 1, UNMARKED, (), None, ())],
        id="unmarked/a-removal-makes-it-a-reference-definition",
    ),
    pytest.param(
        "great[9] and [1]",
        1,
        "great and [1]",
        [((5, 8), "[9]", 1, REMOVED, (9,), None, ()), ((13, 16), "[1]", 1, KEPT, (), "[1]", (1,))],
        id="removed/mid-word-joins-no-words",
    ),
    pytest.param(
        "\\ [9][1]",
        1,
        "\\[1]",
        [((2, 5), "[9]", 1, REMOVED, (9,), None, ()), ((5, 8), "[1]", 1, UNMARKED, (), None, ())],
        id="unmarked/a-removal-puts-a-backslash-before-it",
    ),
    pytest.param(
        "[9][1]: x",
        1,
        "[1]: x",
        [((0, 3), "[9]", 1, REMOVED, (9,), None, ()), ((3, 6), "[1]", 1, UNMARKED, (), None, ())],
        id="unmarked/a-removal-makes-it-a-reference-definition",
    ),
    pytest.param(
        "[9]```\n[1]",
        1,
        "```\n[1]",
        [((0, 3), "[9]", 1, REMOVED, (9,), None, ()), ((7, 10), "[1]", 1, UNMARKED, (), None, ())],
        id="unmarked/a-removal-opens-a-fence-above-it",
    ),
    pytest.param(
        "x`x`[9]`[1]``",
        1,
        "x`x``[1]``",
        [((4, 7), "[9]", 1, REMOVED, (9,), None, ()), ((8, 11), "[1]", 1, UNMARKED, (), None, ())],
        id="unmarked/a-removal-merges-backtick-runs-into-a-code-span-around-it",
    ),
    pytest.param(
        "`[9]` [1]",
        1,
        "`[9]` [1]",
        [((6, 9), "[1]", 1, KEPT, (), "[1]", (1,))],
        id="code/left-alone-and-no-decision",
    ),
    pytest.param("No citations here.", 3, "No citations here.", [], id="fallback/no-marker"),
    pytest.param(
        "Foo [9] bar [0].",
        2,
        "Foo bar.",
        [((4, 7), "[9]", 1, REMOVED, (9,), None, ()), ((12, 15), "[0]", 1, REMOVED, (0,), None, ())],
        id="fallback/only-out-of-range-markers",
    ),
]


def _rows(trail: Trail) -> list[Row]:
    return [
        ((m.raw_start, m.raw_end), m.written, m.pass_number, m.outcome, m.stripped, m.final, m.final_members)
        for m in trail.markers
    ]


@pytest.mark.parametrize(("raw", "count", "final_text", "decisions"), CASES)
def test_every_marker_decision_is_recorded(
    raw: str, count: int, final_text: str, decisions: list[Row]
) -> None:
    trail = compute_trail(raw, count)
    assert trail.final_text == final_text
    assert _rows(trail) == decisions


@pytest.mark.parametrize(
    ("raw", "count", "statuses"),
    [
        pytest.param("Foo [9] [3]", 3, ["dropped", "dropped", "cited"], id="sources/uncited-are-dropped"),
        pytest.param("No citations here.", 2, ["fallback", "fallback"], id="sources/no-marker-falls-back"),
        pytest.param("Foo [9] bar [0].", 2, ["fallback", "fallback"], id="sources/only-stripped-falls-back"),
    ],
)
def test_each_source_gets_one_status(raw: str, count: int, statuses: list[str]) -> None:
    assert [s.status for s in compute_trail(raw, count).sources] == statuses


def test_status_and_outcome_vocabularies() -> None:
    assert list(SourceStatus) == ["cited", "dropped", "fallback"]
    assert list(MarkerOutcome) == ["kept", "rewritten", "removed", "unmarked"]


def test_json_form_follows_the_stored_schema() -> None:
    (formed, _, _) = compute_trail("See [2[9]] here [1].", 2).markers_json()
    assert formed == {
        "raw_start": 4,
        "raw_end": 10,
        "written": "[2]",
        "pass": 2,
        "dialect": None,
        "members": [2],
        "stripped": [],
        "outcome": "kept",
        "final_start": 4,
        "final_end": 7,
        "final": "[1]",
        "final_members": [1],
    }


@pytest.mark.parametrize(
    ("raw", "dialects", "final", "normalized", "spans"),
    [
        pytest.param(
            "A 【2】 b 【1】.",
            None,
            "A [1] b [2].",
            [("fullwidth", "【2】"), ("fullwidth", "【1】")],
            [("【2】", "fullwidth", "[1]"), ("【1】", "fullwidth", "[2]")],
            id="fullwidth-renumbered",
        ),
        pytest.param(
            "A [citation:2] b [9] [^1].\n\n[^1]: foo\n",
            None,
            "A [1] b [2].\n\n",
            [("label", "[citation:2]"), ("footnote", "[^1]"), ("footnote-definition", "[^1]: foo\n")],
            [("[citation:2]", "label", "[1]"), ("[9]", None, None), ("[^1]", "footnote", "[2]")],
            id="label-footnote-and-its-definition",
        ),
        pytest.param(
            "x [[9]] y [doc1]",
            None,
            "x y [1]",
            [("double", "[[9]]"), ("label", "[doc1]")],
            [("[[9]]", "double", None), ("[doc1]", "label", "[1]")],
            id="a-dialect-marker-stripped",
        ),
        pytest.param(
            "A 【2】 b [1].",
            set(),
            "A 【2】 b [1].",
            [],
            [("[1]", None, "[1]")],
            id="dialects-off",
        ),
    ],
)
def test_dialects_are_normalized_and_recorded_at_their_raw_spans(raw, dialects, final, normalized, spans):
    trail = compute_trail(raw, 2, dialects=dialects)
    assert trail.final_text == final
    assert trail.normalized == normalized
    assert [(raw[m.raw_start : m.raw_end], m.dialect, m.final) for m in trail.markers] == spans


def test_deep_nesting_records_one_pass_per_level() -> None:
    levels = 2_000
    trail = compute_trail("[9" * levels + "]" * levels + " [1]", 1)
    assert trail.final_text == "[1]"
    removed = [m for m in trail.markers if m.outcome == REMOVED]
    assert [(m.raw_start, m.raw_end, m.pass_number) for m in removed] == [
        (2 * k, 3 * levels - k, levels - k) for k in range(levels)
    ]


# --- Properties -----------------------------------------------------------------------


def _is_subsequence(small: str, big: str) -> bool:
    chars = iter(big)
    return all(c in chars for c in small)


def _one_after_the_other(raw: str, count: int) -> tuple[Normalized, StripResult, Finalized[int]]:
    """The three public functions called one after the other, each on the last one's text alone."""
    normalized = normalize_markers(raw)
    stripped = strip_out_of_range_markers(normalized.text, count)
    return normalized, stripped, finalize_citations(stripped.text, list(range(1, count + 1)))


@PROPERTY
@given(st.one_of(texts, with_dialects), source_counts)
def test_the_steps_run_together_give_what_each_gives_on_the_last_ones_text(raw: str, count: int) -> None:
    # run_steps hands each step what the last one knew (where code is, the cut): same results.
    normalized, stripped, final = _one_after_the_other(raw, count)
    steps = run_steps(raw, count)
    assert (steps.normalized.text, steps.normalized.found) == (normalized.text, normalized.found)
    assert (steps.stripped.text, steps.stripped.stripped) == (stripped.text, stripped.stripped)
    assert steps.final == final
    # The sources the text cites, in their final order; a text citing nothing cites none.
    assert steps.cited == ([] if final.fallback else final.references)


def test_a_text_citing_nothing_lists_every_source_and_cites_none() -> None:
    steps = run_steps("No marker here, or one [9] naming no source.", 2)
    assert (steps.final.text, steps.final.fallback, steps.final.references) == (
        "No marker here, or one naming no source.",
        True,
        [1, 2],
    )
    assert steps.cited == []


@PROPERTY
@given(st.one_of(texts, with_dialects), source_counts)
def test_trail_agrees_with_normalize_strip_and_finalize(raw: str, count: int) -> None:
    normalized, stripped, final = _one_after_the_other(raw, count)
    trail = compute_trail(raw, count)
    assert trail.normalized == normalized.found
    assert (trail.final_text, trail.stripped, trail.fallback) == (
        final.text,
        stripped.stripped,
        final.fallback,
    )
    assert sorted(trail.stripped) == sorted(m for d in trail.markers for m in d.stripped)
    for decision in trail.markers:
        kept = [m for m in decision.members if m not in decision.stripped]
        if decision.outcome in (KEPT, REWRITTEN):
            assert decision.final_members == tuple(sorted(final.mapping[m] for m in kept))
            assert (decision.outcome == REWRITTEN) == bool(decision.stripped)
        else:
            assert decision.final_members == ()
            assert (decision.outcome == REMOVED) == (not kept)


@PROPERTY
@given(texts, source_counts)
def test_every_final_marker_is_exactly_one_kept_or_rewritten_decision(raw: str, count: int) -> None:
    trail = compute_trail(raw, count)
    in_final = [m for m in trail.markers if m.outcome in (KEPT, REWRITTEN)]
    assert [(m.final_start, m.final_end, m.final, m.final_members) for m in in_final] == sorted(
        (m.start, m.end, trail.final_text[m.start : m.end], m.members) for m in scan_markers(trail.final_text)
    )


@PROPERTY
@given(texts, source_counts)
def test_every_raw_marker_is_a_pass_1_decision(raw: str, count: int) -> None:
    trail = compute_trail(raw, count, dialects=set())
    first = [(m.raw_start, m.raw_end, m.written, m.members) for m in trail.markers if m.pass_number == 1]
    assert first == [(m.start, m.end, raw[m.start : m.end], m.members) for m in scan_markers(raw)]


@PROPERTY
@given(st.one_of(texts, with_dialects), source_counts)
def test_every_normalized_marker_is_a_pass_1_decision_spanning_what_the_model_wrote(
    raw: str, count: int
) -> None:
    normalized = normalize_markers(raw)
    trail = compute_trail(raw, count)
    first = [m for m in trail.markers if m.pass_number == 1]
    assert [(m.written, m.members) for m in first] == [
        (normalized.text[m.start : m.end], m.members) for m in scan_markers(normalized.text)
    ]
    rewritten = {(r.start, r.end): r for r in normalized.rewrites if r.replacement}
    for m in first:
        if m.dialect is None:
            assert raw[m.raw_start : m.raw_end] == m.written
        else:
            assert rewritten[(m.raw_start, m.raw_end)].dialect == m.dialect
            assert rewritten[(m.raw_start, m.raw_end)].replacement == m.written


@PROPERTY
@given(texts, source_counts)
def test_raw_spans_cover_the_characters_of_each_marker(raw: str, count: int) -> None:
    trail = compute_trail(raw, count)
    assert trail.markers == sorted(trail.markers, key=lambda m: (m.raw_start, m.pass_number))
    for m in trail.markers:
        assert 0 <= m.raw_start < m.raw_end <= len(raw)
        span = raw[m.raw_start : m.raw_end]
        assert span[0] == "["
        assert span[-1] == "]"
        assert _is_subsequence(m.written, span)


@PROPERTY
@given(texts, source_counts)
def test_json_round_trip_is_lossless(raw: str, count: int) -> None:
    trail = compute_trail(raw, count)
    stored = json.loads(json.dumps(trail.markers_json()))
    assert [MarkerDecision.from_json(entry) for entry in stored] == trail.markers
