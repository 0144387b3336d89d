"""A question's terms weigh by their rarity among the chunks the asker may read (issue 44, item 5;
answers/retrieval/rarity.py): a word only closed documents hold is, to those who may not read
them, a word no document holds, at the default threshold, through the API as in retrieve().
The table is kept per access level and follows ingests, access changes and deletions."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from answers.conf import DECLINE_TEXT, conf
from answers.content.storage import document_delete, document_upsert
from answers.models import Document
from answers.retrieval import backends
from answers.retrieval.access import ANONYMOUS, Reader
from answers.retrieval.pipeline import retrieve
from answers.retrieval.types import Retrieval

pytestmark = pytest.mark.django_db

STAFF = Reader(signed_in=True, staff=True)
SIGNED_IN = Reader(signed_in=True)
PAYROLL_TEAM = Reader(signed_in=True, groups=frozenset({"Payroll team"}))
# "zorblax" is only in the closed document; "quibbleflux" in none.
CLOSED_WORD = "What is zorblax payroll?"
UNKNOWN_WORD = "What is quibbleflux payroll?"


@pytest.fixture
def payroll(demo_corpus: list[Document], settings: Any) -> None:
    """The demo corpus, a public page on payroll, and a closed one naming its zorblax bonus."""
    settings.ANSWERS_PROVIDER = "extractive"
    settings.ANSWERS_EMBEDDINGS = "none"
    document_upsert(
        key="payroll",
        url="",
        title="Payroll calendar",
        body="Payroll is run on the last Friday of each month.",
    )
    _close_the_bonus("staff")


def _close_the_bonus(access: object) -> None:
    document_upsert(
        key="bonus",
        url="",
        title="Zorblax bonus",
        body="The zorblax payroll bonus is paid in March.",
        access=access,
    )


def _ask(question: str, reader: Reader) -> Retrieval:
    return retrieve(question, min_score=conf.MIN_SCORE, max_sources=conf.MAX_SOURCES, reader=reader)


def _weight(question: str, reader: Reader, term: str) -> float:
    return float(_ask(question, reader).trace["term_weights"][term])


def test_a_word_only_closed_documents_hold_is_declined_as_a_word_no_document_holds(payroll: None) -> None:
    closed, unknown = _ask(CLOSED_WORD, ANONYMOUS), _ask(UNKNOWN_WORD, ANONYMOUS)

    assert closed.sources == unknown.sources == []
    assert closed.trace["term_weights"]["zorblax"] == unknown.trace["term_weights"]["quibbleflux"]
    assert closed.trace["term_weights"]["zorblax"] > 7  # rarity(0, N): the most a term weighs
    for trace in (closed.trace, unknown.trace):
        assert [entry["title"] for entry in trace["cut_by_threshold"]][:1] == ["Payroll calendar"]
    assert closed.trace["cut_by_threshold"][0]["score"] == unknown.trace["cut_by_threshold"][0]["score"]


def test_staff_get_the_closed_document_first_and_the_word_weighs_as_a_word_the_corpus_uses(
    payroll: None,
) -> None:
    found = _ask(CLOSED_WORD, STAFF)

    assert [s.title for s in found.sources] == ["Zorblax bonus", "Payroll calendar"]
    assert found.trace["term_weights"]["zorblax"] == 2.0  # query.RARITY_CAP


def test_through_the_api_the_anonymous_asker_is_declined_and_staff_are_answered(payroll: None) -> None:
    anonymous = APIClient()
    staff = APIClient()
    staff.force_login(User.objects.create_user("pay-admin", is_staff=True))
    body = {"question": CLOSED_WORD, "stream": False}

    declined = anonymous.post("/api/answers/", body, format="json").json()
    unknown = anonymous.post("/api/answers/", {**body, "question": UNKNOWN_WORD}, format="json").json()
    answered = staff.post("/api/answers/", body, format="json").json()

    for reply in (declined, unknown):
        assert (reply["declined"], reply["references"], reply["text"]) == (True, [], DECLINE_TEXT)
    assert answered["declined"] is False
    assert answered["references"][0]["title"] == "Zorblax bonus"


def test_each_access_level_weighs_by_what_it_may_read(payroll: None) -> None:
    _close_the_bonus(["Payroll team"])
    member = User.objects.create_user("payroll-member")
    member.groups.add(Group.objects.create(name="Payroll team"))
    client = APIClient()
    client.force_login(member)

    # In turns: each level's table is its own, whichever asked first.
    assert _weight(CLOSED_WORD, ANONYMOUS, "zorblax") > 7
    assert [s.title for s in _ask(CLOSED_WORD, PAYROLL_TEAM).sources][:1] == ["Zorblax bonus"]
    assert _weight(CLOSED_WORD, PAYROLL_TEAM, "zorblax") == 2.0
    assert _ask(CLOSED_WORD, SIGNED_IN).sources == []
    assert _weight(CLOSED_WORD, SIGNED_IN, "zorblax") > 7
    assert _ask(CLOSED_WORD, ANONYMOUS).sources == []
    reply = client.post("/api/answers/", {"question": CLOSED_WORD, "stream": False}, format="json").json()
    assert reply["references"][0]["title"] == "Zorblax bonus"


def test_the_table_follows_access_changes_ingests_and_deletions(payroll: None) -> None:
    assert _ask(CLOSED_WORD, ANONYMOUS).sources == []

    _close_the_bonus("public")  # re-ingested open
    assert [s.title for s in _ask(CLOSED_WORD, ANONYMOUS).sources][:1] == ["Zorblax bonus"]
    assert _weight(CLOSED_WORD, ANONYMOUS, "zorblax") == 2.0

    _close_the_bonus("signed-in")  # and closed again
    assert _ask(CLOSED_WORD, ANONYMOUS).sources == []
    assert _weight(CLOSED_WORD, ANONYMOUS, "zorblax") > 7

    # A new public page holding the word: the word is one the asker's corpus uses.
    document_upsert(key="glossary", url="", title="Glossary", body="Zorblax: an old payroll code.")
    assert _weight(CLOSED_WORD, ANONYMOUS, "zorblax") == 2.0

    document_delete(document=Document.objects.get(key="glossary"))
    assert _weight(CLOSED_WORD, ANONYMOUS, "zorblax") > 7


def _counting_statements(question: str, reader: Reader) -> list[str]:
    """The statements counting among closed documents that one retrieval ran (answers.retrieval.rarity)."""
    marker = "json_each" if connection.vendor == "sqlite" else "document_id = any("
    with CaptureQueriesContext(connection) as queries:
        _ask(question, reader)
    return [q["sql"] for q in queries.captured_queries if marker in q["sql"].lower()]


def test_counts_are_kept_per_level_until_the_corpus_changes(payroll: None) -> None:
    assert _counting_statements(CLOSED_WORD, ANONYMOUS)
    assert _counting_statements(CLOSED_WORD, ANONYMOUS) == []  # the same level, the same corpus
    assert _counting_statements(CLOSED_WORD, SIGNED_IN)  # another level counts for itself
    assert _counting_statements(CLOSED_WORD, STAFF) == []  # staff read everything: nothing to count

    document_upsert(key="memo", url="", title="Memo", body="Payroll memo.")
    assert _counting_statements(CLOSED_WORD, ANONYMOUS)


def test_a_common_word_most_of_whose_chunks_are_closed_is_counted_among_the_readable_ones(
    payroll: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Counts stop being exact at the engines' cap (common_term_docs): made small here, so that a word
    # the engine counts "at least 3" times, all but one of them closed, is counted for the asker.
    monkeypatch.setattr(backends.SqliteFts5Backend, "common_term_docs", 3)
    monkeypatch.setattr(backends.PostgresFullTextBackend, "common_term_docs", 3)
    for i in range(4):
        document_upsert(
            key=f"ledger{i}", url="", title=f"Ledger {i}", body="Frobnitz ledger.", access="staff"
        )
    assert _weight("Tell me about frobnitz.", ANONYMOUS, "frobnitz") > 7

    document_upsert(key="open-ledger", url="", title="Open ledger", body="The frobnitz ledger, in short.")
    found = _ask("Tell me about frobnitz.", ANONYMOUS)

    assert found.trace["term_weights"]["frobnitz"] == 2.0
    assert [s.title for s in found.sources] == ["Open ledger"]
