"""Which item an answer makes (pure; docs/evaluation.md, "Building a set").

The answer's latest review decides (reviews are never edited: a correction is a new review):

- expected documents: its final sources not flagged `does_not_support` or `irrelevant`, plus every
  retrieved source flagged `should_be_cited`;
- an expected decline: it was declined and the review's verdict is `ok`;
- the question: a follow-up's standalone question, else its question.

An unreviewed answer (added by hand) expects its final sources, or a decline when it declined. An
answer that would expect neither a document nor a decline makes no item.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from answers.evaluation.jsonl import ItemSpec

# A reviewer's flags that take a final source out of the expected documents (SourceFlag values).
NOT_EXPECTED_FLAGS = frozenset({"does_not_support", "irrelevant"})
SHOULD_BE_CITED = "should_be_cited"
OK_VERDICT = "ok"


@dataclass(frozen=True)
class ReviewedSource:
    """One retrieved source of the answer: its document key, whether it is in the final list, and the
    flags of the answer's latest review on it."""

    key: str
    final: bool
    flags: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ReviewedAnswer:
    """An answer as the rules read it; `verdict` is its latest review's, None when unreviewed."""

    answer_id: uuid.UUID
    question: str
    standalone_question: str
    declined: bool
    verdict: str | None
    sources: Sequence[ReviewedSource]  # in retrieval order


def item_from_answer(answer: ReviewedAnswer) -> ItemSpec | None:
    """The item `answer` makes, or None when it would expect no document and no decline."""
    if answer.verdict is None:
        expected = [s.key for s in answer.sources if s.final]
        expect_decline = answer.declined
    else:
        expected = [s.key for s in answer.sources if s.final and not s.flags & NOT_EXPECTED_FLAGS]
        expected += [s.key for s in answer.sources if SHOULD_BE_CITED in s.flags]
        expect_decline = answer.declined and answer.verdict == OK_VERDICT
    documents = tuple(dict.fromkeys(key for key in expected if key))
    if not documents and not expect_decline:
        return None
    how = "unreviewed" if answer.verdict is None else f"latest review: {answer.verdict}"
    return ItemSpec(
        question=answer.standalone_question or answer.question,
        expected_documents=documents,
        expect_decline=expect_decline,
        notes=f"From answer {answer.answer_id} ({how}).",
        from_answer_id=answer.answer_id,
    )
