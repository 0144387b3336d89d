"""Sentences of a final text for the support check: where they start and end, and what they cite."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from answers.citations import scan_markers
from answers.citations.code import code_regions
from answers.support.sentences import split_sentences

# (text, [(sentence text, cited)])
CASES = [
    pytest.param("", [], id="empty/no-sentence"),
    pytest.param(" \n\n\t", [], id="empty/whitespace-only"),
    pytest.param("One. Two.", [("One.", ()), ("Two.", ())], id="split/period-then-space"),
    pytest.param(
        "Is it? Yes! Fine.", [("Is it?", ()), ("Yes!", ()), ("Fine.", ())], id="split/question-exclamation"
    ),
    pytest.param("No end here", [("No end here", ())], id="split/last-sentence-without-punctuation"),
    pytest.param(
        "Python 3.11 is out. Next.",
        [("Python 3.11 is out.", ()), ("Next.", ())],
        id="split/decimal-is-not-an-end",
    ),
    pytest.param(
        "Use e.g. this one. Next.",
        [("Use e.g. this one.", ()), ("Next.", ())],
        id="split/abbreviation-is-not-an-end",
    ),
    pytest.param(
        'He said "hi." Then left.',
        [('He said "hi."', ()), ("Then left.", ())],
        id="split/closing-quote-stays",
    ),
    pytest.param(
        "(As noted.) Then.", [("(As noted.)", ()), ("Then.", ())], id="split/closing-parenthesis-stays"
    ),
    pytest.param("Wait... Go.", [("Wait...", ()), ("Go.", ())], id="split/ellipsis-is-one-end"),
    # Markers
    pytest.param(
        "Foo [1]. Bar [2].", [("Foo [1].", (1,)), ("Bar [2].", (2,))], id="marker/before-punctuation"
    ),
    pytest.param(
        "Foo. [1] Bar.", [("Foo. [1]", (1,)), ("Bar.", ())], id="marker/after-punctuation-belongs-to-it"
    ),
    pytest.param("Foo.[1] Bar.", [("Foo.[1]", (1,)), ("Bar.", ())], id="marker/glued-after-punctuation"),
    pytest.param(
        "Foo. [1][2] [3] Bar.",
        [("Foo. [1][2] [3]", (1, 2, 3)), ("Bar.", ())],
        id="marker/several-after-punctuation",
    ),
    pytest.param("Foo.\n[1]\nBar.", [("Foo.\n[1]", (1,)), ("Bar.", ())], id="marker/after-a-line-break"),
    pytest.param(
        "Foo [2] and [2, 1].", [("Foo [2] and [2, 1].", (2, 1))], id="cited/written-order-repeats-once"
    ),
    pytest.param("Foo [1-3].", [("Foo [1-3].", (1, 2, 3))], id="cited/range-expanded"),
    pytest.param("See [1](x). Ok.", [("See [1](x).", ()), ("Ok.", ())], id="cited/link-is-not-a-marker"),
    pytest.param("Foo.[x] Bar.", [("Foo.[x] Bar.", ())], id="split/bracket-text-after-period-is-not-an-end"),
    # Code
    pytest.param(
        "Intro.\n```\nx = 1. [1]\n```\nAfter.",
        [("Intro.", ()), ("After.", ())],
        id="code/fenced-block-is-no-sentence",
    ),
    pytest.param("A.\n~~~\nb. c.\n~~~\nD.", [("A.", ()), ("D.", ())], id="code/tilde-fence"),
    pytest.param("A.\n```\nnever closed. [1]", [("A.", ())], id="code/unclosed-fence-runs-to-the-end"),
    pytest.param(
        "Call `a.b. c` now. Done.",
        [("Call `a.b. c` now.", ()), ("Done.", ())],
        id="code/inline-span-does-not-split",
    ),
    pytest.param(
        "Use `x[1]` here [2].", [("Use `x[1]` here [2].", (2,))], id="code/marker-in-inline-code-is-not-cited"
    ),
    # Blocks
    pytest.param("Foo\n\nBar", [("Foo", ()), ("Bar", ())], id="block/blank-line-ends-a-sentence"),
    pytest.param("Foo\nbar.", [("Foo\nbar.", ())], id="block/single-line-break-continues"),
    pytest.param(
        "Items:\n- one [1]\n- two",
        [("Items:", ()), ("- one [1]", (1,)), ("- two", ())],
        id="block/list-items",
    ),
    pytest.param(
        "1. First.\n2. Second.",
        [("1. First.", ()), ("2. Second.", ())],
        id="block/list-number-is-not-a-sentence",
    ),
    pytest.param(
        "# Title\nText here.", [("# Title", ()), ("Text here.", ())], id="block/heading-is-its-own-sentence"
    ),
    pytest.param("> Quoted. More", [("> Quoted.", ()), ("More", ())], id="block/quote"),
    # Pieces without words
    pytest.param("Foo.\n\n[1]", [("Foo.\n\n[1]", (1,))], id="wordless/lone-marker-joins-the-sentence-before"),
    pytest.param("---\n\nFoo.", [("---\n\nFoo.", ())], id="wordless/first-piece-joins-the-sentence-after"),
    pytest.param("[1]", [("[1]", (1,))], id="wordless/alone-stands-alone"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_sentences(text, expected):
    assert [(s.text, s.cited) for s in split_sentences(text)] == expected


def test_the_body_blanks_markers_and_keeps_offsets():
    (sentence,) = split_sentences("Foo [12] bar.")
    assert sentence.body == "Foo      bar."
    assert len(sentence.body) == len(sentence.text)


# --- Properties ----------------------------------------------------------------------

TOKENS = [
    "Foo",
    "bar",
    "e.g.",
    "3.11",
    ".",
    "!",
    "?",
    " ",
    "  ",
    "\n",
    "\n\n",
    "[1]",
    "[2, 3]",
    "[x]",
    "`",
    "```",
    "~~~",
    "- ",
    "# ",
    "1. ",
    "> ",
    '"',
    ")",
    "---",
]
texts = st.lists(st.sampled_from(TOKENS), max_size=40).map("".join)
PROPERTY = settings(max_examples=400, deadline=None, derandomize=True)


def _fenced(text: str) -> list[bool]:
    """Which characters are fenced: the citation core's code ranges that open a line with a fence."""
    mask = [False] * len(text)
    for start, end in code_regions(text):
        if text.startswith(("```", "~~~"), start) and (start == 0 or text[start - 1] == "\n"):
            mask[start:end] = [True] * (end - start)
    return mask


