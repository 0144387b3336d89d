"""Support methods and the one flow that runs any of them: scores, quotes, fallback, record (no Django).

A method turns an answer's sentences and sources into a score per wanted
(sentence, source) pair (record.wanted_pairs). `lexical` is offline and
deterministic (answers.support.lexical); `judge` asks a model
(answers.support.judge); any class with this shape can be named by its dotted
path in ANSWERS_SUPPORT_METHOD. Whatever the method, a pair backed by a verified
native-citation quote scores 1.0 (answers.support.quotes), and a method that
fails is replaced by `lexical`, the record saying so.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from answers.citations import Marker
from answers.providers.base import ProviderError
from answers.support.lexical import UNIFORM, Idf, excerpt_stems, sentence_terms, terms_score
from answers.support.passages import backing_passages
from answers.support.quotes import quoted_pairs
from answers.support.record import Pair, SourceText, build_record, wanted_pairs
from answers.support.sentences import Sentence, split_sentences

logger = logging.getLogger(__name__)


class SupportError(Exception):
    """A method could not score; `message` is safe to store and show (no secrets, no raw replies)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class SupportInputs:
    """Everything a method may read about one finished answer."""

    text: str  # the final text
    sentences: Sequence[Sentence]
    sources: Sequence[SourceText]  # every retrieved source, in retrieval order
    pairs: Sequence[Pair]  # what needs a score
    idf: Idf = UNIFORM
    quotes: Mapping[int, Sequence[str]] = field(default_factory=dict)  # by original number


def support_inputs(
    text: str,
    sources: Sequence[SourceText],
    *,
    idf: Idf = UNIFORM,
    quotes: Mapping[int, Sequence[str]] | None = None,
    markers: list[Marker] | None = None,
) -> SupportInputs:
    """`markers`: the text's markers when known (the stored trail's); else split_sentences() scans."""
    sentences = split_sentences(text, markers)
    return SupportInputs(
        text=text,
        sentences=sentences,
        sources=list(sources),
        pairs=wanted_pairs(sentences, sources),
        idf=idf,
        quotes=quotes or {},
    )


class SupportMethod(Protocol):
    name: str

    async def scores(self, inputs: SupportInputs) -> dict[Pair, float]:
        """A score in 0..1 for each of `inputs.pairs`; raises on failure (the flow falls back)."""
        ...


def lexical_scores(inputs: SupportInputs) -> dict[Pair, float]:
    """The lexical score of every wanted pair (see answers.support.lexical)."""
    excerpts = {s.original_number: s.excerpt for s in inputs.sources}
    terms = [sentence_terms(s.body, inputs.idf) for s in inputs.sentences]
    return {
        (index, number): terms_score(terms[index], excerpt_stems(excerpts[number]))
        for index, number in inputs.pairs
    }


class LexicalMethod:
    name = "lexical"

    async def scores(self, inputs: SupportInputs) -> dict[Pair, float]:
        return lexical_scores(inputs)


def _reason(exc: Exception) -> str:
    if isinstance(exc, SupportError):
        return exc.message
    if isinstance(exc, ProviderError):
        return exc.message
    return f"The support method failed unexpectedly ({type(exc).__name__})."


def finish_record(
    inputs: SupportInputs,
    scores: Mapping[Pair, float],
    *,
    method: str,
    min_score: float,
    fallback: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The record from a method's scores, verified quotes raised to 1.0, with the backing passages."""
    final = dict(scores)
    for pair in quoted_pairs(inputs.sentences, inputs.sources, inputs.quotes):
        final[pair] = 1.0
    # Passages only where the record shows them: cited sources at or over the bar (rounding aside).
    bar = min_score - 1e-4
    supported = [(i, n) for i, n in inputs.pairs if inputs.sentences[i].cited and final.get((i, n), 0) >= bar]
    passages = backing_passages(inputs.sentences, inputs.sources, inputs.quotes, supported, inputs.idf)
    return build_record(
        method=method,
        min_score=min_score,
        sentences=inputs.sentences,
        sources=inputs.sources,
        scores=final,
        fallback=fallback,
        passages=passages,
    )


async def support_record(inputs: SupportInputs, *, method: SupportMethod, min_score: float) -> dict[str, Any]:
    """Run `method`; on any failure fall back to lexical and record why."""
    try:
        scores = await method.scores(inputs)
    except Exception as exc:
        logger.warning("Support method %r failed, falling back to lexical: %s", method.name, _reason(exc))
        fallback = {"method": method.name, "reason": _reason(exc)}
        return finish_record(
            inputs, lexical_scores(inputs), method=LexicalMethod.name, min_score=min_score, fallback=fallback
        )
    return finish_record(inputs, scores, method=method.name, min_score=min_score)
