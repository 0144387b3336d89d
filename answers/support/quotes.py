"""Native-citation quotes as support: a cited source whose quote is in its excerpt scores 1.0 (pure).

A provider with native citations (Anthropic's `cited_text`) says which passage of a
source backs the text it cites it from. That is stronger evidence than word
overlap, once checked: the quote must be found verbatim in the excerpt the model
was shown (whitespace runs compared as one space, so a line break in the excerpt
does not hide it), and it must share at least one content word with the sentence
(quotes are kept per source, not per sentence, so this keeps a source's quote
from vouching for an unrelated sentence that also cites it). Such a pair scores
1.0 whatever the method said; no other pair is changed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from answers.support.lexical import content_words
from answers.support.record import Pair, SourceText, by_final_number
from answers.support.sentences import Sentence

_SPACE = re.compile(r"\s+")


def _squash(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def quoted_pairs(
    sentences: Sequence[Sentence],
    sources: Sequence[SourceText],
    quotes: Mapping[int, Sequence[str]],
) -> set[Pair]:
    """The (sentence, original number) pairs a verified quote backs; `quotes` by original number."""
    finals = by_final_number(sources)
    verified: dict[int, list[set[str]]] = {}
    for source in sources:
        if not quotes.get(source.original_number):
            continue
        excerpt = _squash(source.excerpt)
        quoted = [
            set(content_words(quote))
            for quote in quotes.get(source.original_number, ())
            if _squash(quote) and _squash(quote) in excerpt
        ]
        if quoted:
            verified[source.original_number] = quoted
    pairs: set[Pair] = set()
    for index, sentence in enumerate(sentences):
        words = set(content_words(sentence.body))
        for number in sentence.cited:
            cited = finals.get(number)
            if cited is not None and any(words & q for q in verified.get(cited.original_number, ())):
                pairs.add((index, cited.original_number))
    return pairs
