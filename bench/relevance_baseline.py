"""The scorer and the query terms as they were before rarity weights, kept verbatim for bench_relevance's
baseline.

The old score: 0.35 coverage (unweighted) + 0.25 lexical + 0.25 title + 0.15 proximity,
with only the old stop words dropped from the question, compared with the old default
ANSWERS_MIN_SCORE of 0.1. Not used by the app.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import compress
from operator import itemgetter

from answers.retrieval.query import STEM_KEEPS, WEAK_TERMS, stem, tokenize
from answers.retrieval.rerank import Passage

OLD_STOPWORDS = frozenset(
    [
        "a", "about", "above", "after", "again", "against", "all", "am", "an", "any", "are", "aren",
        "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
        "can", "cannot", "could", "did", "didn", "do", "does", "doesn", "doing", "don", "down",
        "during", "each", "few", "further", "had", "has", "have", "having", "he", "her", "here", "hers",
        "herself", "him", "himself", "his", "how", "i", "into", "it", "its", "itself", "just", "let",
        "me", "more", "most", "my", "myself", "no", "nor", "of", "off", "on", "once", "only", "other",
        "ought", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so",
        "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there",
        "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was",
        "we", "were", "what", "when", "where", "which", "who", "whom", "why", "would", "you", "your",
        "yours", "yourself", "yourselves", "s", "t", "ll", "ve", "re", "d", "m", "o", "please", "tell",
        "explain", "describe", "work", "works",
    ]
)  # fmt: skip


def old_query_terms(question: str) -> list[str]:
    """query_terms before rarity weights: only these stop words dropped."""
    seen: dict[str, None] = {}
    for word in tokenize(question):
        if word in OLD_STOPWORDS or word in seen:
            continue
        seen[word] = None
        if len(seen) >= 32:
            break
    return list(seen)


WEIGHTS = {"coverage": 0.35, "lexical": 0.25, "title": 0.25, "proximity": 0.15}
DENSE_WEIGHT = 0.5
WEAK_TERM_WEIGHT = 0.25


def term_weight(term: str) -> float:
    return WEAK_TERM_WEIGHT if term in WEAK_TERMS else 1.0


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


class OldLexicalReranker:
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

    def score(self, terms: list[str], passages: list[Passage], rarity: object = None) -> list[float]:
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
