"""Chunking follows headings and paragraphs, keeps offsets exact and never cuts a sentence."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from answers.retrieval.chunking import ChunkSpec, chunk_text, sentence_spans


def test_markdown_headings_become_each_chunks_heading() -> None:
    body = "# Intro\n\nFirst paragraph.\n\n## Details\n\nSecond paragraph.\n"
    chunks = chunk_text(body, target_chars=20)
    assert [(c.heading, c.text) for c in chunks] == [
        ("Intro", "First paragraph."),
        ("Details", "Second paragraph."),
    ]


def test_underlined_headings_are_recognised() -> None:
    body = (
        'The "with" statement\n********************\n\nIt wraps a block.\n\nSub part\n========\n\nMore text.'
    )
    chunks = chunk_text(body)
    assert [c.heading for c in chunks] == ['The "with" statement', "Sub part"]


def test_text_before_any_heading_has_an_empty_heading() -> None:
    assert chunk_text("Just text.") == [ChunkSpec("", "Just text.", 0, 10)]


def test_small_paragraphs_are_packed_up_to_the_target() -> None:
    body = "\n\n".join(f"Paragraph {i} is here." for i in range(10))
    chunks = chunk_text(body, target_chars=60)
    assert len(chunks) > 1
    assert all(len(c.text) <= 60 for c in chunks)
    assert all("\n\n" in c.text for c in chunks[:-1])


def test_long_paragraph_splits_between_sentences_only() -> None:
    sentences = [f"Sentence number {i} says something longer than a few words." for i in range(30)]
    body = " ".join(sentences)
    chunks = chunk_text(body, target_chars=200)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text.endswith(".")
        assert chunk.text.startswith("Sentence number")


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("It stops. Then it goes.", ["It stops.", "Then it goes."]),
        # The quote or bracket closing with the sentence is part of it.
        ('He wrote "stop." Then it went.', ['He wrote "stop."', "Then it went."]),
        ("(It is rare.) Then it went.", ["(It is rare.)", "Then it went."]),
        # Not after an abbreviation or an initial, nor before a lower-case word.
        ("Use a tool, e.g. A hammer. Then stop.", ["Use a tool, e.g. A hammer.", "Then stop."]),
        ("Written by J. Smith in 1990. Read it.", ["Written by J. Smith in 1990.", "Read it."]),
        ("Version 3.1 added it. done.", ["Version 3.1 added it. done."]),
        # A source's own footnote reference opens the next piece.
        ("It is done. [1] Next one here.", ["It is done.", "[1] Next one here."]),
    ],
)
def test_sentence_spans(text: str, sentences: list[str]) -> None:
    assert [text[a:b] for a, b in sentence_spans(text)] == sentences


def test_a_chunk_keeps_the_bracket_and_quote_closing_its_last_sentence() -> None:
    first = "(Default values are calculated once, when the function is defined; this is usually fine.)"
    second = 'The second sentence says "something else entirely, at some length."'
    chunks = chunk_text(f"{first} {second} Third.", target_chars=len(first) + 5)
    assert chunks[0].text == first
    assert chunks[1].text.startswith(second)


def test_a_long_paragraph_is_not_cut_after_an_abbreviation() -> None:
    body = "A first sentence names several tools, e.g. Hammers and saws, at length here. Then more."
    chunks = chunk_text(body, target_chars=45)
    assert not any(c.text.endswith("e.g.") for c in chunks)
    assert chunks[0].text.endswith("at length here.")


def test_one_sentence_longer_than_the_target_stays_whole() -> None:
    sentence = "This single sentence " + "goes on and on " * 20 + "until it ends."
    chunks = chunk_text(sentence + " Next one.", target_chars=100)
    assert chunks[0].text == sentence


def test_text_without_any_break_is_split_only_past_the_hard_limit() -> None:
    body = "word " * 1000
    chunks = chunk_text(body, target_chars=100, hard_max_chars=400)
    assert all(len(c.text) <= 400 for c in chunks)
    assert "".join(c.text.replace(" ", "") for c in chunks) == body.replace(" ", "")


def test_empty_body_has_no_chunks() -> None:
    assert chunk_text("  \n\n ") == []


def test_target_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        chunk_text("x", target_chars=0)


def test_demo_corpus_chunks_read_well() -> None:
    from pydoc_data.topics import topics

    chunks = chunk_text(topics["with"])
    assert chunks[0].heading == 'The "with" statement'
    assert chunks[0].text.startswith('The "with" statement is used to wrap')


_text = st.text(alphabet=st.sampled_from(list("abc XYZ.!?\n#=-*\t\"'é")), min_size=0, max_size=600)


@given(body=_text, target=st.integers(min_value=1, max_value=300))
def test_every_chunk_is_the_exact_slice_of_the_body(body: str, target: int) -> None:
    chunks = chunk_text(body, target_chars=target)
    previous_end = 0
    for chunk in chunks:
        assert body[chunk.start : chunk.end] == chunk.text
        assert chunk.text
        assert chunk.text == chunk.text.strip()
        assert chunk.start >= previous_end
        previous_end = chunk.end


# Sentences as [A-Z][a-z]{1,8}( [a-z]{1,8}){0,12}\. (built from plain strategies: from_regex's
# generation was reported inconsistent between runs by hypothesis on a loaded machine).
_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
_sentence = st.builds(
    lambda first, rest, words: first + rest + "".join(" " + w for w in words) + ".",
    st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    _word,
    st.lists(_word, max_size=12),
)


@given(
    sentences=st.lists(_sentence, min_size=1, max_size=40),
    target=st.integers(min_value=20, max_value=400),
)
def test_no_sentence_is_ever_cut(sentences: list[str], target: int) -> None:
    body = " ".join(sentences)
    for chunk in chunk_text(body, target_chars=target):
        pieces = re.split(r"(?<=\.) ", chunk.text)
        assert all(piece in sentences for piece in pieces)
