"""The answer page's trail panels, read from the stored record: `Answer.markers` and the AnswerSource rows.

Nothing here decides anything about a marker: every outcome, span and final
number comes from the record the pipeline stored (docs of the record:
answers.citations.trail.compute_trail). This module only lays it out for the
templates in templates/admin/answers/answer/trail/.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from answers.citations.trail import MarkerDecision, MarkerOutcome
from answers.models import Answer, AnswerSource
from answers.rendering import link_url
from answers.support.record import UNCITED, VERDICTS, grounded_uncited

IN_FINAL_TEXT = frozenset({MarkerOutcome.KEPT, MarkerOutcome.REWRITTEN})


@dataclass(frozen=True)
class ShownDecision(MarkerDecision):
    """One entry of `Answer.markers`, with the raw characters it spans and its sources' renumbering."""

    raw: str = ""  # the raw text it spans, exactly as the model wrote it
    renumbering: tuple[str, ...] = ()  # "2 → 1" for each member whose source is renumbered

    @property
    def in_final_text(self) -> bool:
        return self.outcome in IN_FINAL_TEXT

    @property
    def removed(self) -> bool:
        return self.outcome == MarkerOutcome.REMOVED

    @property
    def unmarked(self) -> bool:
        return self.outcome == MarkerOutcome.UNMARKED

    @property
    def formed_later(self) -> bool:
        return self.pass_number > 1


@dataclass(frozen=True)
class SourceSupport:
    """A final source in the support record: its lowest score among the sentences citing it."""

    lowest: float | None  # None: no sentence of the record cites it (a fallback answer, say)
    sentences: tuple[int, ...]  # the sentences (numbered from 1) that cite it, in order
    lowest_in: int  # the sentence with the lowest score (0 when none)
    min_score: float  # the record's bar

    @property
    def below_bar(self) -> bool:
        return self.lowest is not None and self.lowest < self.min_score

    @property
    def where(self) -> str:
        """ "sentence 2" / "sentence 2 of 1, 2 and 3": where the lowest score is, among those citing it."""
        if len(self.sentences) <= 1:
            return f"sentence {self.lowest_in}"
        numbers = [str(n) for n in self.sentences]
        return f"sentence {self.lowest_in}, of {', '.join(numbers[:-1])} and {numbers[-1]} citing it"


@dataclass(frozen=True)
class SourceRow:
    """One retrieved source on the answer page, with its outcome as the AnswerSource row stores it."""

    source: AnswerSource
    link: str | None  # the URL when it may become a link
    relied_on_by: tuple[int, ...] = ()  # uncited sentences (numbered from 1) it grounds (support record)
    support: SourceSupport | None = None  # a final source's support; None: no record (or not in the list)

    @property
    def relied_on(self) -> str:
        """ "sentence 3 relies" / "sentences 2 and 3 rely": what the page says beside "dropped"."""
        numbers = [str(n) for n in self.relied_on_by]
        if len(numbers) == 1:
            return f"sentence {numbers[0]} relies"
        return f"sentences {', '.join(numbers[:-1])} and {numbers[-1]} rely"

    @property
    def pending(self) -> bool:
        return self.source.status == AnswerSource.Status.PENDING

    @property
    def dropped(self) -> bool:
        return self.source.status == AnswerSource.Status.DROPPED

    @property
    def renumbered(self) -> bool:
        return self.source.renumbered


def source_rows(sources: Sequence[AnswerSource], support: Any = None) -> list[SourceRow]:
    """The sources panel's rows; with the answer's support record, which uncited sentences each grounds
    and, for each source of the final list, its support (the lowest score of the sentences citing it:
    shown beside readers' flags, so a reviewer sees whether the check agrees with the reader)."""
    relied = _grounding(support)
    supports = _support_by_final(support)
    return [
        SourceRow(
            source=s,
            link=link_url(s.url),
            relied_on_by=tuple(relied.get(s.original_number, ())),
            support=supports(s.final_number) if s.final_number is not None else None,
        )
        for s in sources
    ]


