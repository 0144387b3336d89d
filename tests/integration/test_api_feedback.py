"""POST /api/answers/<id>/feedback/: readers' verdicts on done answers, flagged sources, refusals, limits.

Answers come from the real pipeline (answer_factory); feedback goes through the real API.
"""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client
from rest_framework.authtoken.models import Token

from answers.failures import ErrorKind
from answers.models import Answer, AnswerSource, Feedback
from answers.pipeline import store
from answers.providers.prompt import build_prompt
from answers.retrieval.types import Retrieval
from tests.fixtures.answers import ScriptedProvider, make_documents, sources_for

pytestmark = pytest.mark.django_db

# Four sources retrieved; [3] and [1] cited, so the final list is 1 (was 3) and 2 (was 1).
TEXT = "Walruses sip tea [3] and build chairs [1]."


@pytest.fixture(autouse=True)
def _fresh_throttles():
    cache.clear()


@pytest.fixture
def users(db):
    return {
        "asker": User.objects.create_user("asker", password="pw"),
        "other": User.objects.create_user("other", password="pw"),
        "staff": User.objects.create_user("staff", password="pw", is_staff=True),
    }


def url(answer_id: object) -> str:
    return f"/api/answers/{answer_id}/feedback/"


def send(client: Client, answer_id: object, body: object, **extra: str):
    return client.post(url(answer_id), body, content_type="application/json", **extra)


def test_a_helpful_verdict_is_stored_and_echoed(client, answer_factory):
    answer = answer_factory(text=TEXT, source_count=4)

    response = send(client, answer.id, {"verdict": "helpful"})

    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {"id", "verdict", "source", "created_at"}
    assert (body["verdict"], body["source"]) == ("helpful", None)
    stored = Feedback.objects.get(pk=body["id"])
    assert (stored.answer_id, stored.verdict, stored.source, stored.comment) == (
        answer.id,
        "helpful",
        None,
        "",
    )
    assert stored.user is None
    assert stored.resolved_at is None


def test_an_unhelpful_verdict_with_a_comment(client, answer_factory):
    answer = answer_factory(text=TEXT, source_count=4)

    response = send(client, answer.id, {"verdict": "unhelpful", "comment": "  Chairs are not tea.  "})

    assert response.status_code == 201
    assert Feedback.objects.get().comment == "Chairs are not tea."
    assert Feedback.objects.get().verdict == "unhelpful"


def test_a_flagged_source_is_named_by_its_final_number(client, answer_factory):
    answer = answer_factory(text=TEXT, source_count=4)
    # Final number 1 is the third source retrieved.
    flagged = AnswerSource.objects.get(answer=answer, final_number=1)
    assert flagged.original_number == 3

    body = {"verdict": "unhelpful", "source": 1, "comment": "Says nothing of tea"}
    response = send(client, answer.id, body)

    assert response.status_code == 201
    assert response.json()["source"] == 1
    assert Feedback.objects.get().source == flagged


def test_feedback_never_changes_the_trail(client, answer_factory):
    answer = answer_factory(text=TEXT, source_count=4)
    before = list(AnswerSource.objects.filter(answer=answer).values().order_by("original_number"))
    answer_row = Answer.objects.filter(pk=answer.pk).values().get()

    assert send(client, answer.id, {"verdict": "unhelpful", "source": 2}).status_code == 201

    assert list(AnswerSource.objects.filter(answer=answer).values().order_by("original_number")) == before
    assert Answer.objects.filter(pk=answer.pk).values().get() == answer_row


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"verdict": "unhelpful", "source": 3}, "source"),  # 3 was retrieved, then dropped
        ({"verdict": "unhelpful", "source": 5}, "source"),
        ({"verdict": "unhelpful", "source": 0}, "source"),
        ({"verdict": "unhelpful", "source": -1}, "source"),
        ({"verdict": "unhelpful", "source": "1"}, "source"),
        ({"verdict": "unhelpful", "source": 1.0}, "source"),
        ({"verdict": "unhelpful", "source": True}, "source"),
        ({"verdict": "unhelpful", "source": 2**40}, "source"),
        ({"verdict": "helpful", "source": 1}, "source"),  # a flag implies unhelpful
        ({"verdict": "great"}, "verdict"),
        ({"verdict": ""}, "verdict"),
        ({"verdict": None}, "verdict"),
        ({}, "verdict"),
        ({"verdict": "unhelpful", "comment": "x" * 1001}, "comment"),
        ({"verdict": "unhelpful", "comment": 42}, "comment"),
        ({"verdict": "unhelpful", "comment": "nul \x00 byte"}, "comment"),
        (["helpful"], "non_field_errors"),
    ],
)
def test_bad_input_is_400_naming_the_field_and_stores_nothing(client, answer_factory, body, field):
    answer = answer_factory(text=TEXT, source_count=4)

    response = send(client, answer.id, body)

    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert Feedback.objects.count() == 0


