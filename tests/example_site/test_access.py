"""Who reads what on the example site: every asker on the JSON path, the SSE path and the page, and a
member's answer whose source later moves out of their reach."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import transaction
from django.test import AsyncClient, Client

from answers.models import Document
from answers.pipeline import lifecycle
from tests.example_site.conftest import Site

HIVE = "How often do beekeeping members inspect the hive?"
COMPOST = "How often should the compost heap be turned?"
PRUNING = "When does orchard pruning happen?"
ASKERS = ("anonymous", "member", "non_member", "staff", "reviewer")
# Which article each asker may be answered from (public: everyone; members: the Members group and
# staff; the draft: staff only). The QA reviewer is not staff: retrieval treats them as any user.
MAY_READ = {
    "anonymous": {"public"},
    "member": {"public", "members"},
    "non_member": {"public"},
    "staff": {"public", "members", "draft"},
    "reviewer": {"public"},
}


def client_as(site: Site, asker: str, client_class: type[Any] = Client) -> Any:
    client = client_class()
    if asker != "anonymous":
        client.force_login(getattr(site, asker))
    return client


def document_ids(site: Site, names: set[str]) -> set[int]:
    keys = {f"articles.article:{getattr(site, name).pk}" for name in names}
    return set(Document.objects.filter(key__in=keys).values_list("pk", flat=True))


def retrieved_ids(body: dict[str, Any]) -> set[int]:
    return {ref["document_id"] for ref in body["references"]}


def everything_said(payload: Any) -> str:
    return json.dumps(payload)


@pytest.mark.django_db
@pytest.mark.parametrize("asker", ASKERS)
@pytest.mark.parametrize("question", [HIVE, COMPOST, PRUNING])
def test_each_asker_on_the_json_path_is_answered_only_from_what_they_may_read(site, asker, question):
    body = (
        client_as(site, asker)
        .post("/api/answers/", {"question": question, "stream": False}, content_type="application/json")
        .json()
    )

    allowed = document_ids(site, MAY_READ[asker])
    assert retrieved_ids(body) <= allowed
    forbidden = {"public", "members", "draft"} - MAY_READ[asker]
    for name in forbidden:
        article = getattr(site, name)
        assert article.title not in everything_said(body)
        assert article.body.split("\n\n")[1][:30] not in body["text"]
    # Each question's own article is there for whoever may read it.
    own = {HIVE: "members", COMPOST: "public", PRUNING: "draft"}[question]
    if own in MAY_READ[asker]:
        assert document_ids(site, {own}) <= retrieved_ids(body)


@pytest.mark.django_db
def test_the_trail_counts_what_was_withheld_and_readers_never_see_the_count(site):
    anonymous = Client()
    body = anonymous.post(
        "/api/answers/", {"question": HIVE, "stream": False}, content_type="application/json"
    ).json()
    assert "withheld" not in body

    trail = client_as(site, "reviewer").get(f"/api/answers/{body['id']}/trail/").json()
    assert trail["withheld"] >= 1
    staff_asks = client_as(site, "staff").post(
        "/api/answers/", {"question": HIVE, "stream": False}, content_type="application/json"
    )
    staff_trail = client_as(site, "reviewer").get(f"/api/answers/{staff_asks.json()['id']}/trail/")
    assert staff_trail.status_code == 200
    assert staff_trail.json()["withheld"] == 0


async def read_events(client: AsyncClient, url: str) -> list[tuple[str, Any]]:
    """The stream's events up to `done` (or `error`), as (type, payload) pairs."""
    response = await client.get(url)
    assert response.status_code == 200
    text, events = "", []
    async for chunk in response.streaming_content:
        text += chunk.decode() if isinstance(chunk, bytes) else chunk
        finished = "\nevent: done\n" in text or "\nevent: error\n" in text
        # Only whole events: the last one ends with a blank line.
        if finished and text.endswith("\n\n"):
            break
    for block in text.split("\n\n"):
        lines = dict(
            line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":")
        )
        if lines.get("event") in {"references", "cite", "done", "error"}:
            events.append((lines["event"], json.loads(lines.get("data", "null"))))
    return events


