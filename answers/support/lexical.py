"""The `lexical` support score: how much of a sentence's content the source's excerpt contains (pure).

    score(sentence, source) = sum of w(t) over the sentence's content terms t found in the excerpt
                              / sum of w(t) over all of the sentence's content terms

A content term is a word of the sentence (markers blanked out, lower-cased, split
at anything that is not a letter or digit, as retrieval tokenizes) that is not a
stop word, compared by its stem (answers.retrieval.query.stem, so "statements"
finds "statement"). Each counts once, however often it occurs. Its weight w is
its inverse document frequency in the site's corpus:

    w(t) = ln((chunks + 1) / (chunks holding t + 1)) + 1

so a word in every chunk weighs 1 and a word no chunk holds weighs ln(chunks + 1) + 1
(7.5 on the demo corpus's 653 chunks). The weights come in as plain data (an `Idf`
built from chunk counts, answers.support.corpus), so this module needs no database.

So the score is in 0..1 and reads "the share of what the sentence says, weighted
by how telling each word is, that the excerpt also says": 1.0 when every content
word of the sentence is in the excerpt (a sentence copied from it always scores
1.0), 0.0 when none is (or the sentence has no content word: nothing to find).
Measured on bench/support_labeled.jsonl (demo corpus): a paraphrase that keeps
the technical terms scores 0.5-1.0 (median 1.0); a sentence from an unrelated
topic a median 0.09, a few up to 0.7 when they share rare words; a paraphrase in
other words about 0.2. A low score means "the source does not use these words",
not "this is false", and a high one cannot see word order or negation ("X is
not Y" scores like "X is Y"): that is what the `judge` method is for.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from answers.citations import scan_markers
from answers.retrieval.query import STOPWORDS, WEAK_TERMS, stem, tokenize

# Retrieval's stop words and weak terms (keywords that are also common English words: "with",
# "is", "not"), and the words answers use to talk about their sources rather than about the
# topic ("the documentation explains that ..."): present or not, they prove nothing.
STOP_WORDS = STOPWORDS | WEAK_TERMS | frozenset(
    [
        "according", "also", "always", "another", "documentation", "docs", "e", "etc", "g", "i",
        "means", "mentioned", "mentions", "must", "note", "notes", "one", "per", "said", "say", "says",
        "source", "sources", "state", "states", "stated", "therefore", "thus", "use", "used", "uses",
        "using", "via", "will", "within",
    ]
)  # fmt: skip


@dataclass(frozen=True)
class Idf:
    """Inverse document frequencies from plain counts: `documents` chunks, `counts[word]` holding it.

    A word missing from `counts` is taken to be in no chunk. With `documents` 0
    (no statistics), every word weighs 1: the score is then the plain share of
    content words found.
    """

    documents: int = 0
    counts: Mapping[str, int] = field(default_factory=dict)

    def __call__(self, word: str) -> float:
        if self.documents <= 0:
            return 1.0
        held = min(self.documents, max(0, self.counts.get(word, 0)))
        return math.log((self.documents + 1) / (held + 1)) + 1.0


UNIFORM = Idf()


def _without_markers(text: str) -> str:
    """`text` with its citation markers blanked: `[2]` is not the word "2"."""
    if "[" not in text:
        return text
    parts = []
    pos = 0
    for marker in scan_markers(text):
        parts += [text[pos : marker.start], " "]
        pos = marker.end
    parts.append(text[pos:])
    return "".join(parts)


def content_words(text: str) -> list[str]:
    """The distinct content words of `text` (markers ignored), lower-cased, in order."""
    return list(dict.fromkeys(w for w in tokenize(_without_markers(text)) if w not in STOP_WORDS))


def sentence_terms(text: str, idf: Idf = UNIFORM) -> dict[str, float]:
    """Each content term's stem and its weight (the heaviest of the words sharing the stem)."""
    terms: dict[str, float] = {}
    for word in content_words(text):
        key = stem(word)
        terms[key] = max(terms.get(key, 0.0), idf(word))
    return terms


@lru_cache(maxsize=256)
def excerpt_stems(excerpt: str) -> frozenset[str]:
    """The stems of every word of an excerpt (cached: one answer scores each excerpt many times)."""
    return frozenset(map(stem, set(tokenize(excerpt))))


def terms_score(terms: Mapping[str, float], stems: Iterable[str] | frozenset[str]) -> float:
    """The score of a sentence's weighted terms against an excerpt's stems (see the module docstring)."""
    total = sum(terms.values())
    if total <= 0:
        return 0.0
    found = stems if isinstance(stems, frozenset) else frozenset(stems)
    return min(1.0, sum(w for t, w in terms.items() if t in found) / total)


def lexical_score(sentence: str, excerpt: str, idf: Idf = UNIFORM) -> float:
    """How much of `sentence` `excerpt` contains, in 0..1 (see the module docstring)."""
    return terms_score(sentence_terms(sentence, idf), excerpt_stems(excerpt))
