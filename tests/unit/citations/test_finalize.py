"""Finalize (answers/citations/finalize.py): the table of cases by hand, the fallback, the refusal of
an out-of-range member, its properties, and what strip's cut spares changes nothing."""

from __future__ import annotations

import pytest
from hypothesis import given

from answers.citations import (
    finalize_citations,
    render_marker,
    scan_markers,
    strip_out_of_range_markers,
)
from tests.fixtures.citation_texts import PROPERTY, source_counts, texts

# (text, source count, final text, references as original numbers, dropped)
FINALIZE_CASES = [
    pytest.param("[3, 1]", 3, "[1, 2]", [3, 1], [2], id="finalize/canonical-form-spec-example"),
    pytest.param("[2-4]", 4, "[1, 2, 3]", [2, 3, 4], [1], id="finalize/range-spec-example"),
    pytest.param(
        "A [2]. B [1][2]. C [3, 2].",
        3,
        "A [1]. B [2][1]. C [1, 3].",
        [2, 1, 3],
        [],
        id="finalize/numbered-in-order-of-first-citation",
    ),
    pytest.param("x [1] y [3]", 4, "x [1] y [2]", [1, 3], [2, 4], id="finalize/uncited-dropped-ascending"),
    pytest.param("[ 02 ,\t1 ]", 2, "[1, 2]", [2, 1], [], id="finalize/members-in-written-order-then-sorted"),
    pytest.param("[2, 2-3]", 3, "[1, 2]", [2, 3], [1], id="finalize/repeat-inside-a-marker"),
    pytest.param("`[4]` [1]", 2, "`[4]` [1]", [1], [2], id="finalize/code-left-alone"),
    pytest.param(
        "`[2]` [2]", 2, "`[2]` [1]", [2], [1], id="finalize/code-left-alone-though-written-like-a-marker"
    ),
    pytest.param("[1](x) [2]", 2, "[1](x) [1]", [2], [1], id="finalize/link-left-alone"),
]


@pytest.mark.parametrize(("text", "count", "expected_text", "cited", "dropped"), FINALIZE_CASES)
def test_finalize_citations(
    text: str, count: int, expected_text: str, cited: list[int], dropped: list[int]
) -> None:
    sources = [f"s{n}" for n in range(1, count + 1)]
    final = finalize_citations(text, sources)
    assert final.text == expected_text
    assert final.references == [f"s{n}" for n in cited]
    assert final.mapping == {old: new for new, old in enumerate(cited, start=1)}
    assert final.dropped == dropped
    assert final.fallback is False


@pytest.mark.parametrize(
    ("text", "count"),
    [
        pytest.param("No markers here.", 3, id="fallback/no-marker"),
        pytest.param("Only code: `[1]`, a link [2](x) and \\[3].", 3, id="fallback/only-non-markers"),
        pytest.param("", 0, id="fallback/empty-text-no-sources"),
    ],
)
def test_finalize_without_markers_falls_back(text: str, count: int) -> None:
    sources = [f"s{n}" for n in range(1, count + 1)]
    final = finalize_citations(text, sources)
    assert final.text == text
    assert final.references == sources
    assert final.mapping == {n: n for n in range(1, count + 1)}
    assert final.dropped == []
    assert final.fallback is True


@pytest.mark.parametrize(
    ("text", "count"),
    [
        pytest.param("[4]", 3, id="raises/member-above-source-count"),
        pytest.param("[0]", 3, id="raises/member-zero"),
        pytest.param("[1, 4]", 3, id="raises/one-member-of-a-list"),
        pytest.param("[2-4]", 3, id="raises/end-of-a-range"),
        pytest.param("[99999999999999999999]", 3, id="raises/number-beyond-64-bits"),
        pytest.param("[1]", 0, id="raises/no-sources"),
    ],
)
def test_finalize_raises_on_a_member_out_of_range(text: str, count: int) -> None:
    with pytest.raises(ValueError, match="strip_out_of_range_markers"):
        finalize_citations(text, [f"s{n}" for n in range(1, count + 1)])


def _outside_markers(text: str) -> list[str]:
    pieces, cursor = [], 0
    for marker in scan_markers(text):
        pieces.append(text[cursor : marker.start])
        cursor = marker.end
    return [*pieces, text[cursor:]]


def _finalized(text: str, count: int) -> tuple[str, list[str]]:
    sources = [f"s{n}" for n in range(1, count + 1)]
    final = finalize_citations(strip_out_of_range_markers(text, count).text, sources)
    return final.text, final.references


@PROPERTY
@given(texts, source_counts)
def test_finalize_is_idempotent(text: str, count: int) -> None:
    final_text, references = _finalized(text, count)
    again = finalize_citations(final_text, references)
    assert again.text == final_text
    assert again.references == references
    assert again.mapping == {n: n for n in range(1, len(references) + 1)}
    assert again.dropped == []


@PROPERTY
@given(texts, source_counts)
def test_every_final_marker_is_in_range_and_every_reference_cited(text: str, count: int) -> None:
    sources = [f"s{n}" for n in range(1, count + 1)]
    final = finalize_citations(strip_out_of_range_markers(text, count).text, sources)
    markers = scan_markers(final.text)
    cited = {m for marker in markers for m in marker.members}
    assert all(1 <= m <= len(final.references) for m in cited)
    if final.fallback:
        assert markers == []
        assert final.references == sources
    else:
        assert cited == set(range(1, len(final.references) + 1))
        assert sorted([*final.mapping, *final.dropped]) == list(range(1, count + 1))
        assert [final.references[new - 1] for new in final.mapping.values()] == [
            sources[old - 1] for old in final.mapping
        ]


@PROPERTY
@given(texts, source_counts)
def test_finalize_changes_only_the_markers(text: str, count: int) -> None:
    stripped = strip_out_of_range_markers(text, count).text
    final = finalize_citations(stripped, [f"s{n}" for n in range(1, count + 1)])
    assert _outside_markers(final.text) == _outside_markers(stripped)
    for marker in scan_markers(final.text):
        assert final.text[marker.start : marker.end] == render_marker(marker.members)


@PROPERTY
@given(texts, source_counts)
def test_finalize_with_strips_cut_and_without_it_agree(text: str, count: int) -> None:
    stripped = strip_out_of_range_markers(text, count)
    sources = list(range(1, count + 1))
    cut = stripped.cut
    parts_before = None if cut is None else list(cut[0])
    with_cut = finalize_citations(stripped.text, sources, cut=cut)
    without = finalize_citations(stripped.text, sources)
    assert with_cut == without
    if cut is not None:
        assert "".join(cut[0]) == stripped.text  # the cut is of strip's own text
        assert cut[0] == parts_before  # and finalize left it as it was


def test_strip_hands_on_its_cut_when_a_removal_joined_nothing_new() -> None:
    stripped = strip_out_of_range_markers("Alpha [1] beta [9] gamma [2].", 2)
    assert stripped.text == "Alpha [1] beta gamma [2]."
    assert stripped.cut is not None
    final = finalize_citations(stripped.text, ["a", "b"], cut=stripped.cut)
    assert (final.text, final.references) == ("Alpha [1] beta gamma [2].", ["a", "b"])