async def ask_streamed(client: AsyncClient, question: str) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    accepted = await client.post(
        "/api/answers/", {"question": question, "stream": True}, content_type="application/json"
    )
    assert accepted.status_code == 202, accepted.content
    body = accepted.json()
    await lifecycle.wait_for_background()
    return body, await read_events(client, body["events_url"])


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("asker", ASKERS)
async def test_each_asker_on_the_sse_path_is_streamed_only_what_they_may_read(site, asker):
    client = await sync_to_async(client_as)(site, asker, AsyncClient)
    allowed = await sync_to_async(document_ids)(site, MAY_READ[asker])

    for question in (HIVE, PRUNING):
        _, events = await ask_streamed(client, question)
        references = next(payload for kind, payload in events if kind == "references")["references"]
        done = next(payload for kind, payload in events if kind == "done")
        assert {ref["document_id"] for ref in references} <= allowed
        assert retrieved_ids(done) <= allowed
        for name in {"members", "draft"} - MAY_READ[asker]:
            assert getattr(site, name).title not in everything_said(events)


@pytest.mark.django_db
@pytest.mark.parametrize("asker", ASKERS)
def test_each_asker_on_the_page_sees_only_what_they_may_read(site, asker):
    client = client_as(site, asker)
    asked = client.post("/ask/", {"question": HIVE})
    assert asked.status_code == 303
    page = client.get(asked["Location"]).content.decode()

    assert site.public.title not in page or "public" in MAY_READ[asker]
    if "members" in MAY_READ[asker]:
        assert site.members.title in page
    else:
        assert site.members.title not in page
        assert "nine days" not in page


def _move_to_staff_only(site: Site) -> None:
    site.members.published, site.members.staff_draft = False, True
    with transaction.atomic():  # a real commit: the re-index runs on it
        site.members.save()


@pytest.mark.django_db(transaction=True)
async def test_a_members_answer_is_redacted_everywhere_once_its_source_moves_to_staff_only(site):
    member = await sync_to_async(client_as)(site, "member", AsyncClient)
    members_doc = (await sync_to_async(document_ids)(site, {"members"})).pop()

    # Asked on both paths: the member is answered from the members-only article.
    answer = (
        await member.post(
            "/api/answers/", {"question": HIVE, "stream": False}, content_type="application/json"
        )
    ).json()
    streamed, live_events = await ask_streamed(member, HIVE)
    cited = [ref for ref in answer["references"] if ref.get("document_id") == members_doc]
    assert cited
    assert cited[0]["title"] == site.members.title
    assert site.members.title in everything_said(live_events)

    await sync_to_async(_move_to_staff_only)(site)

    for answer_id in (answer["id"], streamed["id"]):
        # The API: the source is its number only.
        again = (await member.get(f"/api/answers/{answer_id}/")).json()
        withheld = [ref for ref in again["references"] if ref.get("withheld")]
        assert withheld
        assert all(set(ref) == {"number", "withheld"} for ref in withheld)
        assert site.members.title not in everything_said(again)
        assert "nine days" not in everything_said(again["references"])
        # The events replay (stored events for the streamed one, the record for the JSON one).
        events = await read_events(member, f"/answers/{answer_id}/events/?lastEventId=answer-{answer_id}:0")
        assert {kind for kind, _ in events} >= {"references", "done"}
        assert site.members.title not in everything_said(events)
        assert any(ref.get("withheld") for _, p in events if p.get("references") for ref in p["references"])
        # The permalink page.
        page = (await member.get(f"/answers/{answer_id}/")).content.decode()
        assert site.members.title not in page
        assert "data-withheld" in page
        # Staff still see it whole.
        staff = await sync_to_async(client_as)(site, "staff", AsyncClient)
        whole = (await staff.get(f"/api/answers/{answer_id}/")).json()
        assert site.members.title in everything_said(whole["references"])

    # Asked again, the member is no longer answered from it at all.
    fresh = (
        await member.post(
            "/api/answers/", {"question": HIVE, "stream": False}, content_type="application/json"
        )
    ).json()
    assert members_doc not in retrieved_ids(fresh)
    assert site.members.title not in everything_said(fresh)


@pytest.mark.django_db
def test_a_deleted_source_is_withheld_from_readers_and_whole_for_qa(site, django_capture_on_commit_callbacks):
    anonymous = Client()
    body = anonymous.post(
        "/api/answers/", {"question": COMPOST, "stream": False}, content_type="application/json"
    ).json()
    assert site.public.title in everything_said(body["references"])
    with django_capture_on_commit_callbacks(execute=True):
        site.public.delete()

    again = anonymous.get(f"/api/answers/{body['id']}/").json()
    assert again["references"]
    assert all(ref.get("withheld") for ref in again["references"])
    trail = client_as(site, "reviewer").get(f"/api/answers/{body['id']}/trail/").json()
    assert site.public.title in {source["title"] for source in trail["sources"]}
    reviewer_view = client_as(site, "reviewer").get(f"/api/answers/{body['id']}/").json()
    assert site.public.title in everything_said(reviewer_view["references"])
