"""The default reranker: what share of the question a passage covers, weighted by rarity (pure).

A score is 0.47 coverage + 0.25 title + 0.13 proximity x coverage + 0.15 phrase x coverage (WEIGHTS),
so it never exceeds the weighted share of the question the passage covers; with dense similarities
it is raised DENSE_WEIGHT of the way towards the similarity, never lowered. What each part means,
why the weights are what they are and how they were measured: docs/explanation/relevance.md (the
figures stay in bench/RESULTS_relevance.md, not copied here, so they cannot go stale).
`components` also reports `lexical`, the engine's score divided by the best candidate's, for the
trail; it is not in the score: passages that score alike keep the engine's order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress, pairwise
from operator import itemgetter
from typing import Protocol

from answers.retrieval.query import STEM_KEEPS, STOPWORDS, WEAK_TERM_WEIGHT, WEAK_TERMS, stem, tokenize

# The phrase part was added to the three before it with their proportions kept (0.55 / 0.30 /
# 0.15 scaled by 0.85): on the labeled set and the five held-out ones (bench/), it moved
# seven on-topic questions to their own page first and none away (bench/RESULTS_relevance.md).
WEIGHTS = {"coverage": 0.47, "title": 0.25, "proximity": 0.13, "phrase": 0.15}
# Scaled by coverage, so that no part of the score can exceed it (docs/explanation/relevance.md).
SCALED_BY_COVERAGE = frozenset({"proximity", "phrase"})
DENSE_WEIGHT = 0.35
# A term in a section heading counts this share of one in the document's title: a
# document titled by the question's topic outranks a long page with a section on it.
HEADING_SHARE = 0.6


def term_weight(term: str, weights: Mapping[str, float] | None = None) -> float:
    """A question term's weight: the caller's (query.term_weights), else 1.0, a quarter for a weak term."""
    if weights is not None and term in weights:
        return weights[term]
    return WEAK_TERM_WEIGHT if term in WEAK_TERMS else 1.0


def combine(parts: Mapping[str, float]) -> float:
    """The lexical score from its parts (docs/explanation/relevance.md, "What a score means")."""
    coverage = parts["coverage"]
    return min(
        1.0,
        sum(WEIGHTS[k] * parts[k] * (coverage if k in SCALED_BY_COVERAGE else 1.0) for k in WEIGHTS),
    )


def with_dense(lexical: float, dense: float, weight: float | None = None) -> float:
    """The dense similarity raises a score `weight` (DENSE_WEIGHT) of the way towards it, never lowers it."""
    similarity = min(1.0, max(0.0, dense))
    share = DENSE_WEIGHT if weight is None else weight
    return min(1.0, lexical + share * max(0.0, similarity - lexical))


@dataclass(frozen=True)
class Passage:
    """What the reranker sees of a candidate."""

    title: str
    heading: str
    text: str
    lexical: float  # 0..1
    dense: float | None = None  # cosine similarity to the question; None when retrieval is lexical only


class Reranker(Protocol):
    """Scores passages for a question's terms; `weights`: each term's weight (query.term_weights)."""

    name: str

    def score(
        self, terms: list[str], passages: list[Passage], weights: Mapping[str, float] | None = None
    ) -> list[float]: ...


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
def title_stems(title_or_heading: str) -> frozenset[str]:
    """The stems of a title or heading (cached: a document's chunks share its title, and often
    a heading, so each is stemmed once)."""
    return frozenset(map(stem, tokenize(title_or_heading)))


@lru_cache(maxsize=4096)
def _title_words(title: str) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
    """The title's stems, stop words skipped, and those side by side:
    "The Code Objects" -> ({"code", "object"}, {("code", "object")})."""
    stems = [stem(word) for word in tokenize(title) if word not in STOPWORDS]
    return frozenset(stems), frozenset(pairwise(stems))


def title_phrase(stems: list[str], title: str) -> float:
    """1.0 when the title names the question's subject, else 0.0 (docs/explanation/relevance.md): it holds two
    of the question's stems side by side as the question writes them (`stems` in the question's
    order), or every word of it is one of the question's, or it holds the question's only stem."""
    words, pairs = _title_words(title)
    if len(stems) == 1:
        return 1.0 if stems[0] in words else 0.0
    if words and words.issubset(stems):
        return 1.0
    return 1.0 if any(pair in pairs for pair in pairwise(stems)) else 0.0


def title_excess(stems: frozenset[str], title: str) -> int | None:
    """How many of the title's words (stop words skipped, by stem) the question does not hold,
    when the title holds every one of the question's `stems`; None when it does not.

    The order among pages that score alike and are both named by the question: "Please explain
    assignment statements." -> 0 for "Assignment statements", 1 for "Augmented assignment
    statements" (a page on a narrower topic, named by a longer title). The page whose title
    adds the fewest words is about exactly what was asked (answers.retrieval.pipeline).
    """
    words, _ = _title_words(title)
    if not stems or not stems <= title_stems(title):
        return None
    return len(words - stems)


_HEAD = itemgetter(slice(None, STEM_KEEPS))


class LexicalReranker:
    """Rarity-weighted coverage, title matches and proximity, with the lexical score
    (docs/explanation/relevance.md)."""

    name = "coverage-v2"

    @staticmethod
    def weights(terms: list[str], weights: Mapping[str, float] | None = None) -> dict[str, float]:
        """Each question stem's weight (its strongest term's), in the question's order."""
        by_stem: dict[str, float] = {}
        for term in terms:
            key = stem(term)
            by_stem[key] = max(by_stem.get(key, 0.0), term_weight(term, weights))
        return by_stem

    def components(
        self, terms: list[str], passage: Passage, weights: Mapping[str, float] | None = None
    ) -> dict[str, float]:
        parts = self._components(self.weights(terms, weights), passage)
        if passage.dense is not None:
            parts["dense"] = min(1.0, max(0.0, passage.dense))
        return parts

    @staticmethod
    def _components(weights: dict[str, float], passage: Passage) -> dict[str, float]:
        """The lexical components (see the module docstring)."""
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
        in_title = title_stems(passage.title)
        in_heading = title_stems(passage.heading)
        everywhere = in_title.union(in_heading, matching.values())
        titled = sum(w for s, w in weights.items() if s in in_title)
        headed = sum(w for s, w in weights.items() if s in in_heading and s not in in_title)
        return {
            "coverage": sum(w for s, w in weights.items() if s in everywhere) / total,
            "title": (titled + HEADING_SHARE * headed) / total,
            "proximity": proximity(list(weights), positions),
            "phrase": title_phrase(list(weights), passage.title),
            "lexical": min(1.0, max(0.0, passage.lexical)),
        }

    def score(
        self, terms: list[str], passages: list[Passage], weights: Mapping[str, float] | None = None
    ) -> list[float]:
        weights = self.weights(terms, weights)
        out = []
        for passage in passages:
            lexical = combine(self._components(weights, passage))
            out.append(lexical if passage.dense is None else with_dense(lexical, passage.dense))
        return out


class LexicalOnlyReranker:
    """No reranking: the normalised engine score alone (the baseline the benchmark compares with)."""

    name = "lexical-only"

    def score(
        self, terms: list[str], passages: list[Passage], weights: Mapping[str, float] | None = None
    ) -> list[float]:
        return [min(1.0, max(0.0, p.lexical)) for p in passages]
