"""compute_support(answer): a stored, finished answer's support record, read from its trail (no writes).

The Django side of answers.support: reads the final text and the AnswerSource
rows (original and final numbers, status, excerpt, quotes where stored), weighs
words by the corpus (answers.support.corpus), runs the configured method
(ANSWERS_SUPPORT_METHOD, bar ANSWERS_SUPPORT_MIN) and returns the record
(answers.support.record). Storing it, and logging a failure instead of failing
the answer, is the caller's part.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async

from answers.citations import Marker
from answers.citations.trail import final_markers
from answers.conf import SUPPORT_METHODS, conf
from answers.models import Answer, AnswerSource
from answers.plugins import plugin_class
from answers.retrieval.query import quarter_terms, query_terms
from answers.support.corpus import corpus_idf
from answers.support.coverage import coverage_record
from answers.support.lexical import content_words
from answers.support.methods import (
    SupportInputs,
    SupportMethod,
    support_inputs,
    support_record,
)
from answers.support.record import SourceText


def get_support_method(name: str | None = None) -> SupportMethod:
    """The method named by ANSWERS_SUPPORT_METHOD: "lexical", "judge" or a dotted class path."""
    name = conf.SUPPORT_METHOD if name is None else name
    method: SupportMethod = plugin_class("ANSWERS_SUPPORT_METHOD", name, SUPPORT_METHODS)()
    return method


def load_inputs(answer: Answer) -> SupportInputs:
    """What the methods read about `answer`: its final text, its sources and the corpus weights."""
    if answer.status != Answer.Status.DONE:
        raise ValueError(f"Answer {answer.pk} is {answer.status}: support is computed for done answers only.")
    return inputs_from(answer_texts(answer))


@dataclass(frozen=True)
class AnswerTexts:
    """What the record is computed from, as stored for a done answer (read from its loaded sources)."""

    text: str  # the final text
    sources: list[SourceText]  # in retrieval order
    quotes: dict[int, list[str]]  # by original number
    dropped: frozenset[int]  # original numbers of the sources dropped as uncited
    # For the coverage record (answers.support.coverage):
    question: str = ""
    declined: bool = False
    cited: tuple[str, ...] = ()  # the title and the excerpt of each source of the final list
    markers: list[Marker] | None = None  # the final text's markers, from the stored trail


def answer_texts(answer: Answer) -> AnswerTexts:
    """`answer`'s AnswerTexts; its sources are read from the prefetched rows when there are some."""
    rows = sorted(answer.sources.all(), key=lambda s: s.original_number)
    return AnswerTexts(
        question=answer.question,
        declined=answer.declined,
        cited=tuple(text for s in rows if s.final_number is not None for text in (s.title, s.excerpt)),
        text=answer.final_text,
        sources=[SourceText(s.original_number, s.final_number, s.excerpt) for s in rows],
        # Quotes live on the trail once the native-citations provider stores them.
        quotes={s.original_number: list(getattr(s, "quotes", None) or []) for s in rows},
        dropped=frozenset(s.original_number for s in rows if s.status == AnswerSource.Status.DROPPED),
        # The trail stored the final markers (an answer stored before the per-marker record has
        # none: its text is scanned).
        markers=final_markers(answer.markers) if answer.markers else None,
    )


def inputs_from(texts: AnswerTexts) -> SupportInputs:
    """The method inputs: sentences, wanted pairs and the corpus weights of the sentences' words."""
    inputs = support_inputs(texts.text, texts.sources, quotes=texts.quotes, markers=texts.markers)
    words = [w for sentence in inputs.sentences for w in content_words(sentence.body)]
    return replace(inputs, idf=corpus_idf(words))


def coverage_from(texts: AnswerTexts) -> dict[str, Any]:
    """The coverage record (answers.support.coverage): the question's terms against the cited
    sources, key terms told by the corpus counts the support weights come from (one look-up)."""
    terms = query_terms(texts.question)
    idf = corpus_idf(terms)

    def in_corpus(term: str) -> bool:
        # No statistics (no corpus or no search index): every term counts as present.
        return idf.documents <= 0 or idf.counts.get(term, 0) > 0

    return coverage_record(
        terms=terms,
        cited_texts=texts.cited,
        in_corpus=in_corpus,
        quarter=quarter_terms(texts.question),
        declined=texts.declined,
    )


def compute_coverage(answer: Answer) -> dict[str, Any]:
    """The coverage record of a done answer (its sources loaded or read)."""
    return coverage_from(answer_texts(answer))


def compute_support(
    answer: Answer, *, method: SupportMethod | None = None, min_score: float | None = None
) -> dict[str, Any]:
    """The support record of a done answer (docs/reference/http.md, trail `support`); not from async code."""
    inputs = load_inputs(answer)
    return async_to_sync(support_record)(
        inputs,
        method=method or get_support_method(),
        min_score=conf.SUPPORT_MIN if min_score is None else min_score,
    )


async def acompute_support(
    answer: Answer, *, method: SupportMethod | None = None, min_score: float | None = None
) -> dict[str, Any]:
    """compute_support for async callers."""
    inputs = await sync_to_async(load_inputs)(answer)
    return await support_record(
        inputs,
        method=method or get_support_method(),
        min_score=conf.SUPPORT_MIN if min_score is None else min_score,
    )
