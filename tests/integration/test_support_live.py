"""The support record on a real daphne server, both delivery paths: computed after `done`, off the request.

The openai provider streams scripted replies from the stub server; the reply is
written from the sources the prompt lists (retrieval decides their numbers).
The test polls the trail until `support` is stored (it is null until then) and
reads the admin page as a QA reviewer would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import schemathesis

from tests.fixtures.live_server import LiveServer, SeedDocument, manage
from tests.fixtures.providers import Reply
from tests.fixtures.support_texts import LIGHTHOUSE, TEACUPS, VOLCANO
from tests.fixtures.waiting import wait_until

DOCUMENTS = [
    SeedDocument(key="https://example.org/teacups", title="Walrus teacups", url="", body=TEACUPS),
    SeedDocument(key="https://example.org/lighthouse", title="Lighthouse optics", url="", body=LIGHTHOUSE),
    SeedDocument(key="https://example.org/volcano", title="Volcanic soil", url="", body=VOLCANO),
]
QUESTION = "What about walrus teacups, the lighthouse lens and volcanic soil?"
WAIT_S = 60.0  # generous: a loaded machine

# A session for the seeded staff user, made a superuser (the admin needs the trail permissions).
_ADMIN_SESSION = r"""
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
user = get_user_model().objects.get(username="staff")
user.is_superuser = True
user.save()
store = SessionStore()
store[SESSION_KEY] = str(user.pk)
store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
store[HASH_SESSION_KEY] = user.get_session_auth_hash()
store.create()
print("SESSION=" + store.session_key)
"""


@dataclass(frozen=True)
class World:
    live: LiveServer
    session: str

    def client(self) -> httpx.Client:
        """The API, with the staff user's token (a session would need a CSRF token to POST)."""
        return httpx.Client(base_url=self.live.url, headers=self.live.auth("staff"), timeout=20)

    def admin(self, path: str, **params: str) -> str:
        """An admin page, signed in as the staff user (session)."""
        with httpx.Client(base_url=self.live.url, cookies={"sessionid": self.session}, timeout=20) as client:
            response = client.get(path, params=params)
        assert response.status_code == 200, response.text[:500]
        return response.text


@pytest.fixture(scope="module")
def live_documents() -> list[SeedDocument]:
    return DOCUMENTS


@pytest.fixture(scope="module")
def world(stub_served: LiveServer) -> World:
    out = manage(["shell", "-c", _ADMIN_SESSION], stub_served.env)
    session = next(ln for ln in out.splitlines() if ln.startswith("SESSION=")).removeprefix("SESSION=")
    return World(live=stub_served, session=session)


def reply_citing(write: Callable[[dict[str, int]], str]) -> Callable[[dict[str, Any]], Reply]:
    """A stub reply written from the prompt: `write` gets each source's number by title."""

    def reply(body: dict[str, Any]) -> Reply:
        prompt = "\n".join(str(m["content"]) for m in body["messages"])
        numbers = {
            title: int(n) for n, title in re.findall(r'<source number="(\d+)" title="([^"]*)">', prompt)
        }
        assert set(numbers) == {d.title for d in DOCUMENTS}, numbers  # all three retrieved
        text = write(numbers)
        return Reply(pieces=[text[:20], text[20:]])

    return reply


def wait_for_support(client: httpx.Client, answer_id: str) -> dict[str, Any]:
    """The trail once its support record is stored (polled: it is computed after `done`)."""

    def stored() -> dict[str, Any] | None:
        trail: dict[str, Any] = client.get(f"/api/answers/{answer_id}/trail/").json()
        assert trail["status"] in ("streaming", "done"), trail
        return trail if trail["support"] is not None else None

    return wait_until(stored, within=WAIT_S, what=f"the support record of {answer_id}")


def original(trail: dict[str, Any], title: str) -> dict[str, Any]:
    return next(s for s in trail["sources"] if s["title"] == title)


