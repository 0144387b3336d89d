"""A set's items as JSON Lines, one item a line (pure):

    {"question": "...", "expected_documents": ["https://..."], "expect_decline": false, "notes": ""}

Reading checks every line before anything is stored: the first malformed line is refused with its
number (ItemsRefused), and a question twice in one file is malformed too (a question appears once
per set). A line may also be in the relevance-labeled form of bench/relevance_labeled.jsonl,
`{"kind", "question", "documents"}`: its documents are the expected ones, and none expects a decline
(how `make run` loads that file as the set `demo`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

KEYS = ("question", "expected_documents", "expect_decline", "notes")
LABELED_KEYS = frozenset({"kind", "question", "documents"})


@dataclass(frozen=True)
class ItemSpec:
    """One item as a file (or a reviewed answer) gives it, before it is stored."""

    question: str
    expected_documents: tuple[str, ...] = ()
    expect_decline: bool = False
    notes: str = ""
    from_answer_id: Any = None  # the answer it was made from (answers.evaluation.items)

    def record(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "expected_documents": list(self.expected_documents),
            "expect_decline": self.expect_decline,
            "notes": self.notes,
        }


class ItemsRefused(ValueError):
    """A malformed line: nothing of the file is stored."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


def parse_items(lines: Iterable[str]) -> list[ItemSpec]:
    """Every item of a JSON Lines text (blank lines skipped); ItemsRefused at the first bad line."""
    items: list[ItemSpec] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        item = parse_line(line, number)
        if item.question in seen:
            raise ItemsRefused(number, f"the question is already on line {seen[item.question]}")
        seen[item.question] = number
        items.append(item)
    return items


def parse_line(line: str, number: int) -> ItemSpec:
    """One line's item, or ItemsRefused naming `number` and what is wrong with it."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ItemsRefused(number, f"not JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ItemsRefused(number, "not a JSON object")
    if set(value) == LABELED_KEYS:
        value = _from_labeled(value)
    unknown = sorted(set(value) - set(KEYS))
    if unknown:
        raise ItemsRefused(number, f"unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    question = value.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ItemsRefused(number, '"question" must be a non-empty string')
    documents = value.get("expected_documents", [])
    if not isinstance(documents, list) or not all(isinstance(d, str) and d.strip() for d in documents):
        raise ItemsRefused(number, '"expected_documents" must be a list of non-empty strings')
    decline = value.get("expect_decline", False)
    if not isinstance(decline, bool):
        raise ItemsRefused(number, '"expect_decline" must be true or false')
    notes = value.get("notes", "")
    if not isinstance(notes, str):
        raise ItemsRefused(number, '"notes" must be a string')
    return ItemSpec(
        question=question.strip(),
        expected_documents=tuple(dict.fromkeys(d.strip() for d in documents)),
        expect_decline=decline,
        notes=notes,
    )


def _from_labeled(value: dict[str, Any]) -> dict[str, Any]:
    """A relevance-labeled line as an item's keys (its `kind` kept as the notes)."""
    documents = value["documents"]
    return {
        "question": value["question"],
        "expected_documents": documents,
        "expect_decline": documents == [],
        "notes": value["kind"] if isinstance(value["kind"], str) else "",
    }


def dump_items(items: Sequence[ItemSpec]) -> Iterator[str]:
    """Each item as its line (with the newline), in order."""
    for item in items:
        yield json.dumps(item.record(), ensure_ascii=False) + "\n"
