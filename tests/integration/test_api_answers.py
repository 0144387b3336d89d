"""The JSON path end to end: real retrieval, the openai provider against the stub server, the trail."""

from __future__ import annotations

import json
import uuid

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.authtoken.models import Token

from answers.models import Answer
from tests.fixtures.answers import QUESTION
from tests.fixtures.api import ask
from tests.fixtures.providers import Reply

URL = "/api/answers/"


@pytest.mark.django_db
def test_uncited_sources_are_dropped_and_the_rest_renumbered_in_first_citation_order(
    client, corpus, openai_settings, stub_openai
):
    raw = "Carpentry needs teacups [3]. Walruses agree [1][3] and more [9]."
    stub_openai.enqueue(
        Reply(pieces=["Carpentry needs teacups [", "3]. Walruses agree [1", "][3] and more [9]."])
    )

    response = ask(client)

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "done"
    assert body["text"] == "Carpentry needs teacups [1]. Walruses agree [2][1] and more."
    assert body["fallback"] is False
    retrieved = {s.original_number: s for s in Answer.objects.get(id=body["id"]).sources.all()}
    assert len(retrieved) == 4
    assert [r["number"] for r in body["references"]] == [1, 2]
    assert [r["title"] for r in body["references"]] == [retrieved[3].title, retrieved[1].title]

    answer = Answer.objects.get(id=body["id"])
    assert answer.raw_text == raw
    assert answer.final_text == body["text"]
    assert answer.stripped == [9]
    assert answer.provider == "openai"
    assert answer.model == "stub-model"
    assert answer.prompt_version
    assert answer.delivery == "json"
    assert answer.min_score == 0.0
    assert answer.max_sources == 4
    assert answer.retrieval_trace
    assert answer.finished_at is not None
    timings = [answer.retrieval_ms, answer.first_piece_ms, answer.generation_ms, answer.total_ms]
    assert all(t is not None and t >= 0 for t in timings)
    trail = {
        s.original_number: (s.final_number, s.status, s.citation_count, s.first_cited_offset)
        for s in answer.sources.all()
    }
    assert trail == {
        1: (2, "cited", 1, raw.index("[1]")),
        2: (None, "dropped", 0, None),
        3: (1, "cited", 2, raw.index("[3]")),
        4: (None, "dropped", 0, None),
    }
    for source in answer.sources.all():
        assert source.document_id is not None
        assert source.title.startswith("Walrus teacups")
        assert source.excerpt
        assert 0.0 <= source.rerank_score <= 1.0


@pytest.mark.django_db
def test_a_text_without_markers_falls_back_to_every_retrieved_source(
    client, corpus, openai_settings, stub_openai
):
    stub_openai.enqueue(Reply(pieces=["Walruses ", "like carpentry."]))

    body = ask(client).json()

    assert body["text"] == "Walruses like carpentry."
    assert body["fallback"] is True
    assert [r["number"] for r in body["references"]] == [1, 2, 3, 4]
    answer = Answer.objects.get(id=body["id"])
    assert [(s.final_number, s.status) for s in answer.sources.all()] == [
        (1, "fallback"),
        (2, "fallback"),
        (3, "fallback"),
        (4, "fallback"),
    ]


@pytest.mark.django_db
def test_out_of_range_markers_are_stripped_and_recorded(client, corpus, openai_settings, stub_openai):
    stub_openai.enqueue(Reply(pieces=["Zero [0] is no source; see [5, 2]. [7] Also [2-3]."]))

    body = ask(client).json()

    answer = Answer.objects.get(id=body["id"])
    assert answer.stripped == [0, 5, 7]
    assert body["text"] == "Zero is no source; see [1]. Also [1, 2]."
    assert [(s.original_number, s.final_number, s.status) for s in answer.sources.all()] == [
        (1, None, "dropped"),
        (2, 1, "cited"),
        (3, 2, "cited"),
        (4, None, "dropped"),
    ]