@PROPERTY
@given(texts)
def test_offsets_slice_the_text_exactly(text):
    for sentence in split_sentences(text):
        assert text[sentence.start : sentence.end] == sentence.text
        assert sentence.text == sentence.text.strip()


@PROPERTY
@given(texts)
def test_sentences_are_in_order_and_never_overlap(text):
    sentences = split_sentences(text)
    assert all(a.end <= b.start for a, b in pairwise(sentences))


@PROPERTY
@given(texts)
def test_sentences_cover_every_non_blank_character_outside_fenced_code_and_nothing_fenced(text):
    covered = [False] * len(text)
    for sentence in split_sentences(text):
        covered[sentence.start : sentence.end] = [True] * (sentence.end - sentence.start)
    fenced = _fenced(text)
    for i, char in enumerate(text):
        if fenced[i]:
            assert not covered[i], (i, text)
        elif not char.isspace():
            assert covered[i], (i, text)


@PROPERTY
@given(texts)
def test_cited_numbers_are_the_markers_inside_the_sentence(text):
    markers = scan_markers(text)
    for sentence in split_sentences(text):
        inside = [m for m in markers if sentence.start <= m.start and m.end <= sentence.end]
        assert sentence.cited == tuple(dict.fromkeys(n for m in inside for n in m.members))
    # every marker belongs to exactly one sentence
    spans = [(s.start, s.end) for s in split_sentences(text)]
    for marker in markers:
        assert sum(a <= marker.start and marker.end <= b for a, b in spans) == 1