def test_a_source_outside_the_final_list_says_which_numbers_there_are(client, answer_factory):
    answer = answer_factory(text=TEXT, source_count=4)
    response = send(client, answer.id, {"verdict": "unhelpful", "source": 3})
    assert response.json() == {"source": ["This answer's Sources list has no number 3 (it has 1 to 2)."]}


def test_a_fallback_answer_lists_every_retrieved_source_so_each_may_be_flagged(client, answer_factory):
    answer = answer_factory(text="No markers at all.", source_count=3)
    assert answer.fallback

    assert send(client, answer.id, {"verdict": "unhelpful", "source": 3}).status_code == 201
    assert send(client, answer.id, {"verdict": "unhelpful", "source": 4}).status_code == 400


def test_a_comment_of_exactly_1000_characters_is_accepted(client, answer_factory):
    answer = answer_factory(text=TEXT, source_count=4)
    assert send(client, answer.id, {"verdict": "unhelpful", "comment": "é" * 1000}).status_code == 201
    assert Feedback.objects.get().comment == "é" * 1000


def test_a_body_that_is_not_json_is_415_or_400(client, answer_factory):
    answer = answer_factory(text=TEXT, source_count=4)
    form = client.post(url(answer.id), {"verdict": "helpful"})
    broken = client.post(url(answer.id), "{not json", content_type="application/json")
    assert (form.status_code, broken.status_code) == (415, 400)
    assert Feedback.objects.count() == 0


def _streaming_answer() -> Answer:
    """An answer the pipeline has stored and is still writing (its step 2: streaming, sources retrieved)."""
    sources = sources_for(make_documents(2, prefix="Live"))
    return store.answer_create(
        question="Still being written?",
        asker_id=None,
        delivery=Answer.Delivery.SSE,
        provider=ScriptedProvider(pieces=[]),
        prompt=build_prompt("Still being written?", sources),
        retrieval=Retrieval(sources=sources, trace={}),
        min_score=0.0,
        max_sources=4,
        retrieval_ms=1.0,
    )


def test_feedback_on_a_streaming_answer_is_409(client):
    answer = _streaming_answer()
    assert answer.status == Answer.Status.STREAMING

    for body in ({"verdict": "helpful"}, {"verdict": "unhelpful", "source": 1}):
        response = send(client, answer.id, body)
        assert response.status_code == 409
        assert "not done" in response.json()["detail"]
    assert Feedback.objects.count() == 0


def test_feedback_on_a_failed_answer_is_409(client, answer_factory):
    answer = answer_factory(text="Partial [1", source_count=2, fail_kind=ErrorKind.UPSTREAM)
    assert answer.status == Answer.Status.FAILED
    assert send(client, answer.id, {"verdict": "unhelpful"}).status_code == 409
    assert Feedback.objects.count() == 0


# --- who may send it: whoever may read the answer -------------------------------------------


def test_anyone_holding_an_anonymous_answers_id_may_send_feedback(client, answer_factory, users):
    answer = answer_factory(text=TEXT, source_count=4)

    assert send(client, answer.id, {"verdict": "helpful"}).status_code == 201
    client.force_login(users["other"])
    assert send(client, answer.id, {"verdict": "unhelpful"}).status_code == 201

    anonymous, signed_in = Feedback.objects.order_by("created_at", "pk")
    assert (anonymous.user, signed_in.user) == (None, users["other"])
    # An anonymous reader is a keyed hash of its address, never the address itself.
    assert len(anonymous.client) == 64
    assert "127.0.0.1" not in anonymous.client
    assert signed_in.client == ""


def test_a_signed_in_askers_answer_takes_feedback_from_them_and_staff_only(client, answer_factory, users):
    answer = answer_factory(text=TEXT, source_count=4, asker_id=users["asker"].pk)

    client.force_login(users["other"])
    refused = send(client, answer.id, {"verdict": "unhelpful", "comment": "let me in"})
    assert refused.status_code == 404, "as for GET: existence is not revealed"
    assert client.get(f"/api/answers/{answer.id}/").status_code == 404
    assert "walrus" not in refused.content.decode().lower()
    client.logout()
    anonymous = send(client, answer.id, {"verdict": "helpful"})
    assert anonymous.status_code == 404, "nobody signed in learns nothing either (the read-rule table)"
    assert client.get(f"/api/answers/{answer.id}/").status_code == 404
    assert "walrus" not in anonymous.content.decode().lower()
    assert Feedback.objects.count() == 0

    client.force_login(users["asker"])
    assert send(client, answer.id, {"verdict": "helpful"}).status_code == 201
    client.force_login(users["staff"])
    assert send(client, answer.id, {"verdict": "unhelpful", "source": 2}).status_code == 201
    assert list(Feedback.objects.order_by("pk").values_list("user__username", flat=True)) == [
        "asker",
        "staff",
    ]