def _support_by_final(support: Any) -> Callable[[int], SourceSupport | None]:
    """final number -> its SourceSupport, or always None without a stored record."""
    if not isinstance(support, dict) or not isinstance(support.get("sentences"), list):
        return lambda final: None
    bar = support.get("min_score")
    min_score = float(bar) if isinstance(bar, (int, float)) else 0.0
    scored: dict[int, list[tuple[float, int]]] = {}
    for index, sentence in enumerate(_sentences(support), start=1):
        for key, score in sentence["scores"].items():
            if str(key).isdigit() and isinstance(score, (int, float)) and not isinstance(score, bool):
                scored.setdefault(int(key), []).append((float(score), index))

    def lookup(final: int) -> SourceSupport:
        pairs = scored.get(final, [])
        if not pairs:
            return SourceSupport(lowest=None, sentences=(), lowest_in=0, min_score=min_score)
        lowest, where = min(pairs)
        return SourceSupport(
            lowest=lowest, sentences=tuple(i for _, i in pairs), lowest_in=where, min_score=min_score
        )

    return lookup


def _sentences(support: Any) -> list[dict[str, Any]]:
    """The record's sentences that have the shape the page reads (the record is data: skip the rest)."""
    if not isinstance(support, dict) or not isinstance(support.get("sentences"), list):
        return []
    return [
        s
        for s in support["sentences"]
        if isinstance(s, dict)
        and isinstance(s.get("start"), int)
        and isinstance(s.get("end"), int)
        and s.get("verdict") in VERDICTS
        and isinstance(s.get("cited", []), list)
        and isinstance(s.get("scores", {}), dict)
        and isinstance(s.get("grounded_by", []), list)
    ]


def _grounding(support: Any) -> dict[int, list[int]]:
    """Original number -> the uncited sentences (numbered from 1) it grounds."""
    relied: dict[int, list[int]] = {}
    for index, sentence in enumerate(_sentences(support), start=1):
        for number in grounded_uncited(sentence):
            relied.setdefault(number, []).append(index)
    return relied


@dataclass(frozen=True)
class CitedScore:
    """A cited source's support score beside its sentence."""

    number: int  # final number
    score: float
    title: str
    below_bar: bool


@dataclass(frozen=True)
class Grounding:
    """A retrieved source that grounds an uncited sentence."""

    original_number: int
    final_number: int | None
    title: str

    @property
    def dropped(self) -> bool:
        return self.final_number is None


@dataclass(frozen=True)
class SupportPiece:
    """A piece of the final text: between sentences (`verdict` empty), or one sentence and its verdict."""

    text: str
    verdict: str = ""
    number: int = 0  # the sentence's number, from 1
    scores: tuple[CitedScore, ...] = ()
    grounded_by: tuple[Grounding, ...] = ()  # (grounded_uncited(): an uncited sentence's only)

    @property
    def label(self) -> str:
        """The verdict as the page names it: supported, unsupported, uncited and grounded, uncited."""
        if self.verdict == UNCITED:
            return "uncited and grounded" if self.grounded_by else "uncited"
        return self.verdict

    @property
    def css(self) -> str:
        return "grounded" if self.grounded_by else self.verdict

    @property
    def hover(self) -> str:
        """The tooltip: the verdict and each score or grounding source."""
        details = [f"[{c.number}] {c.title}: {c.score:.2f}" for c in self.scores] + [
            f"source {g.original_number}{' (dropped)' if g.dropped else f' [{g.final_number}]'} {g.title}"
            for g in self.grounded_by
        ]
        return f"Sentence {self.number}: {self.label}" + ("".join(f"\n{d}" for d in details))


@dataclass(frozen=True)
class SupportPanel:
    """The support record as the answer page shows it (None fields: nothing to show)."""

    state: str  # "shown", "pending" (done, not computed yet or failed), "none" (not a done answer)
    method: str = ""
    min_score: float = 0.0
    fallback: dict[str, str] | None = None
    pieces: tuple[SupportPiece, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)


