"""The support record (docs/reference/http.md, trail `support`) from sentences, sources and scores (pure).

    {"method", "min_score", "fallback",
     "sentences": [{"text", "start", "end", "cited", "scores", "verdict", "grounded_by", "passages"}]}

- `cited`: the final numbers the sentence's markers cite, in written order.
- `scores`: `{"<final number>": score}` for each cited source, rounded to 4 places.
- `verdict`: `supported` when every cited source scores at least `min_score`,
  `unsupported` when one does not, `uncited` when the sentence cites nothing.
- `grounded_by`: for an uncited sentence, the original numbers of the retrieved
  sources (cited or dropped) scoring at least `min_score` against it, best first
  (ties: lower original number first); empty for the other verdicts.
- `passages`: `{"<final number>": [start, end]}` for each cited source scoring at least
  `min_score` whose excerpt has a passage backing the sentence: offsets into that source's
  excerpt (answers.support.passages); `{}` when none.
- `fallback`: null, or `{"method", "reason"}` when the configured method failed
  and `method` is the one that stood in for it (docs/reference/http.md's field lists are minimums).

`summarize()` counts a stored record for list filters, health shares and metrics.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from answers.support.sentences import Sentence

SUPPORTED = "supported"
UNSUPPORTED = "unsupported"
UNCITED = "uncited"
VERDICTS = (SUPPORTED, UNSUPPORTED, UNCITED)

# (sentence index, original number of a retrieved source)
Pair = tuple[int, int]


@dataclass(frozen=True)
class SourceText:
    """One retrieved source as the support check sees it."""

    original_number: int
    final_number: int | None  # None when dropped
    excerpt: str  # the excerpt the model was shown


def by_final_number(sources: Sequence[SourceText]) -> dict[int, SourceText]:
    return {s.final_number: s for s in sources if s.final_number is not None}


def wanted_pairs(sentences: Sequence[Sentence], sources: Sequence[SourceText]) -> list[Pair]:
    """The (sentence, source) pairs a record needs scores for, in order.

    A citing sentence needs its cited sources; an uncited one every retrieved
    source (for `grounded_by`). A cited number no source has (a text that was
    not finalized against these sources) needs nothing: it scores 0.
    """
    finals = by_final_number(sources)
    pairs: list[Pair] = []
    for index, sentence in enumerate(sentences):
        if sentence.cited:
            pairs += [(index, finals[n].original_number) for n in sentence.cited if n in finals]
        else:
            pairs += [(index, s.original_number) for s in sources]
    return pairs


def _round(score: float) -> float:
    return round(min(1.0, max(0.0, score)), 4)


def below_bar(score: float, min_score: float) -> bool:
    """The support bar, spelled once: a score under `min_score` does not support (or ground) a sentence."""
    return score < min_score


def build_record(
    *,
    method: str,
    min_score: float,
    sentences: Sequence[Sentence],
    sources: Sequence[SourceText],
    scores: Mapping[Pair, float],
    fallback: Mapping[str, str] | None = None,
    passages: Mapping[Pair, tuple[int, int]] | None = None,
) -> dict[str, Any]:
    """The JSON-ready support record; a pair missing from `scores` scores 0, from `passages` has none."""
    finals = by_final_number(sources)
    out = []
    for index, sentence in enumerate(sentences):
        cited_scores: dict[str, float] = {}
        backing: dict[str, list[int]] = {}
        grounded_by: list[int] = []
        for number in sentence.cited:
            source = finals.get(number)
            score = scores.get((index, source.original_number), 0.0) if source else 0.0
            cited_scores[str(number)] = _round(score)
            passage = (passages or {}).get((index, source.original_number)) if source else None
            if passage is not None and not below_bar(_round(score), min_score):
                backing[str(number)] = list(passage)
        if not sentence.cited:
            verdict = UNCITED
            ranked = sorted(
                ((_round(scores.get((index, s.original_number), 0.0)), s.original_number) for s in sources),
                key=lambda pair: (-pair[0], pair[1]),
            )
            grounded_by = [number for score, number in ranked if not below_bar(score, min_score)]
        elif not any(below_bar(score, min_score) for score in cited_scores.values()):
            verdict = SUPPORTED
        else:
            verdict = UNSUPPORTED
        out.append(
            {
                "text": sentence.text,
                "start": sentence.start,
                "end": sentence.end,
                "cited": list(sentence.cited),
                "scores": cited_scores,
                "verdict": verdict,
                "grounded_by": grounded_by,
                "passages": backing,
            }
        )
    return {
        "method": method,
        "min_score": min_score,
        "fallback": dict(fallback) if fallback else None,
        "sentences": out,
    }


def grounded_uncited(sentence: Mapping[str, Any]) -> list[int]:
    """ "Grounded but uncited", spelled once: the retrieved sources (original numbers) grounding a
    stored sentence that cites nothing; [] when it cites or no source grounds it."""
    return list(sentence.get("grounded_by", [])) if sentence["verdict"] == UNCITED else []


@dataclass(frozen=True)
class Summary:
    """What a list filter, a health share or a metric needs from one record, counted once."""

    unsupported: int  # sentences with a cited source under the bar
    grounded_uncited: int  # uncited sentences some retrieved source grounds
    grounded_by_dropped: int  # ... of which some dropped source grounds


def summarize(record: Mapping[str, Any], dropped: Collection[int]) -> Summary:
    """Counts of a stored record; `dropped` are the original numbers of the answer's dropped sources."""
    sentences = record.get("sentences", [])
    grounded = [numbers for s in sentences if (numbers := grounded_uncited(s))]
    return Summary(
        unsupported=sum(s["verdict"] == UNSUPPORTED for s in sentences),
        grounded_uncited=len(grounded),
        grounded_by_dropped=sum(any(n in dropped for n in numbers) for numbers in grounded),
    )
