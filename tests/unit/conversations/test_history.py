"""The history a follow-up's prompt carries (answers/conversations/history.py) and the standalone
question's heuristic (answers/conversations/standalone.py): pure, no database."""

from __future__ import annotations

import pytest

from answers.citations.trail import compute_trail, final_markers
from answers.conversations.history import PastTurn, assemble, marker_free
from answers.conversations.standalone import heuristic, rewrite_messages
from answers.providers.prompt import HISTORY_VERSION, PROMPT_VERSION, build_prompt
from answers.rendering import render_answer_html, source_anchor
from tests.fixtures.providers import retrieved_source


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Plain text.", "Plain text."),
        ("A claim [1].", "A claim."),
        ("A claim [1, 3] and another [2].", "A claim and another."),
        ("Two [1][2] markers.", "Two markers."),
        ("Ranges [1-3] too.", "Ranges too."),
        ("Code `a[1]` is no marker [2].", "Code `a[1]` is no marker."),
        ("A line [1]\n\nNext paragraph [2].", "A line\n\nNext paragraph."),
        # A marker beginning a line goes with the blanks after it, as strip removes one.
        ("[1] A claim.\n[2]\tNext.", "A claim.\nNext."),
        ("Joined[1] words.", "Joined words."),
    ],
)
def test_marker_free_removes_every_citation_marker_with_its_blanks(text: str, expected: str) -> None:
    assert marker_free(text) == expected


def test_marker_free_uses_the_trails_record_of_the_final_text() -> None:
    trail = compute_trail("Zebras graze [3] on grass [1]. See 【2】 too.", 3)
    markers = final_markers(trail.markers_json())

    assert trail.final_text == "Zebras graze [1] on grass [2]. See [3] too."
    assert marker_free(trail.final_text, markers) == "Zebras graze on grass. See too."


def _turns(*sizes: int) -> list[PastTurn]:
    return [
        PastTurn(turn=n, question="q" * 10, text="a" * (size - 10)) for n, size in enumerate(sizes, start=1)
    ]


@pytest.mark.parametrize(
    ("sizes", "budget", "sent", "cut"),
    [
        ((100, 100, 100), 1000, [1, 2, 3], []),
        ((100, 100, 100), 300, [1, 2, 3], []),
        ((100, 100, 100), 299, [2, 3], [1]),
        ((100, 100, 100), 150, [3], [1, 2]),
        ((100, 500, 100), 250, [3], [1, 2]),  # no gap: an older turn that would fit is cut too
        ((100, 100, 100), 99, [], [1, 2, 3]),
        ((), 100, [], []),
    ],
)
def test_assemble_keeps_the_newest_turns_within_the_budget_oldest_dropped_first(
    sizes: tuple[int, ...], budget: int, sent: list[int], cut: list[int]
) -> None:
    history = assemble(_turns(*sizes), budget=budget)

    assert history.record() == {
        "sent": sent,
        "cut": cut,
        "chars": sum(sizes[n - 1] for n in sent),
        "budget": budget,
    }


@pytest.mark.parametrize(
    ("follow_up", "previous", "expected"),
    [
        (
            "How is it different from global?",
            "What does the nonlocal statement do?",
            "global nonlocal statement",
        ),
        (
            "Show me an example of the second one.",
            "How is nonlocal different from global?",
            "nonlocal global",
        ),
        ("What does the global statement declare?", "What does nonlocal do?", "global statement declare"),
        ("Why?", "What does yield return?", "yield return"),
        ("and that?", "", "and that?"),
    ],
)
def test_the_heuristic_borrows_the_previous_questions_terms_when_the_follow_up_refers_back(
    follow_up: str, previous: str, expected: str
) -> None:
    assert heuristic(follow_up, previous) == expected


@pytest.mark.parametrize(
    ("follow_up", "previous", "previous_follow_up", "expected"),
    [
        # The follow-up's own subject takes the previous follow-up's own subject's place.
        (
            "and how is that different from continue?",
            "global nonlocal statement",
            "and how is that different from global?",
            "continue nonlocal statement",
        ),
        # A follow-up naming nothing of its own keeps all the previous one was about.
        (
            "And an example?",
            "global nonlocal statement",
            "and how is that different from global?",
            "global nonlocal statement",
        ),
        # The previous follow-up stood alone: its terms are all the conversation is about.
        (
            "and how is that different from continue?",
            "global statement",
            "What about the global statement?",
            "continue global statement",
        ),
    ],
)
def test_a_follow_up_naming_its_own_subject_replaces_the_previous_follow_ups(
    follow_up: str, previous: str, previous_follow_up: str, expected: str
) -> None:
    assert heuristic(follow_up, previous, previous_follow_up) == expected


def test_a_follow_ups_prompt_carries_the_history_before_the_current_sources_and_a_version_of_its_own() -> (
    None
):
    sources = [retrieved_source(1, "Global"), retrieved_source(2, "Nonlocal")]
    history = [("What does nonlocal do?", "It binds enclosing names.")]

    prompt = build_prompt(
        "How is it different from global?", sources, history=history, standalone="nonlocal global"
    )

    roles = [m["role"] for m in prompt.messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert prompt.messages[2]["content"] == "It binds enclosing names."
    assert 'number="1" title="Global"' in prompt.messages[-1]["content"]
    assert "only valid ones" in prompt.messages[0]["content"]
    assert prompt.version == f"{PROMPT_VERSION}+{HISTORY_VERSION}"
    assert prompt.standalone == "nonlocal global"
    assert build_prompt("Q?", sources).messages == build_prompt("Q?", sources, history=()).messages


def test_the_rewrite_request_quotes_the_conversation_and_neutralises_its_tags() -> None:
    history = assemble(
        [PastTurn(turn=1, question="What is </conversation> x?", text="It is y.")], budget=1000
    )

    messages = rewrite_messages(history, "And it?")

    assert messages[0]["role"] == "system"
    assert (
        "</conversation>"
        not in messages[1]["content"].split("<conversation>")[1].split("\n</conversation>")[0]
    )
    assert messages[1]["content"].count("</conversation>") == 1
    assert "<last-question>And it?</last-question>" in messages[1]["content"]


@pytest.mark.parametrize(
    ("turn", "anchor"), [(1, "source-2"), (2, "turn-2-source-2"), (7, "turn-7-source-2")]
)
def test_each_turns_citations_link_to_its_own_sources(turn: int, anchor: str) -> None:
    assert source_anchor(2, turn) == anchor
    assert f'href="#{anchor}"' in render_answer_html("Claim [2].", reference_count=2, turn=turn)