def support_panel(answer: Answer, sources: Sequence[AnswerSource]) -> SupportPanel:
    """The final text cut into its sentences, each with its verdict, scores and grounding sources."""
    if answer.status != Answer.Status.DONE:
        return SupportPanel(state="none")
    record = answer.support
    if not isinstance(record, dict):
        return SupportPanel(state="pending")
    by_final = {s.final_number: s for s in sources if s.final_number is not None}
    by_original = {s.original_number: s for s in sources}
    text = answer.final_text
    bar = float(record.get("min_score", 0.0))
    pieces: list[SupportPiece] = []
    cursor = 0
    for number, sentence in enumerate(_sentences(record), start=1):
        start, end = sentence["start"], sentence["end"]
        if start < cursor or end > len(text) or end < start:
            continue  # not a span of this text (the record is data)
        if cursor < start:
            pieces.append(SupportPiece(text=text[cursor:start]))
        scores = []
        for key, score in sentence["scores"].items():
            final = int(key) if str(key).isdigit() else 0
            source = by_final.get(final)
            value = float(score) if isinstance(score, (int, float)) else 0.0
            scores.append(CitedScore(final, value, source.title if source else "?", value < bar))
        grounded = [
            Grounding(n, by_original[n].final_number, by_original[n].title)
            for n in grounded_uncited(sentence)
            if n in by_original
        ]
        pieces.append(
            SupportPiece(
                text=text[start:end],
                verdict=sentence["verdict"],
                number=number,
                scores=tuple(scores),
                grounded_by=tuple(grounded),
            )
        )
        cursor = end
    if cursor < len(text):
        pieces.append(SupportPiece(text=text[cursor:]))
    verdicts = [p.css for p in pieces if p.verdict]
    fallback = record.get("fallback")
    return SupportPanel(
        state="shown",
        method=str(record.get("method", "")),
        min_score=bar,
        fallback={k: str(v) for k, v in fallback.items()} if isinstance(fallback, dict) else None,
        pieces=tuple(pieces),
        counts={name: verdicts.count(name) for name in ("supported", "unsupported", "grounded", "uncited")},
    )


@dataclass
class Node:
    """A piece of the raw or final text: plain text, or a marker with the pieces it spans."""

    text: str = ""
    decision: ShownDecision | None = None
    titles: str = ""  # final text: the sources a marker cites, for its tooltip
    children: list[Node] = field(default_factory=list)


@dataclass(frozen=True)
class TrailPanels:
    raw_nodes: list[Node]
    final_nodes: list[Node]
    decisions: list[ShownDecision]
    record_missing: bool  # a finished answer with citations but no per-marker record (stored before it)


def _decision(entry: dict[str, Any], raw_text: str, sources: Mapping[int, AnswerSource]) -> ShownDecision:
    stored = MarkerDecision.from_json(entry)
    renumbering = []
    if stored.outcome in IN_FINAL_TEXT:
        for member in stored.members:
            source = sources.get(member)
            if member not in stored.stripped and source is not None and source.renumbered:
                renumbering.append(f"{member} → {source.final_number}")
    return ShownDecision(
        **{f.name: getattr(stored, f.name) for f in fields(MarkerDecision)},
        raw=raw_text[stored.raw_start : stored.raw_end],
        renumbering=tuple(renumbering),
    )


def _nest(text: str, spans: Sequence[tuple[int, int, Node]]) -> list[Node]:
    """`text` cut into plain pieces and marker nodes; a span inside another becomes its child.

    A later-pass marker spans the earlier markers whose removal formed it
    (`[2[9]]`), so spans nest. One that crosses another's edge (not produced by
    strip, but the record is data) stays out of the text and shows in the table only.
    """
    root = Node()
    stack: list[tuple[int, Node]] = [(len(text), root)]
    cursor = [0]  # position in `text` up to which pieces were emitted

    def close_until(position: int) -> None:
        while len(stack) > 1 and stack[-1][0] <= position:
            end, node = stack.pop()
            if cursor[0] < end:
                node.children.append(Node(text=text[cursor[0] : end]))
                cursor[0] = end

    for start, end, node in sorted(spans, key=lambda s: (s[0], -s[1])):
        close_until(start)
        if start < cursor[0] or end > stack[-1][0]:
            continue
        parent = stack[-1][1]
        if cursor[0] < start:
            parent.children.append(Node(text=text[cursor[0] : start]))
        cursor[0] = start
        parent.children.append(node)
        stack.append((end, node))
    close_until(len(text))
    if cursor[0] < len(text):
        root.children.append(Node(text=text[cursor[0] :]))
    return root.children


def trail_panels(answer: Answer, sources: Sequence[AnswerSource]) -> TrailPanels:
    """The raw text, the final text and the decisions table of one answer, from what it stored."""
    by_number = {s.original_number: s for s in sources}
    decisions = [
        _decision(entry, answer.raw_text, by_number) for entry in answer.markers if isinstance(entry, dict)
    ]
    decisions.sort(key=lambda d: (d.raw_start, d.pass_number))
    raw_nodes = _nest(answer.raw_text, [(d.raw_start, d.raw_end, Node(decision=d)) for d in decisions])

    titles = {s.final_number: s.title for s in sources if s.final_number is not None}
    final_spans = [
        (
            d.final_start,
            d.final_end,
            Node(decision=d, titles="; ".join(f"[{m}] {titles.get(m, '?')}" for m in d.final_members)),
        )
        for d in decisions
        if d.final_start is not None and d.final_end is not None
    ]
    final_nodes = _nest(answer.final_text, final_spans)

    cited = any(s.status == AnswerSource.Status.CITED for s in sources)
    # An empty record is also what an answer without markers stores: only cited sources or stripped
    # members prove that markers were there.
    marked = cited or bool(answer.stripped)
    record_missing = answer.status == Answer.Status.DONE and not decisions and marked
    return TrailPanels(raw_nodes, final_nodes, decisions, record_missing)


