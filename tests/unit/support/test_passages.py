"""The backing passage of each supported citation (answers.support.passages, record `passages`)."""

from __future__ import annotations

import asyncio

import pytest

from answers.support.methods import LexicalMethod, support_inputs, support_record
from answers.support.passages import quote_span
from answers.support.record import SourceText

EXCERPT = (
    "Zebras are African equines. Zebras live in grassland and savanna habitats. "
    "Their stripes may deter biting flies."
)


def record(text: str, sources: list[SourceText], quotes: dict[int, list[str]] | None = None) -> dict:
    inputs = support_inputs(text, sources, quotes=quotes)
    return asyncio.run(support_record(inputs, method=LexicalMethod(), min_score=0.5))


def passage(excerpt: str, span: list[int]) -> str:
    return excerpt[span[0] : span[1]]


def test_a_supported_citation_names_the_excerpt_sentence_that_says_it() -> None:
    result = record("Zebras live in savanna habitats [1].", [SourceText(1, 1, EXCERPT)])

    (sentence,) = result["sentences"]
    assert sentence["verdict"] == "supported"
    assert passage(EXCERPT, sentence["passages"]["1"]) == "Zebras live in grassland and savanna habitats."


def test_each_cited_source_gets_its_own_passage_by_final_number() -> None:
    other = "Flies avoid striped surfaces. Stripes may deter biting flies, tests with horses showed."
    result = record(
        "Stripes may deter biting flies [1, 2].", [SourceText(1, 2, EXCERPT), SourceText(2, 1, other)]
    )

    passages = result["sentences"][0]["passages"]
    assert passage(EXCERPT, passages["2"]) == "Their stripes may deter biting flies."
    assert passage(other, passages["1"]) == "Stripes may deter biting flies, tests with horses showed."


def test_an_unsupported_citation_has_no_passage() -> None:
    result = record("Penguins cannot fly at all [1].", [SourceText(1, 1, EXCERPT)])

    (sentence,) = result["sentences"]
    assert sentence["verdict"] == "unsupported"
    assert sentence["passages"] == {}


def test_an_uncited_sentence_names_no_passage() -> None:
    result = record("Zebras live in savanna habitats.", [SourceText(1, 1, EXCERPT)])

    assert result["sentences"][0]["passages"] == {}


def test_a_verified_quote_is_the_passage_even_across_line_breaks() -> None:
    excerpt = "Intro line.\nZebras live in grassland\n  and savanna. Their stripes differ."
    result = record(
        "They graze in grassland [1].",
        [SourceText(1, 1, excerpt)],
        quotes={1: ["Zebras live in grassland and savanna"]},
    )

    (sentence,) = result["sentences"]
    assert sentence["scores"] == {"1": 1.0}
    # The quote exactly (without the sentence's full stop), not the excerpt's sentence around it.
    assert passage(excerpt, sentence["passages"]["1"]) == "Zebras live in grassland\n  and savanna"


@pytest.mark.parametrize(
    ("excerpt", "quote", "expected"),
    [
        ("a b  c d", "b c", (2, 6)),
        ("a b c", "c d", None),
        ("a (b) c", "(b)", (2, 5)),
        ("a b c", "   ", None),
        ("a.b a b", "a b", (4, 7)),  # the dot is no wildcard
    ],
)
def test_quote_span_matches_whitespace_loosely_and_nothing_else(
    excerpt: str, quote: str, expected: tuple[int, int] | None
) -> None:
    assert quote_span(excerpt, quote) == expected