def test_a_stranger_with_an_invalid_body_still_gets_404(client, answer_factory, users):
    answer = answer_factory(text=TEXT, source_count=4, asker_id=users["asker"].pk)
    client.force_login(users["other"])
    assert send(client, answer.id, {"verdict": "nonsense"}).status_code == 404


@pytest.mark.parametrize("answer_id", [str(uuid.uuid4()), "not-a-uuid"])
def test_unknown_answers_are_404(client, answer_id):
    response = send(client, answer_id, {"verdict": "helpful"})
    assert response.status_code == 404
    assert response.json()["detail"]


def test_token_authentication_sends_as_the_token_user(client, answer_factory, users):
    answer = answer_factory(text=TEXT, source_count=4, asker_id=users["asker"].pk)
    token = Token.objects.create(user=users["asker"])

    response = send(client, answer.id, {"verdict": "helpful"}, HTTP_AUTHORIZATION=f"Token {token.key}")

    assert response.status_code == 201
    assert Feedback.objects.get().user == users["asker"]
    bad = send(client, answer.id, {"verdict": "helpful"}, HTTP_AUTHORIZATION="Token not-a-real-token")
    assert bad.status_code == 401
    assert bad["WWW-Authenticate"] == "Token"
    assert Feedback.objects.count() == 1


def test_a_token_decides_over_the_session_it_comes_with(client, answer_factory, users):
    """The documented rule (docs/reference/access.md): a token header, when sent, says who asks; a bad one
    is a 401 even beside the asker's own session, and nothing is stored."""
    answer = answer_factory(text=TEXT, source_count=4, asker_id=users["asker"].pk)
    stranger = Token.objects.create(user=users["other"])
    client.force_login(users["asker"])

    as_stranger = send(client, answer.id, {"verdict": "helpful"}, HTTP_AUTHORIZATION=f"token {stranger.key}")
    bad = send(client, answer.id, {"verdict": "helpful"}, HTTP_AUTHORIZATION="Token")

    assert as_stranger.status_code == 404
    assert (bad.status_code, bad["WWW-Authenticate"]) == (401, "Token")
    assert Feedback.objects.count() == 0


