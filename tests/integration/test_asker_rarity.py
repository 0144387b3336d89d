"""A question's terms weigh by their rarity among the chunks the asker may read (issue 44, item 5;
answers/retrieval/rarity.py): a word only closed documents hold is, to those who may not read
them, a word no document holds, at the default threshold, through the API as in retrieve().
The table is kept per access level and follows ingests, access changes and deletions."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from answers.conf import DECLINE_TEXT, conf
from answers.content.storage import document_delete, document_upsert
from answers.models import Document
from answers.retrieval import backends, rarity
from answers.retrieval.access import ANONYMOUS, Reader
from answers.retrieval.pipeline import retrieve
from answers.retrieval.query import capped_rarity
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


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The terms counted among (or outside) closed chunks, as each engine counts them."""
    terms: list[str] = []
    for engine in (rarity._Sqlite, rarity._Postgres):

        def spy(self: Any, asked: list[str], *args: Any, _counts: Any = engine.counts) -> dict[str, int]:
            terms.extend(asked)
            return dict(_counts(self, asked, *args))

        monkeypatch.setattr(engine, "counts", spy)
    return terms


def _counts_for(counted: list[str], question: str, reader: Reader) -> list[str]:
    counted.clear()
    _ask(question, reader)
    return sorted(counted)


def test_counts_are_kept_per_level_until_what_is_closed_changes(payroll: None, counted: list[str]) -> None:
    # One chunk is closed: "payroll" is held by more chunks than that, "zorblax" is looked for (and
    # on PostgreSQL "is", whose count there is an estimate).
    first = _counts_for(counted, CLOSED_WORD, ANONYMOUS)
    assert "zorblax" in first
    assert "payroll" not in first
    assert _counts_for(counted, CLOSED_WORD, ANONYMOUS) == []  # the same level, nothing changed
    assert _counts_for(counted, CLOSED_WORD, SIGNED_IN) == first  # another level: its own
    assert _counts_for(counted, CLOSED_WORD, STAFF) == []  # staff read everything: nothing to count

    document_upsert(key="memo", url="", title="Memo", body="Payroll memo.")  # an ingest
    assert _counts_for(counted, CLOSED_WORD, ANONYMOUS) == first
    assert _counts_for(counted, CLOSED_WORD, ANONYMOUS) == []
    memo = Document.objects.get(key="memo")
    memo.access = Document.Access.SIGNED_IN
    memo.save()  # an access change, as admin saves it
    assert _counts_for(counted, CLOSED_WORD, ANONYMOUS) == first
    assert _counts_for(counted, CLOSED_WORD, ANONYMOUS) == []
    document_delete(document=memo)
    assert _counts_for(counted, CLOSED_WORD, ANONYMOUS) == first


def test_a_word_common_over_every_chunk_is_counted_among_the_readable_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Ten chunks, six of them closed and saying "frobnitz"; the engines' counts stop at 3 here
    # (common_term_docs), so that over every chunk the word is common and past the count's cap.
    monkeypatch.setattr(backends.SqliteFts5Backend, "common_term_docs", 3)
    monkeypatch.setattr(backends.PostgresFullTextBackend, "common_term_docs", 3)
    for i in range(6):
        document_upsert(
            key=f"ledger{i}", url="", title=f"Ledger {i}", body="Frobnitz ledger.", access="staff"
        )
    for topic in ("Tides", "Harbours", "Lamps"):
        document_upsert(key=topic, url="", title=topic, body=f"{topic} of the coast.")
    document_upsert(key="open-ledger", url="", title="Open ledger", body="The frobnitz ledger, in short.")

    asked = _ask("Tell me about frobnitz.", ANONYMOUS)
    staff = _ask("Tell me about frobnitz.", STAFF)

    # One chunk of the four the asker may read, where staff weigh it as 3 (the cap) of 10.
    assert asked.trace["term_weights"]["frobnitz"] == pytest.approx(capped_rarity(1, 4), abs=1e-4)
    assert staff.trace["term_weights"]["frobnitz"] == pytest.approx(capped_rarity(3, 10), abs=1e-4)
    assert [s.title for s in asked.sources] == ["Open ledger"]

    document_delete(document=Document.objects.get(key="open-ledger"))
    closed = _ask("Tell me about frobnitz.", ANONYMOUS).trace["term_weights"]["frobnitz"]
    assert closed == _ask("Tell me about quibbleflux.", ANONYMOUS).trace["term_weights"]["quibbleflux"]
