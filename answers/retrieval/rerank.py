"""The default reranker: query-term coverage, title matches and term proximity with the lexical score (pure).

Every component is in 0..1 and the weights sum to 1, so the combined score is
in 0..1 too:

    score = 0.35 * coverage     share of the question's terms found in the passage
                                (its text, heading or document title)
          + 0.25 * lexical      the engine's score divided by the best candidate's
          + 0.25 * title        share of the question's terms in the title or heading
          + 0.15 * proximity    how tightly the matched terms sit together in the
                                text: k distinct terms within a window of w words
                                give (k - 1) / (w - 1); 1.0 when adjacent

"Share" is weighted: a weak term (a keyword that is also a common English word,
see query.WEAK_TERMS) counts a quarter of a normal term. So 1.0 means "every
term, in the title, side by side, and the strongest lexical match"; a passage
that mentions one of five question terms once in its body, with a weak lexical
score, lands around 0.1.

With dense retrieval on (ANSWERS_EMBEDDINGS, see answers.retrieval.embeddings)
each passage also carries its cosine similarity to the question, and the score
gains a fifth component while the four above keep their proportions at half
their weight:

    score = 0.5 * (the four-part score above)
          + 0.5 * dense         the passage's cosine similarity to the question
                                (clamped to 0..1; 0 when the chunk has no vector)

So a passage that shares no word with the question but means the same (dense
0.6) scores 0.3 and passes the default threshold, and a passage that matches
every way still scores 1.0. Without dense similarities (embeddings off, or the
embeddings server failed) the weights are exactly the four above.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import compress
from operator import itemgetter
from typing import Protocol

from answers.retrieval.query import STEM_KEEPS, WEAK_TERMS, stem, tokenize

WEIGHTS = {"coverage": 0.35, "lexical": 0.25, "title": 0.25, "proximity": 0.15}
DENSE_WEIGHT = 0.5
WEAK_TERM_WEIGHT = 0.25


def term_weight(term: str) -> float:
    return WEAK_TERM_WEIGHT if term in WEAK_TERMS else 1.0


@dataclass(frozen=True)
class Passage:
    """What the reranker sees of a candidate."""

    title: str
    heading: str
    text: str
    lexical: float  # 0..1
    dense: float | None = None  # cosine similarity to the question; None when retrieval is lexical only


class Reranker(Protocol):
    name: str

    def score(self, terms: list[str], passages: list[Passage]) -> list[float]: ...


def _min_window(positions: list[tuple[int, str]], wanted: int) -> int:
    """Length in words of the shortest window holding `wanted` distinct terms (positions sorted)."""
    best = 0
    counts: dict[str, int] = {}
    left = 0
    for pos, term in positions:
        counts[term] = counts.get(term, 0) + 1
        while len(counts) == wanted:
            left_pos, left_term = positions[left]
            width = pos - left_pos + 1
            if best == 0 or width < best:
                best = width
            counts[left_term] -= 1
            if counts[left_term] == 0:
                del counts[left_term]
            left += 1
    return best


def proximity(stems: list[str], positions: list[tuple[int, str]]) -> float:
    """(k - 1) / (w - 1) for the k distinct stems found, in the shortest window of w words holding them."""
    found = {s for _, s in positions}
    if not found:
        return 0.0
    if len(set(stems)) == 1:
        return 1.0
    if len(found) == 1:
        return 0.0
    window = _min_window(positions, len(found))
    return (len(found) - 1) / (window - 1) if window > 1 else 1.0


@lru_cache(maxsize=4096)
def _title_stems(title_and_heading: str) -> frozenset[str]:
    # A document's chunks share its title (and often a heading): stemmed once.
    return frozenset(map(stem, tokenize(title_and_heading)))


_HEAD = itemgetter(slice(None, STEM_KEEPS))


class LexicalReranker:
    """Coverage, title matches and proximity combined with the lexical score (see module docstring)."""

    name = "lexical-v1"

    @staticmethod
    def _weights(terms: list[str]) -> dict[str, float]:
        """Each question stem's weight (its strongest term's)."""
        weights: dict[str, float] = {}
        for term in terms:
            key = stem(term)
            weights[key] = max(weights.get(key, 0.0), term_weight(term))
        return weights

    def components(self, terms: list[str], passage: Passage) -> dict[str, float]:
        parts = self._components(self._weights(terms), passage)
        if passage.dense is not None:
            parts["dense"] = min(1.0, max(0.0, passage.dense))
        return parts

    @staticmethod
    def _components(weights: dict[str, float], passage: Passage) -> dict[str, float]:
        """The four lexical components (see the module docstring)."""
        total = sum(weights.values())
        if not total:
            return dict.fromkeys(WEIGHTS, 0.0)
        tokens = tokenize(passage.text)
        # Only a word that starts like a question stem can stem to it (query.STEM_KEEPS):
        # that test runs in C over the distinct words, and only those few are stemmed.
        heads = {key[:STEM_KEEPS] for key in weights}
        distinct = list(set(tokens))
        maybe = compress(distinct, map(heads.__contains__, map(_HEAD, distinct)))
        matching = {w: s for w in maybe if (s := stem(w)) in weights}
        at = compress(range(len(tokens)), map(matching.__contains__, tokens)) if matching else ()
        positions = [(i, matching[tokens[i]]) for i in at]
        title_stems = _title_stems(passage.title + " " + passage.heading)
        everywhere = title_stems.union(matching.values())
        return {
            "coverage": sum(w for s, w in weights.items() if s in everywhere) / total,
            "lexical": min(1.0, max(0.0, passage.lexical)),
            "title": sum(w for s, w in weights.items() if s in title_stems) / total,
            "proximity": proximity(list(weights), positions),
        }

    def score(self, terms: list[str], passages: list[Passage]) -> list[float]:
        weights = self._weights(terms)
        out = []
        for passage in passages:
            parts = self._components(weights, passage)
            lexical = sum(WEIGHTS[k] * v for k, v in parts.items())
            if passage.dense is not None:
                dense = min(1.0, max(0.0, passage.dense))
                lexical = (1 - DENSE_WEIGHT) * lexical + DENSE_WEIGHT * dense
            out.append(min(1.0, lexical))
        return out


class LexicalOnlyReranker:
    """No reranking: the normalised engine score alone (the baseline the benchmark compares with)."""

    name = "lexical-only"

    def score(self, terms: list[str], passages: list[Passage]) -> list[float]:
        return [min(1.0, max(0.0, p.lexical)) for p in passages]
