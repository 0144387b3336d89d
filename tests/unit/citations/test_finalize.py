"""finalize_citations (answers/citations/finalize.py): what strip's cut spares changes nothing."""

from __future__ import annotations

from hypothesis import given

from answers.citations import finalize_citations, strip_out_of_range_markers
from tests.fixtures.citation_texts import PROPERTY, source_counts, texts


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
