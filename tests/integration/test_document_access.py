"""Document access in the main app: set by ingest, feeds and the documents API, shown in admin, and
enforced by retrieval for each asker (the lexical search, the dense one, and the candidate limit)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.db import connection
from django.urls import reverse
from rest_framework.test import APIClient

from answers.content.storage import document_upsert
from answers.models import Document
from answers.retrieval.access import ANONYMOUS, Reader, reader_for
from answers.retrieval.pipeline import retrieve
from tests.fixtures.api import document_writer
from tests.fixtures.pgvector import has_pgvector

pytestmark = pytest.mark.django_db

MEMBER = Reader(signed_in=True, groups=frozenset({"Members"}))
STAFF = Reader(signed_in=True, staff=True)


def test_ingest_access_applies_to_files_and_a_records_own_access_wins(tmp_path: Path):
    (tmp_path / "notes.md").write_text("# Staff notes\n\nThe vault code changes monthly.\n")
    (tmp_path / "feed.jsonl").write_text(
        json.dumps({"id": "open", "title": "Open", "body": "Open text.", "access": "public"})
        + "\n"
        + json.dumps({"id": "club", "title": "Club", "body": "Club text.", "access": ["Members", "Editors"]})
        + "\n"
        + json.dumps({"id": "plain", "title": "Plain", "body": "Plain text."})
        + "\n"
    )
    call_command("ingest", str(tmp_path), "--access", "staff", stdout=StringIO(), stderr=StringIO())

    access = {d.title: (d.access, d.access_groups) for d in Document.objects.all()}
    assert access == {
        "Staff notes": ("staff", []),
        "Open": ("public", []),
        "Club": ("groups", ["Editors", "Members"]),
        "Plain": ("staff", []),
    }


def test_ingest_without_access_stores_public_and_a_bad_access_is_refused(tmp_path: Path):
    (tmp_path / "a.md").write_text("# A\n\nText.\n")
    (tmp_path / "feed.jsonl").write_text(
        json.dumps({"id": "bad", "title": "Bad", "body": "x", "access": 3}) + "\n"
    )
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("ingest", str(tmp_path), stdout=StringIO(), stderr=err)
    assert Document.objects.get(title="A").access == "public"
    assert "feed.jsonl:1: access: must be" in err.getvalue()
    assert not Document.objects.filter(key="bad").exists()
    with pytest.raises(CommandError, match="--access group names must be non-empty"):
        call_command("ingest", str(tmp_path), "--access", ",", stdout=StringIO(), stderr=StringIO())


def test_the_documents_api_takes_and_returns_access():
    writer = document_writer()
    base = {"key": "k", "title": "T", "body": "Body text."}

    created = writer.post("/api/documents/", {**base, "access": ["Members"]}, format="json")
    assert created.status_code == 201
    assert created.json()["access"] == ["Members"]
    updated = writer.post("/api/documents/", {**base, "access": "signed-in"}, format="json").json()
    assert (updated["changed"], updated["access"]) == (True, "signed-in")
    default = writer.post("/api/documents/", {**base, "key": "k2"}, format="json").json()
    assert default["access"] == "public"
    bad = writer.post("/api/documents/", {**base, "access": "everyone"}, format="json")
    assert bad.status_code == 400
    assert "access" in bad.json()
    assert writer.get(f"/api/documents/{created.json()['id']}/").json()["access"] == "signed-in"


def test_admin_shows_and_filters_access(admin_client):
    document_upsert(key="a", url="", title="Open notes", body="Text.")
    document_upsert(key="b", url="", title="Club notes", body="Text.", access=["Members"])
    listing = admin_client.get(reverse("admin:answers_document_changelist"), {"access__exact": "groups"})
    page = listing.content.decode()
    assert "Club notes" in page
    assert "groups: Members" in page
    assert "Open notes" not in page


def _titles(question: str, reader: Reader, **kwargs) -> list[str]:
    return [
        s.title for s in retrieve(question, min_score=0.0, max_sources=10, reader=reader, **kwargs).sources
    ]


def test_retrieval_returns_only_what_the_reader_may_read_and_counts_the_rest():
    document_upsert(key="p", url="", title="Walrus facts", body="Walruses haul out on ice floes.")
    document_upsert(
        key="s", title="Walrus survey plan", body="Walruses are counted from the air.", access="staff"
    )
    document_upsert(
        key="m", title="Walrus club notes", body="Walruses sleep in the water.", access=["Members"]
    )
    document_upsert(key="u", url="", title="Walrus diary", body="Walruses snore loudly.", access="signed-in")

    assert _titles("walruses", ANONYMOUS) == ["Walrus facts"]
    assert sorted(_titles("walruses", MEMBER)) == ["Walrus club notes", "Walrus diary", "Walrus facts"]
    assert len(_titles("walruses", STAFF)) == 4
    trace = retrieve("walruses", min_score=0.0, max_sources=10, reader=ANONYMOUS).trace
    assert trace["withheld"] == 3
    assert not {k["title"] for k in trace["kept"]} & {
        "Walrus survey plan",
        "Walrus club notes",
        "Walrus diary",
    }
    assert "Walrus survey plan" not in json.dumps(trace)


def test_candidates_past_a_full_page_of_withheld_ones_are_still_found():
    # More closed matches than the engine's candidate limit, all ranked above the one open match.
    for i in range(6):
        document_upsert(
            key=f"c{i}", title=f"Lighthouse keeper log {i}", body="Lighthouse lighthouse.", access="staff"
        )
    document_upsert(
        key="open", url="", title="Harbour guide", body="A lighthouse stands at the harbour mouth."
    )

    found = retrieve("lighthouse", min_score=0.0, max_sources=3, reader=ANONYMOUS, candidate_limit=4)

    assert [s.title for s in found.sources] == ["Harbour guide"]
    assert found.trace["withheld"] >= 4


def test_dense_candidates_are_filtered_too(embeddings_on):
    if connection.vendor == "postgresql" and not has_pgvector():
        pytest.skip("this PostgreSQL has no pgvector (the dense search's filter is the same on both)")
    document_upsert(key="open", url="", title="Leaving a loop", body="Use break to leave a loop early.")
    document_upsert(
        key="closed", title="Loop exit internals", body="Quit the repetition at once.", access="staff"
    )
    call_command("embed", stdout=StringIO(), stderr=StringIO())

    anonymous = retrieve(
        "How do I quit a repetition prematurely?", min_score=0.0, max_sources=5, reader=ANONYMOUS
    )
    staff = retrieve("How do I quit a repetition prematurely?", min_score=0.0, max_sources=5, reader=STAFF)

    assert anonymous.trace["dense"]["status"] == "used"
    assert "Loop exit internals" not in [s.title for s in anonymous.sources]
    assert "Loop exit internals" in [s.title for s in staff.sources]
    assert anonymous.trace["withheld"] >= 1


def test_a_reader_is_made_from_the_user():
    member = User.objects.create_user("m")
    member.groups.add(Group.objects.create(name="Members"))
    inactive = User.objects.create_user("gone", is_active=False, is_staff=True)

    assert reader_for(member) == MEMBER
    assert reader_for(User.objects.create_user("s", is_staff=True)) == STAFF
    assert reader_for(inactive) == ANONYMOUS
    assert reader_for(None) == ANONYMOUS


def test_the_first_screen_counts_and_offers_public_documents_only(client):
    document_upsert(key="open", title="Lighthouse keeping", body="Lighthouse keeping means tending the lamp.")
    document_upsert(key="closed", title="Vault codes", body="The vault codes change monthly.", access="staff")

    page = client.get("/").content.decode()

    assert 'data-document-count="1"' in page
    assert "What should I know about lighthouse keeping?" in page
    assert "vault" not in page.lower()


def test_the_admin_answer_page_shows_how_many_candidates_were_withheld(admin_client):
    reviewer = User.objects.get(username="admin")
    reviewer.groups.add(Group.objects.get(name="QA reviewers"))
    document_upsert(key="open", title="Walrus facts", body="Walruses haul out on ice floes.")
    document_upsert(
        key="closed", title="Walrus survey", body="Walruses are counted from the air.", access="staff"
    )
    answer_id = (
        APIClient()
        .post("/api/answers/", {"question": "walruses", "stream": False}, format="json")
        .json()["id"]
    )

    page = admin_client.get(reverse("admin:answers_answer_change", args=[answer_id])).content.decode()

    assert "withheld from the asker (access) 1" in page


def test_the_documents_api_drops_nul_characters_as_ingest_does():
    writer = document_writer()
    response = writer.post(
        "/api/documents/",
        {"key": "k\x00", "title": "T\x00", "url": "/a\x00", "body": "B\x00ody."},
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert (response.json()["key"], response.json()["url"], response.json()["body"]) == ("k", "/a", "Body.")