@pytest.mark.django_db
def test_raw_text_is_kept_byte_for_byte(client, corpus, openai_settings, stub_openai):
    pieces = ["  Ünïcode “quotes” ", "and\r\nCRLF\t[", "2]  ", "\n\n```\n[9]\n```\n", "trailing   "]
    stub_openai.enqueue(Reply(pieces=pieces))

    body = ask(client).json()

    answer = Answer.objects.get(id=body["id"])
    assert answer.raw_text == "".join(pieces)
    assert answer.stripped == []  # a marker inside a code fence is not a marker
    assert "```\n[9]\n```" in answer.final_text


@pytest.mark.django_db
def test_the_json_response_equals_a_later_get(client, corpus, openai_settings, stub_openai):
    stub_openai.enqueue(Reply(pieces=["Teacups [2] and walruses [4]."]))

    posted = ask(client).json()
    fetched = client.get(f"{URL}{posted['id']}/")

    assert fetched.status_code == 200
    assert fetched.json() == posted


@pytest.mark.django_db
def test_the_prompt_numbers_sources_as_the_references_do(client, corpus, openai_settings, stub_openai):
    stub_openai.enqueue(Reply(pieces=["Fine [1]."]))

    body = ask(client).json()

    sent = stub_openai.requests[0]
    prompt_text = json.dumps(sent["messages"])
    answer = Answer.objects.get(id=body["id"])
    for source in answer.sources.all():
        assert f'number=\\"{source.original_number}\\"' in prompt_text
        assert source.title in prompt_text
    assert QUESTION in prompt_text
    assert "sk-test-secret-key" not in json.dumps(answer.retrieval_trace)


# --- failures -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_provider_error_is_502_and_the_answer_is_stored_failed(
    client, corpus, openai_settings, stub_openai
):
    stub_openai.set_default(Reply(status=500))

    response = ask(client)

    assert response.status_code == 502
    body = response.json()
    assert body["detail"]
    answer = Answer.objects.get(id=body["id"])
    assert answer.status == "failed"
    assert answer.error_kind == "upstream"
    assert answer.error_message == body["detail"]
    assert answer.sources.count() == 4  # the retrieved list is kept for QA
    assert answer.finished_at is not None


@pytest.mark.django_db
@pytest.mark.parametrize("pieces", [[], ["  ", "\n"]], ids=["empty", "whitespace-only"])
def test_an_empty_or_whitespace_only_reply_is_a_502_and_a_failed_answer(
    client, corpus, openai_settings, stub_openai, pieces
):
    stub_openai.enqueue(Reply(pieces=pieces))

    response = ask(client)

    assert response.status_code == 502
    body = response.json()
    answer = Answer.objects.get(id=body["id"])
    assert (answer.status, answer.error_kind, answer.final_text) == ("failed", "bad_response", "")
    assert answer.error_message == body["detail"]


@pytest.mark.django_db
def test_a_stream_cut_midway_is_a_failure_that_keeps_the_partial_text(
    client, corpus, openai_settings, stub_openai
):
    stub_openai.enqueue(Reply(pieces=["Teacups [1] ", "are ", "never finished"], cut_after=2))

    response = ask(client)

    assert response.status_code == 502
    answer = Answer.objects.get(id=response.json()["id"])
    assert answer.status == "failed"
    assert answer.raw_text == "Teacups [1] are "
    assert answer.final_text == ""
    assert client.get(f"{URL}{answer.id}/").json()["status"] == "failed"


@pytest.mark.django_db
def test_a_stream_without_finish_reason_is_truncated_not_complete(
    client, corpus, openai_settings, stub_openai
):
    stub_openai.enqueue(Reply(pieces=["Half an answer [1]"], finish_reason=None, send_done=False))

    response = ask(client)

    assert response.status_code == 502
    answer = Answer.objects.get(id=response.json()["id"])
    assert answer.status == "failed"
    assert answer.truncated is True
    assert answer.raw_text == "Half an answer [1]"