def test_json_path_a_sentence_marked_with_a_source_on_another_topic_is_unsupported(world, stub):
    stub.reset()
    stub.enqueue(
        reply_citing(
            lambda n: (
                "Walrus teacups are carved from driftwood by coastal carpenters "
                f"[{n['Walrus teacups']}]. Each teacup holds exactly one hundred millilitres of kelp tea "
                f"[{n['Lighthouse optics']}]."
            )
        )
    )
    with world.client() as client:
        response = client.post("/api/answers/", json={"question": QUESTION, "stream": False})
        assert response.status_code == 201, response.text
        answer = response.json()
        assert answer["status"] == "done"

        trail = wait_for_support(client, answer["id"])
        support = trail["support"]
        teacups, lighthouse = original(trail, "Walrus teacups"), original(trail, "Lighthouse optics")
        assert [(s["verdict"], s["cited"]) for s in support["sentences"]] == [
            ("supported", [teacups["final_number"]]),
            ("unsupported", [lighthouse["final_number"]]),
        ]
        assert support["sentences"][1]["scores"][str(lighthouse["final_number"])] < support["min_score"]
        assert support["sentences"][1]["text"] in answer["text"]

        html = world.admin(f"/admin/answers/answer/{answer['id']}/change/")
        assert 'data-sentence="2" data-verdict="unsupported"' in html
        assert "qa-support-below" in html


def test_sse_path_a_sentence_copied_from_a_source_never_cited_is_grounded_by_it(world, stub):
    stub.reset()
    stub.enqueue(
        reply_citing(
            lambda n: (
                "Walrus teacups are carved from driftwood by coastal carpenters "
                f"[{n['Walrus teacups']}]. Volcanic soil is rich in potassium and phosphorus."
            )
        )
    )
    with world.client() as client:
        response = client.post("/api/answers/", json={"question": QUESTION, "stream": True})
        assert response.status_code == 202, response.text
        answer_id = response.json()["id"]

        trail = wait_for_support(client, answer_id)
        assert trail["status"] == "done"
        volcano = original(trail, "Volcanic soil")
        assert (volcano["status"], volcano["final_number"]) == ("dropped", None)
        first, second = trail["support"]["sentences"]
        assert first["verdict"] == "supported"
        assert (second["verdict"], second["grounded_by"]) == ("uncited", [volcano["original_number"]])

        html = world.admin(f"/admin/answers/answer/{answer_id}/change/")
        assert '<em>dropped</em><strong class="qa-relied-on">, but sentence 2 relies on it</strong>' in html

        listing = world.admin("/admin/answers/answer/", grounded_uncited="yes")
        assert f"/admin/answers/answer/{answer_id}/change/" in listing


def test_a_reply_copied_from_the_sources_it_cites_is_all_supported_on_both_paths(world, stub):
    def faithful(n: dict[str, int]) -> str:
        return (
            "Fresnel lenses focus the lighthouse beam into a narrow horizontal band "
            f"[{n['Lighthouse optics']}]. "
            f"Each teacup holds exactly one hundred millilitres of kelp tea [{n['Walrus teacups']}]."
        )

    schema = schemathesis.openapi.from_url(f"{world.live.url}/api/schema/", timeout=10)
    stub.reset()
    with world.client() as client:
        for stream in (False, True):
            stub.enqueue(reply_citing(faithful))
            response = client.post("/api/answers/", json={"question": QUESTION, "stream": stream})
            assert response.status_code in (201, 202), response.text
            answer_id = response.json()["id"]
            support = wait_for_support(client, answer_id)["support"]
            # The stored record is what the OpenAPI schema documents.
            trail = client.get(f"/api/answers/{answer_id}/trail/")
            schema["/api/answers/{answer_id}/trail/"]["GET"].validate_response(trail)
            assert [s["verdict"] for s in support["sentences"]] == ["supported", "supported"], json.dumps(
                support
            )
