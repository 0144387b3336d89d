"""Migration 0012: existing sources get the stored `renumbered` from their numbers (the rule of
answers.citations.trail.source_renumbered), so the admin reads the same before and after."""

from __future__ import annotations

import pytest

from answers.models import AnswerSource
from tests.fixtures.migrations import Migrate

BEFORE = [("answers", "0017_conversations")]
AFTER = [("answers", "0018_rules_version")]


@pytest.mark.django_db(transaction=True)
def test_existing_sources_are_filled_from_their_numbers(answer_factory, migrate: Migrate):
    renumbered = answer_factory(text="A [3] then [1] and [9].", source_count=4)
    kept = answer_factory(text="A [1] then [2].", source_count=2)
    migrate(BEFORE)  # the column goes: rows as they were stored before it
    migrate(AFTER)

    def stored(answer):
        rows = AnswerSource.objects.filter(answer=answer).order_by("original_number")
        return [(s.original_number, s.final_number, s.renumbered) for s in rows]

    assert stored(renumbered) == [(1, 2, True), (2, None, False), (3, 1, True), (4, None, False)]
    assert stored(kept) == [(1, 1, False), (2, 2, False)]