@pytest.mark.django_db
def test_a_provider_timeout_is_504(client, corpus, openai_settings, stub_openai):
    openai_settings.ANSWERS_PROVIDER_TIMEOUT = 0.5
    stub_openai.enqueue(Reply(pieces=["Slow [1]"], hang=3))

    response = ask(client)

    assert response.status_code == 504
    answer = Answer.objects.get(id=response.json()["id"])
    assert answer.status == "failed"
    assert answer.error_kind == "timeout"


# --- validation -----------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "question"),
        ({"question": ""}, "question"),
        ({"question": "   \n\t "}, "question"),
        ({"question": "x" * 2001}, "question"),
        ({"question": None}, "question"),
        ({"question": 42}, "question"),
        ({"question": ["a"]}, "question"),
        ({"question": "ok?", "stream": "sometimes"}, "stream"),
        ({"question": "\u200b\u200b"}, "question"),
        ({"question": "\ufeff"}, "question"),
        ({"question": " \u200e\u2066\u00ad\u2028\u061c "}, "question"),
    ],
    ids=[
        "missing",
        "empty",
        "whitespace",
        "too-long",
        "null",
        "number",
        "list",
        "bad-stream",
        "zero-width",
        "bom",
        "invisible-controls",
    ],
)
def test_bad_input_is_400_naming_the_field_and_stores_nothing(client, openai_settings, payload, field):
    response = client.post(URL, payload, content_type="application/json")

    assert response.status_code == 400
    assert field in response.json()
    assert Answer.objects.count() == 0


@pytest.mark.django_db
def test_a_question_with_one_visible_character_among_invisible_ones_is_asked(
    client, corpus, openai_settings, stub_openai
):
    stub_openai.enqueue(Reply(pieces=["Teacups [1]."]))

    response = ask(client, question="\u200bteacups?\ufeff")

    assert response.status_code == 201, response.content


@pytest.mark.django_db
def test_a_question_of_exactly_2000_characters_is_accepted(client, corpus, openai_settings, stub_openai):
    stub_openai.enqueue(Reply(pieces=["Long [1]."]))
    question = "w" * (2000 - len(" walrus teacups")) + " walrus teacups"
    assert len(question) == 2000
    assert ask(client, question=question).status_code == 201


@pytest.mark.django_db
def test_malformed_json_is_400_with_a_message(client, openai_settings):
    response = client.post(URL, '{"question": "unterminated', content_type="application/json")

    assert response.status_code == 400
    assert "JSON" in response.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize("answer_id", [str(uuid.uuid4()), "not-a-uuid", "123"])
def test_unknown_or_malformed_ids_are_404(client, answer_id):
    response = client.get(f"{URL}{answer_id}/")
    assert response.status_code == 404
    assert response.json()["detail"]


# --- read rules -----------------------------------------------------------------------------


@pytest.fixture
def users(db):
    asker = User.objects.create_user("asker", password="pw")
    other = User.objects.create_user("other", password="pw")
    staff = User.objects.create_user("staff", password="pw", is_staff=True)
    reviewer = User.objects.create_user("reviewer", password="pw")
    reviewer.user_permissions.add(Permission.objects.get(codename="view_trail"))
    return {"asker": asker, "other": other, "staff": staff, "reviewer": reviewer}


def _as(client, user):
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_an_anonymous_answer_is_readable_by_whoever_holds_its_id(
    client, corpus, openai_settings, stub_openai, users
):
    stub_openai.enqueue(Reply(pieces=["Shared [1]."]))
    answer_id = ask(client).json()["id"]

    assert client.get(f"{URL}{answer_id}/").status_code == 200
    assert _as(client, users["other"]).get(f"{URL}{answer_id}/").status_code == 200


@pytest.mark.django_db
def test_a_signed_in_askers_answer_is_private_to_them_and_staff(
    client, corpus, openai_settings, stub_openai, users
):
    stub_openai.enqueue(Reply(pieces=["Private [1]."]))
    answer_id = ask(_as(client, users["asker"])).json()["id"]
    assert Answer.objects.get(id=answer_id).asker == users["asker"]

    assert client.get(f"{URL}{answer_id}/").status_code == 200
    assert _as(client, users["other"]).get(f"{URL}{answer_id}/").status_code == 404
    assert _as(client, users["staff"]).get(f"{URL}{answer_id}/").status_code == 200
    client.logout()
    assert client.get(f"{URL}{answer_id}/").status_code == 404