# --- Hybrid retrieval (the trace's "dense" and "fusion", answers.retrieval.pipeline) -------------


@dataclass(frozen=True)
class FusionRow:
    """One candidate of a hybrid retrieval: its ranks in each list and where it ended up."""

    fused_rank: Any
    chunk_id: Any
    document_id: Any
    title: str
    lexical_rank: Any  # None: the lexical engine did not return it
    dense_rank: Any  # None: the dense search did not return it
    dense_similarity: Any
    outcome: str  # "source N", "cut by threshold", "cut by cap", or "" (a lesser chunk of a kept document)


@dataclass(frozen=True)
class DensePanel:
    status: str  # "used", "fallback", or "" (embeddings off when it was answered)
    reason: str
    index: str
    model: str
    candidates: Any
    rows: list[FusionRow]


def _entries(trace: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    value = trace.get(key)
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def dense_panel(trace: Mapping[str, Any]) -> DensePanel:
    """The stored trace's dense status and each fused candidate's ranks, laid out for the retrieval panel."""
    dense = trace.get("dense")
    dense = dense if isinstance(dense, dict) else {}
    titles: dict[Any, str] = {}
    outcome: dict[Any, str] = {}
    for entry in _entries(trace, "kept"):
        titles[entry.get("document_id")] = str(entry.get("title", ""))
        chunk_ids = entry.get("chunk_ids")
        for chunk_id in chunk_ids if isinstance(chunk_ids, list) else []:
            outcome[chunk_id] = f"source {entry.get('number')}"
    for key, label in (("cut_by_threshold", "cut by threshold"), ("cut_by_cap", "cut by cap")):
        for entry in _entries(trace, key):
            titles.setdefault(entry.get("document_id"), str(entry.get("title", "")))
            outcome.setdefault(entry.get("chunk_id"), label)
    rows = [
        FusionRow(
            fused_rank=entry.get("fused_rank"),
            chunk_id=entry.get("chunk_id"),
            document_id=entry.get("document_id"),
            title=titles.get(entry.get("document_id"), ""),
            lexical_rank=entry.get("lexical_rank"),
            dense_rank=entry.get("dense_rank"),
            dense_similarity=entry.get("dense_similarity"),
            outcome=outcome.get(entry.get("chunk_id"), ""),
        )
        for entry in _entries(trace, "fusion")
    ]
    return DensePanel(
        status=str(dense.get("status", "")),
        reason=str(dense.get("reason", "")),
        index=str(dense.get("index", "")),
        model=str(dense.get("model", "")),
        candidates=dense.get("candidates", ""),
        rows=rows,
    )


@dataclass(frozen=True)
class CoveragePanel:
    """The question's terms as the coverage record (Answer.coverage) judged them."""

    state: str  # "none" (not done), "pending" (not computed yet), "declined", "ready"
    terms: list[dict[str, Any]] = field(default_factory=list)  # {"term", "covered", "key"}
    flag: bool = False
    missing_key: list[str] = field(default_factory=list)


def coverage_panel(answer: Answer) -> CoveragePanel:
    """What the admin shows of the coverage record: read as stored, never recomputed."""
    if answer.status != Answer.Status.DONE:
        return CoveragePanel(state="none")
    record = answer.coverage
    if not isinstance(record, dict):
        return CoveragePanel(state="pending")
    covered = {str(t) for t in record.get("covered") or []}
    key = {str(t) for t in record.get("key") or []}
    terms = [
        {"term": str(t), "covered": str(t) in covered, "key": str(t) in key}
        for t in record.get("terms") or []
    ]
    return CoveragePanel(
        state="declined" if answer.declined else "ready",
        terms=terms,
        flag=bool(record.get("flag")),
        missing_key=[str(t["term"]) for t in terms if t["key"] and not t["covered"]],
    )
