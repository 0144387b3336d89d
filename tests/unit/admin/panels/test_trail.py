"""The answer page's trail panels lay out the stored record as it is, with no database and no re-deriving."""

from __future__ import annotations

from answers.admin.panels.trail import MarkerOutcome, Node, trail_panels
from answers.models import Answer
from tests.fixtures.markers import REWRITTEN, UNMARKED, marker


def flat(nodes: list[Node]) -> list[tuple[str, str]]:
    """(outcome or "text", the characters it covers) for each top-level piece."""
    out = []
    for node in nodes:
        if node.decision is None:
            out.append(("text", node.text))
        else:
            out.append((node.decision.outcome, "".join(c.text or "…" for c in node.children)))
    return out


def answer(raw: str, final: str, record: list[dict[str, object]]) -> Answer:
    return Answer(raw_text=raw, final_text=final, markers=record, status=Answer.Status.DONE)


def test_a_rewritten_marker_keeps_its_stripped_members_and_final_text():
    record = [
        marker(
            (2, 8), "[1, 9]", [1, 9], REWRITTEN, stripped=[9], final="[1]", final_start=2, final_members=[1]
        )
    ]
    panels = trail_panels(answer("A [1, 9].", "A [1].", record), [])
    assert flat(panels.raw_nodes) == [("text", "A "), (MarkerOutcome.REWRITTEN, "[1, 9]"), ("text", ".")]
    assert flat(panels.final_nodes) == [("text", "A "), (MarkerOutcome.REWRITTEN, "[1]"), ("text", ".")]
    [decision] = panels.decisions
    assert (decision.stripped, decision.final) == ((9,), "[1]")


def test_an_unmarked_marker_is_shown_in_the_raw_text_only():
    record = [marker((0, 3), "[1]", [1], UNMARKED)]
    panels = trail_panels(answer("[1](x)", "[1](x)", record), [])
    assert flat(panels.raw_nodes) == [(MarkerOutcome.UNMARKED, "[1]"), ("text", "(x)")]
    assert flat(panels.final_nodes) == [("text", "[1](x)")]


def test_a_span_crossing_another_stays_in_the_table_and_the_text_stays_whole():
    record = [marker((0, 3), "[1]", [1], UNMARKED), marker((2, 5), "]x[", [1], UNMARKED, pass_number=2)]
    panels = trail_panels(answer("[1]x[", "[1]x[", record), [])
    assert "".join(text for _, text in flat(panels.raw_nodes)) == "[1]x["
    assert len(panels.decisions) == 2


def test_an_answer_without_a_record_shows_its_text_plain():
    panels = trail_panels(answer("No markers.", "No markers.", []), [])
    assert flat(panels.raw_nodes) == [("text", "No markers.")]
    assert (panels.decisions, panels.record_missing) == ([], False)
