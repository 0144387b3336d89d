"""The answer page's trail panels, read from the stored record: `Answer.markers` and the AnswerSource rows.

Nothing here decides anything about a marker: every outcome, span and final
number comes from the record the pipeline stored (docs of the record:
answers.citations.trail.compute_trail). This module only lays it out for the
templates in templates/admin/answers/answer/trail/.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from answers.citations.trail import MarkerDecision, MarkerOutcome
from answers.models import Answer, AnswerSource
from answers.rendering import link_url

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
class SourceRow:
    """One retrieved source on the answer page, with its outcome as the AnswerSource row stores it."""

    source: AnswerSource
    link: str | None  # the URL when it may become a link

    @property
    def pending(self) -> bool:
        return self.source.status == AnswerSource.Status.PENDING

    @property
    def dropped(self) -> bool:
        return self.source.status == AnswerSource.Status.DROPPED

    @property
    def renumbered(self) -> bool:
        return bool(getattr(self.source, "renumbered", False))


def source_rows(sources: Sequence[AnswerSource]) -> list[SourceRow]:
    return [SourceRow(source=s, link=link_url(s.url)) for s in sources]


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
            if member not in stored.stripped and source is not None and getattr(source, "renumbered", False):
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
