"""Provider pieces become text: UTF-16 halves split across pieces are joined, a lone half is refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from answers.providers.text import SurrogateJoiner, UnpairedSurrogate, join_surrogates


def utf16_halves(text: str) -> str:
    """`text` as a JSON decoder hands over `\\ud83d\\ude00`: astral characters as two surrogates."""
    return "".join(_halves(c) if ord(c) >= 0x10000 else c for c in text)


def _halves(c: str) -> str:
    offset = ord(c) - 0x10000
    return chr(0xD800 + (offset >> 10)) + chr(0xDC00 + (offset & 0x3FF))


@given(st.text(), st.lists(st.integers(min_value=0), max_size=6))
def test_any_split_of_any_text_as_utf16_halves_joins_back_to_the_text(text, cuts):
    halves = utf16_halves(text)
    points = sorted({cut % (len(halves) + 1) for cut in cuts})
    pieces = [halves[a:b] for a, b in zip([0, *points], [*points, len(halves)], strict=True)]
    joiner = SurrogateJoiner()

    joined = "".join(joiner.feed(piece) for piece in pieces)
    joiner.close()

    assert joined == text


@pytest.mark.parametrize("text", ["a\ud83d b", "\ude00", "x\ude00\ud83d"])
def test_a_half_with_no_other_half_is_refused(text):
    with pytest.raises(UnpairedSurrogate):
        join_surrogates(text)


def test_a_text_ending_in_a_held_back_half_is_refused_at_the_close():
    joiner = SurrogateJoiner()
    assert joiner.feed("Smile \ud83d") == "Smile "
    with pytest.raises(UnpairedSurrogate):
        joiner.close()