@pytest.mark.django_db
def test_token_authentication_asks_and_reads_as_the_token_user(
    client, corpus, openai_settings, stub_openai, users
):
    token = Token.objects.create(user=users["asker"])
    stub_openai.enqueue(Reply(pieces=["Token [1]."]))
    auth = {"HTTP_AUTHORIZATION": f"Token {token.key}"}

    response = client.post(URL, {"question": QUESTION}, content_type="application/json", **auth)

    assert response.status_code == 201
    answer_id = response.json()["id"]
    assert Answer.objects.get(id=answer_id).asker == users["asker"]
    assert client.get(f"{URL}{answer_id}/", **auth).status_code == 200
    assert client.get(f"{URL}{answer_id}/").status_code == 404


@pytest.mark.django_db
def test_the_trail_is_for_qa_reviewers_only(client, corpus, openai_settings, stub_openai, users):
    stub_openai.enqueue(Reply(pieces=["Trail [2] and [9]."]))
    answer_id = ask(client).json()["id"]
    trail_url = f"{URL}{answer_id}/trail/"

    assert client.get(trail_url).status_code == 401
    assert _as(client, users["other"]).get(trail_url).status_code == 403
    assert _as(client, users["staff"]).get(trail_url).status_code == 403, "staff status alone is not enough"
    trail = _as(client, users["reviewer"]).get(trail_url).json()

    assert trail["raw_text"] == "Trail [2] and [9]."
    assert trail["text"] == "Trail [1] and."
    assert trail["stripped"] == [9]
    # Every marker's decision, as the pipeline stored it: [2] renumbered to [1], [9] removed.
    assert [(m["written"], m["outcome"], m["final"], m["stripped"]) for m in trail["markers"]] == [
        ("[2]", "kept", "[1]", []),
        ("[9]", "removed", None, [9]),
    ]
    assert trail["fallback"] is False
    assert trail["provider"] == "openai"
    assert trail["model"] == "stub-model"
    assert [(s["original_number"], s["final_number"], s["status"]) for s in trail["sources"]] == [
        (1, None, "dropped"),
        (2, 1, "cited"),
        (3, None, "dropped"),
        (4, None, "dropped"),
    ]
    assert all({"document_id", "title", "url", "score"} <= set(s) for s in trail["sources"])


# --- throttling -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_anonymous_askers_are_throttled_at_the_configured_rate(
    client, corpus, openai_settings, stub_openai, users
):
    openai_settings.ANSWERS_ANON_RATE = "2/min"
    openai_settings.ANSWERS_USER_RATE = "3/min"
    stub_openai.set_default(Reply(pieces=["Again [1]."]))

    assert [ask(client).status_code for _ in range(3)] == [201, 201, 429]
    assert "throttled" in ask(client).json()["detail"].lower()
    # Reading is not throttled, and signed-in users have their own budget.
    assert client.get(f"{URL}{Answer.objects.first().id}/").status_code == 200
    _as(client, users["asker"])
    assert [ask(client).status_code for _ in range(4)] == [201, 201, 201, 429]


# --- schema ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_openapi_schema_and_its_docs_page_are_served_without_a_cdn(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    assert "/api/answers/" in schema.content.decode()

    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "swagger-ui" in html
    assert "cdn" not in html.lower()


@pytest.mark.django_db
def test_the_api_docs_example_question_is_a_real_question(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    question = schema["components"]["schemas"]["AskInput"]["properties"]["question"]
    assert question["example"] == "How does the with statement work?"
    # The example is a question the API accepts.
    response = client.post(
        "/api/answers/", {"question": question["example"]}, content_type="application/json"
    )
    assert response.status_code == 201, response.content