def test_a_session_user_must_send_the_csrf_token(answer_factory, users):
    answer = answer_factory(text=TEXT, source_count=4, asker_id=users["asker"].pk)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(users["asker"])

    refused = send(browser, answer.id, {"verdict": "helpful"})
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    assert Feedback.objects.count() == 0

    page = browser.get(f"/answers/{answer.id}/")  # the permalink page sets the CSRF cookie
    token = page.cookies["csrftoken"].value
    accepted = send(browser, answer.id, {"verdict": "helpful"}, HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 201


# --- throttling -----------------------------------------------------------------------------


def test_feedback_is_throttled_at_the_asking_rates_counted_apart_from_questions(
    client, answer_factory, users, settings
):
    settings.ANSWERS_ANON_RATE = "2/min"
    settings.ANSWERS_USER_RATE = "3/min"
    answer = answer_factory(text=TEXT, source_count=4)

    statuses = [send(client, answer.id, {"verdict": "helpful"}).status_code for _ in range(3)]
    assert statuses == [201, 201, 429]
    limited = send(client, answer.id, {"verdict": "helpful"})
    assert "throttled" in limited.json()["detail"].lower()
    assert limited["Retry-After"]
    assert Feedback.objects.count() == 1, "one reader, one verdict: the second replaced the first"
    # Asking has its own budget (the feedback did not use it up).
    assert client.post("/api/answers/", {"question": ""}, content_type="application/json").status_code == 400
    # Signed-in readers have theirs.
    client.force_login(users["other"])
    assert [send(client, answer.id, {"verdict": "helpful"}).status_code for _ in range(4)] == [
        201,
        201,
        201,
        429,
    ]


# --- hostile comments -----------------------------------------------------------------------

HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="alert(1)"> & [1] </td>'


def test_a_hostile_comment_is_stored_verbatim(client, answer_factory):
    answer = answer_factory(text=TEXT, source_count=4)
    body = {"verdict": "unhelpful", "source": 1, "comment": HOSTILE}
    assert send(client, answer.id, body).status_code == 201
    assert Feedback.objects.get().comment == HOSTILE


# --- one verdict per reader per answer (issue 33) -------------------------------------------


def current(client: Client, answer_id: object, **extra: str) -> dict:
    response = client.get(url(answer_id), **extra)
    assert response.status_code == 200, response.content
    return response.json()


def test_a_later_verdict_replaces_the_earlier_and_the_api_returns_it(client, answer_factory):
    answer = answer_factory(text=TEXT, source_count=4)
    assert current(client, answer.id) == {"verdict": None, "flags": []}

    first = send(client, answer.id, {"verdict": "unhelpful", "comment": "too short"}).json()
    second = send(client, answer.id, {"verdict": "helpful"}).json()

    assert second["id"] == first["id"]
    assert Feedback.objects.filter(answer=answer).count() == 1
    stored = Feedback.objects.get()
    assert (stored.verdict, stored.comment) == ("helpful", "")
    now = current(client, answer.id)
    assert now["verdict"]["verdict"] == "helpful"
    assert now["verdict"]["comment"] == ""
    assert now["flags"] == []


def test_a_flag_is_one_per_source_with_its_own_note_and_apart_from_the_verdict(client, answer_factory):
    answer = answer_factory(text=TEXT, source_count=4)
    send(client, answer.id, {"verdict": "helpful"})
    send(client, answer.id, {"verdict": "unhelpful", "source": 2, "comment": "about chairs, not tea"})
    send(client, answer.id, {"verdict": "unhelpful", "source": 2, "comment": "says nothing of chairs"})
    send(client, answer.id, {"verdict": "unhelpful", "source": 1})

    assert Feedback.objects.filter(answer=answer).count() == 3
    now = current(client, answer.id)
    assert now["verdict"]["verdict"] == "helpful"
    assert [(f["source"], f["comment"]) for f in now["flags"]] == [(1, ""), (2, "says nothing of chairs")]


def test_each_reader_has_their_own_verdict(client, answer_factory, users):
    answer = answer_factory(text=TEXT, source_count=4)
    send(client, answer.id, {"verdict": "helpful"})  # anonymous, by address
    send(client, answer.id, {"verdict": "unhelpful"}, REMOTE_ADDR="192.0.2.7")  # another address
    client.force_login(users["staff"])
    send(client, answer.id, {"verdict": "unhelpful"})
    send(client, answer.id, {"verdict": "helpful"})

    assert Feedback.objects.filter(answer=answer).count() == 3
    assert current(client, answer.id)["verdict"]["verdict"] == "helpful"
    client.logout()
    assert current(client, answer.id)["verdict"]["verdict"] == "helpful"
    assert current(client, answer.id, REMOTE_ADDR="192.0.2.7")["verdict"]["verdict"] == "unhelpful"


def test_a_replaced_verdict_is_unresolved_again_for_reviewers(client, answer_factory):
    answer = answer_factory(text=TEXT, source_count=4)
    send(client, answer.id, {"verdict": "unhelpful"})
    Feedback.objects.update(resolved_at="2026-01-01T00:00:00Z")
    send(client, answer.id, {"verdict": "unhelpful", "comment": "still wrong"})
    assert Feedback.objects.get().resolved_at is None


def test_reading_feedback_follows_the_answers_read_rules(client, answer_factory, users):
    answer = answer_factory(text=TEXT, source_count=4, asker_id=users["asker"].pk)
    assert client.get(url(answer.id)).status_code == 404
    client.force_login(users["other"])
    assert client.get(url(answer.id)).status_code == 404
    client.force_login(users["asker"])
    assert current(client, answer.id) == {"verdict": None, "flags": []}


# Half a character (JSON's lone "\ud800") where the error message would quote the value sent.
LONE_SURROGATE = '"\\ud800"'


@pytest.mark.parametrize(
    ("where", "body"),
    [
        ("feedback verdict", '{"verdict": %s}'),
        ("feedback source", '{"verdict": "unhelpful", "source": %s}'),
        ("ask stream", '{"question": "What?", "stream": %s}'),
        ("ask conversation", '{"question": "What?", "conversation": %s}'),
    ],
)
def test_an_error_never_echoes_a_value_that_cannot_be_encoded(client, answer_factory, where, body):
    """The 400 says what was wrong; the half character is written as its escape, `\\ud800`, not a 500."""
    answer = answer_factory(text=TEXT, source_count=4)
    path = url(answer.id) if where.startswith("feedback") else "/api/answers/"

    response = client.post(path, body % LONE_SURROGATE, content_type="application/json")

    assert response.status_code == 400, response.content
    problems = response.json()
    assert problems
    assert "\ud800" not in str(problems)
    assert not Feedback.objects.exists()
