"""Which passage of a cited source's excerpt backs a sentence: what the Sources list highlights (pure).

For each (sentence, cited source) pair the record keeps the span of the source's
excerpt that says what the sentence says, as offsets into the excerpt:

- a native-citation quote of that source (answers.support.quotes), found in the
  excerpt (whitespace runs matching any whitespace) and sharing content words with
  the sentence: the quote's span (of several, the one sharing the most words; ties,
  the first);
- else the excerpt's sentence (closing punctuation before whitespace, or a blank line, ends
  one) whose words cover the
  most of the sentence's weighted content terms (the lexical score, whatever
  method scored the pair; ties, the first), when it covers any.

The record shows it only for a source that supports the sentence (score at or over
the bar): an unsupported citation has no passage to point at.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

from answers.retrieval.query import stem, tokenize
from answers.support.lexical import UNIFORM, Idf, content_words, sentence_terms, terms_score
from answers.support.record import Pair, SourceText
from answers.support.sentences import Sentence

Span = tuple[int, int]


def quote_span(excerpt: str, quote: str) -> Span | None:
    """Where `quote` is in `excerpt`, any run of whitespace in it matching any run there; None if not."""
    words = quote.split()
    if not words:
        return None
    found = re.search(r"\s+".join(map(re.escape, words)), excerpt)
    return (found.start(), found.end()) if found else None


# Where an excerpt's sentence ends: closing punctuation (and closing quotes or brackets) before
# whitespace or the end, or a blank line. Plainer than the answer's splitter
# (answers.support.sentences, which knows markers and code): an excerpt has neither, and this
# runs for every supported citation.
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*(?=\s|\Z)|\n[ \t]*\n")

# Words recur across an excerpt's sentences and across answers: each is stemmed once.
_stem = lru_cache(maxsize=16384)(stem)


def _sentence_spans(excerpt: str) -> list[Span]:
    spans: list[Span] = []
    start = 0
    for end in _SENTENCE_END.finditer(excerpt):
        stop = end.start() if end.group()[0] == "\n" else end.end()
        spans.append((start, stop))
        start = end.end()
    spans.append((start, len(excerpt)))
    trimmed = []
    for a, b in spans:
        piece = excerpt[a:b]
        lead = len(piece) - len(piece.lstrip())
        if piece.strip():
            trimmed.append((a + lead, b - (len(piece) - len(piece.rstrip()))))
    return trimmed


@lru_cache(maxsize=256)
def excerpt_sentences(excerpt: str) -> tuple[tuple[Span, frozenset[str]], ...]:
    """Each sentence of an excerpt: its span, and the stems of its words (as excerpt_stems)."""
    return tuple(
        ((a, b), frozenset(map(_stem, set(tokenize(excerpt[a:b]))))) for a, b in _sentence_spans(excerpt)
    )


def best_passage(
    sentence: Sentence, excerpt: str, quotes: Sequence[str] = (), idf: Idf = UNIFORM
) -> Span | None:
    """The span of `excerpt` that backs `sentence` (see the module docstring), or None."""
    words = set(content_words(sentence.body))
    best: tuple[int, Span] | None = None
    for quote in quotes:
        shared = len(words & set(content_words(quote)))
        span = quote_span(excerpt, quote) if shared else None
        if span is not None and (best is None or shared > best[0]):
            best = (shared, span)
    if best is not None:
        return best[1]
    terms = sentence_terms(sentence.body, idf)
    scored = [(terms_score(terms, stems), span) for span, stems in excerpt_sentences(excerpt)]
    top = max((score for score, _ in scored), default=0.0)
    return next((span for score, span in scored if score == top), None) if top > 0 else None


def backing_passages(
    sentences: Sequence[Sentence],
    sources: Sequence[SourceText],
    quotes: Mapping[int, Sequence[str]],
    pairs: Sequence[Pair],
    idf: Idf = UNIFORM,
) -> dict[Pair, Span]:
    """The backing passage of each (sentence, original number) pair in `pairs` that has one."""
    excerpts = {s.original_number: s.excerpt for s in sources}
    passages: dict[Pair, Span] = {}
    for index, number in pairs:
        if number not in excerpts:
            continue
        span = best_passage(sentences[index], excerpts[number], quotes.get(number, ()), idf)
        if span is not None:
            passages[(index, number)] = span
    return passages
