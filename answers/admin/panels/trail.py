"""The marker trail panels: the raw and the final text with every marker's decision, as stored
(`Answer.markers`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from answers.citations.trail import MarkerDecision, MarkerOutcome
from answers.models import Answer, AnswerSource

IN_FINAL_TEXT = frozenset({MarkerOutcome.KEPT, MarkerOutcome.REWRITTEN})


@dataclass(frozen=True)
class ShownDecision(MarkerDecision):
    """One entry of `Answer.markers`, with the raw characters it spans and its sources' renumbering."""

    raw: str = ""  # the raw text it spans, exactly as the model wrote it
    renumbering: tuple[str, ...] = ()  # "2 → 1" for each member whose source is renumbered

    @property
    def removed(self) -> bool:
        return self.outcome == MarkerOutcome.REMOVED

    @property
    def unmarked(self) -> bool:
        return self.outcome == MarkerOutcome.UNMARKED

    @property
    def formed_later(self) -> bool:
        return self.pass_number > 1


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
