"""The QA reviewers' answer pages: who may see them, what they show, the filters, read-only audit data."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from answers.citations.trail import compute_trail
from answers.models import Answer, AnswerSource, Document, Review

pytestmark = pytest.mark.django_db

QA_PERMISSIONS = {
    "answers.view_answer",
    "answers.view_answersource",
    "answers.view_trail",
    "answers.view_review",
    # Reviews are append-only: reviewers add them (with their source flags), never change or delete one.
    "answers.add_review",
    "answers.view_reviewsourceflag",
    "answers.add_reviewsourceflag",
    # Reader feedback: read it, and mark it resolved (readers write it; a review resolves it too).
    "answers.view_feedback",
    "answers.change_feedback",
    # Evaluation: read sets, runs and results; curate sets' items (runs are `manage.py evaluate`'s).
    "answers.view_evaluationset",
    "answers.add_evaluationset",
    "answers.change_evaluationset",
    "answers.view_evaluationitem",
    "answers.add_evaluationitem",
    "answers.change_evaluationitem",
    "answers.delete_evaluationitem",
    "answers.view_evaluationrun",
    "answers.view_evaluationresult",
}


def changelist_url() -> str:
    return reverse("admin:answers_answer_changelist")


def change_url(answer: Answer) -> str:
    return reverse("admin:answers_answer_change", args=[answer.pk])


def listed_ids(response) -> set:
    return {a.pk for a in response.context["cl"].result_list}


def test_qa_group_from_the_data_migration_has_exactly_the_reviewer_permissions():
    group = Group.objects.get(name="QA reviewers")
    granted = {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}
    assert granted == QA_PERMISSIONS


def test_answer_list_shows_each_question_and_the_trail_columns(admin_client, answer_factory):
    answer = answer_factory(text="A [3] then [1] and [9].", source_count=4, question="Which doc says what?")
    response = admin_client.get(changelist_url())
    assert response.status_code == 200
    html = response.content.decode()
    assert "Which doc says what?" in html
    assert "2 of 4" in html  # the final sources, of those retrieved
    assert "scripted / scripted-1" in html
    assert "Citation health" in html
    row = response.context["cl"].result_list[0]
    assert row.pk == answer.pk
    assert (row.cited_count, row.retrieved_count, row.dropped_count, row.renumbered) == (2, 4, 2, True)


def test_the_answer_list_has_the_key_columns_only(admin_client, admin_user, answer_factory):
    """Nine columns (issue 47: the list fits a 1280 px window); the rest of the trail is on the answer's page
    and behind the filters."""
    fallback = answer_factory(text="No marker at all.", source_count=3, question="Which doc?")
    Review.objects.create(answer=fallback, reviewer=admin_user, verdict=Review.Verdict.MISSING_CITATION)
    declined = answer_factory(text="A [1].", source_count=1, question="Zeppelins?")
    Answer.objects.filter(pk=declined.pk).update(declined=True)
    response = admin_client.get(changelist_url())
    html = response.content.decode()
    headers = [
        re.sub(r"<[^>]+>", "", header).strip()
        for header in re.findall(r'<th scope="col"[^>]*>(.*?)</th>', html, re.S)
    ]
    assert headers[1:] == [
        "Question",
        "Status",
        "Provider / model",
        "Final sources",
        "Support",
        "Coverage",
        "Review verdict",
        "Unresolved feedback",
        "Created at",
    ]
    assert re.findall(r'<td class="field-status_shown">(\w+)</td>', html) == ["Declined", "Done"]
    assert '<td class="field-final_sources">3 of 3 (fallback)</td>' in html
    assert '<td class="field-verdict">Missing citation</td>' in html
    assert re.search(r'<td class="field-support_found">(OK|\d+ [a-z ]+(, \d+ [a-z ]+)?)</td>', html)
    assert re.search(r'<td class="field-coverage_found">(OK|May not address)</td>', html)


def test_renumbered_is_stored_per_source_and_the_list_reads_the_stored_fact(admin_client, answer_factory):
    answer = answer_factory(text="A [3] then [1] and [9].", source_count=4)
    stored = dict(answer.sources.values_list("original_number", "renumbered"))
    # [3] becomes [1] and [1] becomes [2]: both renumbered; 2 and 4 are dropped (no final number).
    assert stored == {1: True, 2: False, 3: True, 4: False}
    kept = answer_factory(text="A [1] then [2].", source_count=2)
    assert not kept.sources.filter(renumbered=True).exists()

    # The list's column and filter read the stored flag, not the numbers.
    answer.sources.update(renumbered=False)
    listed = admin_client.get(changelist_url(), {"renumbered": "yes"})
    assert listed.status_code == 200
    assert listed_ids(listed) == set()
    answer.sources.filter(original_number=3).update(renumbered=True)
    assert listed_ids(admin_client.get(changelist_url(), {"renumbered": "yes"})) == {answer.pk}
    assert listed_ids(admin_client.get(changelist_url(), {"renumbered": "no"})) == {kept.pk}


def test_pages_render_for_a_qa_reviewer(qa_client, answer_factory):
    answer = answer_factory(text="A [2] then [1].", source_count=2)
    assert qa_client.get(reverse("admin:index")).status_code == 200
    assert qa_client.get(changelist_url()).status_code == 200
    response = qa_client.get(change_url(answer))
    assert response.status_code == 200
    assert "2 → 1" in response.content.decode()
    assert qa_client.get(reverse("admin:answers_answer_health")).status_code == 200
    assert qa_client.get(reverse("admin:answers_review_changelist")).status_code == 200


@pytest.mark.parametrize(
    "url_name",
    ["admin:answers_answer_changelist", "admin:answers_answer_health", "admin:answers_answer_change"],
)
def test_pages_are_refused_to_other_users(client, django_user_model, answer_factory, url_name):
    answer = answer_factory(text="A [1].", source_count=1)
    url = reverse(url_name, args=[answer.pk] if url_name.endswith("change") else [])

    # Anonymous and signed-in non-staff users are sent to the admin login.
    response = client.get(url)
    assert response.status_code == 302
    assert reverse("admin:login") in response["Location"]
    client.force_login(django_user_model.objects.create_user("visitor", password="pw"))
    response = client.get(url)
    assert response.status_code == 302
    assert reverse("admin:login") in response["Location"]

    # Staff without the reviewers' permissions are refused.
    client.force_login(django_user_model.objects.create_user("clerk", password="pw", is_staff=True))
    assert client.get(url).status_code == 403


def test_view_answer_without_view_trail_is_not_enough(client, django_user_model, answer_factory):
    from django.contrib.auth.models import Permission

    answer = answer_factory(text="A [1].", source_count=1)
    user = django_user_model.objects.create_user("half", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_answer"))
    client.force_login(user)
    assert client.get(change_url(answer)).status_code == 403


@pytest.mark.parametrize(
    ("permissions", "status"),
    [((), 403), (("view_answer",), 403), (("view_trail",), 200), (("view_answer", "view_trail"), 200)],
)
def test_the_trail_api_and_the_admin_answer_page_answer_staff_alike(
    client, django_user_model, answer_factory, permissions, status
):
    """One rule (may_read_trails): the QA reviewers' permission opens both, staff status alone neither."""
    from django.contrib.auth.models import Permission

    answer = answer_factory(text="A [1].", source_count=1)
    user = django_user_model.objects.create_user("someone", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=permissions))
    client.force_login(user)

    assert client.get(f"/api/answers/{answer.pk}/trail/").status_code == status
    assert client.get(change_url(answer)).status_code == status


@pytest.fixture
def filter_set(answer_factory, admin_user):
    """A known set of answers, one trait each (besides `renumbered_dropped_stripped`)."""
    answers = {
        "renumbered_dropped_stripped": answer_factory(text="A [3] then [1] and [9].", source_count=4),
        "plain": answer_factory(text="Plain [1] and [2].", source_count=2),
        "fallback": answer_factory(text="No markers at all.", source_count=2),
        "failed": answer_factory(text="Partial [1", source_count=2, fail_kind="upstream"),
        "other_provider": answer_factory(
            text="[1] ok [5]", source_count=3, provider_name="other", model="other-2"
        ),
    }
    Review.objects.create(answer=answers["plain"], reviewer=admin_user, verdict=Review.Verdict.WRONG_CITATION)
    Review.objects.create(answer=answers["plain"], reviewer=admin_user, verdict=Review.Verdict.OK)  # latest
    Review.objects.create(
        answer=answers["fallback"], reviewer=admin_user, verdict=Review.Verdict.MISSING_CITATION
    )
    old = answers["other_provider"]
    Answer.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=40))
    return answers


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, {"renumbered_dropped_stripped", "plain", "fallback", "failed", "other_provider"}),
        ({"status__exact": "failed"}, {"failed"}),
        ({"status__exact": "done"}, {"renumbered_dropped_stripped", "plain", "fallback", "other_provider"}),
        ({"delivery__exact": "sse"}, set()),
        ({"provider": "other"}, {"other_provider"}),
        ({"model": "other-2"}, {"other_provider"}),
        ({"fallback__exact": "1"}, {"fallback"}),
        ({"dropped": "yes"}, {"renumbered_dropped_stripped", "other_provider"}),
        ({"dropped": "no"}, {"plain", "fallback", "failed"}),
        ({"renumbered": "yes"}, {"renumbered_dropped_stripped"}),
        ({"renumbered": "no"}, {"plain", "fallback", "failed", "other_provider"}),
        ({"stripped": "yes"}, {"renumbered_dropped_stripped", "other_provider"}),
        ({"stripped": "no"}, {"plain", "fallback", "failed"}),
        ({"verdict": "unreviewed"}, {"renumbered_dropped_stripped", "failed", "other_provider"}),
        ({"verdict": "ok"}, {"plain"}),
        ({"verdict": "wrong_citation"}, set()),  # superseded by a later verdict
        ({"verdict": "missing_citation"}, {"fallback"}),
        ({"created_at__gte": "DAYS_AGO_7"}, {"renumbered_dropped_stripped", "plain", "fallback", "failed"}),
        ({"q": "Plain"}, {"plain"}),  # search over the text
        ({"q": "[3] then"}, {"renumbered_dropped_stripped"}),
    ],
)
def test_list_filters_return_the_right_answers(admin_client, filter_set, query, expected):
    query = dict(query)
    if query.get("created_at__gte") == "DAYS_AGO_7":
        query["created_at__gte"] = str(timezone.now() - timedelta(days=7))
    response = admin_client.get(changelist_url(), query)
    assert response.status_code == 200
    assert listed_ids(response) == {filter_set[name].pk for name in expected}


def test_search_covers_the_question(admin_client, answer_factory):
    wanted = answer_factory(text="A [1].", source_count=1, question="How do herons fish?")
    answer_factory(text="A [1].", source_count=1, question="Something else")
    assert listed_ids(admin_client.get(changelist_url(), {"q": "herons"})) == {wanted.pk}


def test_answer_list_query_count_does_not_grow_with_the_answers(
    admin_client, answer_factory, django_assert_max_num_queries
):
    answer_factory(text="A [2] then [1] and [7].", source_count=3)
    with django_assert_max_num_queries(12) as few:
        admin_client.get(changelist_url())
    for i in range(25):
        answer_factory(text=f"Answer {i} [{i % 3 + 1}].", source_count=3)
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = admin_client.get(changelist_url())
    assert len(response.context["cl"].result_list) == 26


def test_answer_page_shows_the_whole_trail(admin_client, answer_factory):
    answer = answer_factory(text="A [3] then [1] and [9].", source_count=4, question="Where is it?")
    response = admin_client.get(change_url(answer))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Where is it?" in html
    # Raw and final text side by side, markers highlighted, rewrites visible.
    assert answer.raw_text == "A [3] then [1] and [9]."
    assert answer.final_text == "A [1] then [2] and."
    assert '<mark class="qa-marker">[3]</mark><span class="qa-rewrite"> → [1]</span>' in html
    assert '<mark class="qa-marker">[1]</mark><span class="qa-rewrite"> → [2]</span>' in html
    assert '<del class="qa-stripped" title="stripped: points at no source">[9]</del>' in html
    assert html.count('class="qa-marker"') >= 4  # two in the raw text, two in the final text
    # ... and the final text as readers see it: the server's rendering, citations linked.
    assert (
        '<div class="qa-rendered" data-qa-rendered><p>A <a class="cite" href="#source-1">[1]</a> then '
        '<a class="cite" href="#source-2">[2]</a> and.</p>\n</div>'
    ) in html
    # Every renumbering as old → new, every dropped source named with the word "dropped".
    assert "3 → 1" in html
    assert "1 → 2" in html
    sources = {s.original_number: s for s in answer.sources.all()}
    for number in (2, 4):
        assert sources[number].status == AnswerSource.Status.DROPPED
        assert f"{number} dropped: <q>{sources[number].title}</q>" in html
    # The sources table in retrieval order, with snapshot, scores and first-cited position.
    positions = [html.index(f"<td>{sources[n].title}<br>") for n in (1, 2, 3, 4)]
    assert positions == sorted(positions)
    assert sources[3].first_cited_offset == 2
    assert "<em>dropped</em>" in html
    assert f'<a href="{sources[1].url}" rel="noopener noreferrer">' in html
    # Retrieval trace, provider, model, prompt version, timings.
    assert "Cut by the threshold" in html
    assert "Cut by the entity cap" in html
    assert "scripted-1" in html
    assert answer.prompt_version in html
    assert "first piece" in html
    assert "Not reviewed yet." in html


def test_failed_answer_page_shows_the_error(admin_client, answer_factory):
    answer = answer_factory(
        text="Half an ans", source_count=2, fail_kind="upstream", fail_message="Upstream 500"
    )
    response = admin_client.get(change_url(answer))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Upstream 500" in html
    assert "no final text: the answer is failed" in html
    assert "Half an ans" in html


def test_hostile_titles_text_and_question_are_escaped(admin_client, answer_factory):
    hostile = Document.objects.create(
        key="evil",
        title='<script>alert("title")</script>',
        url="javascript:alert(1)",
        body="<b>body</b>",
        content_hash="0" * 64,
    )
    answer = answer_factory(
        text='<img src=x onerror=alert(1)> says [1] and <script>alert("text")</script> [2]',
        documents=[hostile],
        question="<iframe src=//evil></iframe>?",
    )
    for url in (change_url(answer), changelist_url()):
        html = admin_client.get(url).content.decode()
        assert "<script>alert(" not in html
        assert "<img src=x" not in html
        assert "<iframe src=//evil>" not in html
        assert 'href="javascript:' not in html
    html = admin_client.get(change_url(answer)).content.decode()
    assert "&lt;script&gt;alert(&quot;title&quot;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&lt;iframe src=//evil&gt;&lt;/iframe&gt;?" in html


def test_audit_data_cannot_be_added_changed_or_deleted_through_admin(admin_client, answer_factory):
    answer = answer_factory(text="A [2] then [1].", source_count=2)
    before = (answer.final_text, answer.question)
    assert admin_client.get(reverse("admin:answers_answer_add")).status_code == 403
    assert admin_client.post(change_url(answer), {"question": "changed"}).status_code == 403
    assert admin_client.get(reverse("admin:answers_answer_delete", args=[answer.pk])).status_code == 403
    assert (
        admin_client.post(
            reverse("admin:answers_answer_delete", args=[answer.pk]), {"post": "yes"}
        ).status_code
        == 403
    )

    # No bulk delete action, and a forged one deletes nothing.
    response = admin_client.get(changelist_url())
    assert "delete_selected" not in dict(
        response.context["cl"].model_admin.get_actions(response.wsgi_request)
    )
    admin_client.post(
        changelist_url(), {"action": "delete_selected", "_selected_action": [answer.pk], "post": "yes"}
    )

    # The page is view-only: no save button, no form fields for the trail.
    html = admin_client.get(change_url(answer)).content.decode()
    assert 'name="_save"' not in html
    assert 'name="question"' not in html

    # Sources have no admin of their own.
    with pytest.raises(NoReverseMatch):
        reverse("admin:answers_answersource_changelist")

    answer.refresh_from_db()
    assert (answer.final_text, answer.question) == before
    assert answer.sources.count() == 2


def test_qa_reviewer_cannot_edit_audit_data_either(qa_client, answer_factory):
    answer = answer_factory(text="A [1].", source_count=1)
    assert qa_client.get(reverse("admin:answers_answer_add")).status_code == 403
    assert qa_client.post(change_url(answer), {"question": "changed"}).status_code == 403
    assert (
        qa_client.post(reverse("admin:answers_answer_delete", args=[answer.pk]), {"post": "yes"}).status_code
        == 403
    )
    assert Answer.objects.filter(pk=answer.pk, question=answer.question).exists()


def test_export_round_trips_the_selected_trails(admin_client, answer_factory, admin_user):
    renumbered = answer_factory(text="A [3] then [1] and [9].", source_count=4, question="Q1 «é»")
    fallback = answer_factory(text="No markers.", source_count=2, question="Q2")
    failed = answer_factory(text="cut [1", source_count=1, fail_kind="upstream", question="Q3")
    not_selected = answer_factory(text="A [1].", source_count=1, question="Q4")
    review = Review.objects.create(
        answer=renumbered, reviewer=admin_user, verdict="wrong_citation", notes="n"
    )
    review.source_flags.create(source=renumbered.sources.get(original_number=2), flag="should_be_cited")

    response = admin_client.post(
        changelist_url(),
        {"action": "export_trails", "_selected_action": [renumbered.pk, fallback.pk, failed.pk]},
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/jsonl")
    assert "attachment" in response["Content-Disposition"]
    rows = [json.loads(line) for line in response.content.decode().splitlines()]
    by_id = {row["id"]: row for row in rows}
    assert set(by_id) == {str(renumbered.pk), str(fallback.pk), str(failed.pk)}
    assert str(not_selected.pk) not in by_id

    for answer in (renumbered, fallback, failed):
        answer.refresh_from_db()
        row = by_id[str(answer.pk)]
        assert (row["question"], row["raw_text"], row["final_text"]) == (
            answer.question,
            answer.raw_text,
            answer.final_text,
        )
        assert (row["status"], row["fallback"], row["stripped"]) == (
            answer.status,
            answer.fallback,
            answer.stripped,
        )
        stored = [
            (s.original_number, s.final_number, s.status, s.title, s.url)
            for s in answer.sources.order_by("original_number")
        ]
        exported = [
            (s["original_number"], s["final_number"], s["status"], s["title"], s["url"])
            for s in row["sources"]
        ]
        assert exported == stored
        if answer.status == Answer.Status.DONE:
            # The export alone is enough to re-check the trail.
            trail = compute_trail(row["raw_text"], len(row["sources"]))
            assert trail.final_text == row["final_text"]
            assert [(o.final_number, o.status) for o in trail.sources] == [
                (s["final_number"], s["status"]) for s in row["sources"]
            ]

    assert by_id[str(renumbered.pk)]["reviews"] == [
        {
            "reviewer": admin_user.get_username(),
            "verdict": "wrong_citation",
            "notes": "n",
            "created_at": review.created_at.isoformat(),
            "updated_at": review.updated_at.isoformat(),
            "source_flags": [{"original_number": 2, "flag": "should_be_cited", "note": ""}],
        }
    ]
    assert by_id[str(fallback.pk)]["reviews"] == []


def test_qa_reviewer_may_export(qa_client, answer_factory):
    answer = answer_factory(text="A [1].", source_count=1)
    response = qa_client.post(changelist_url(), {"action": "export_trails", "_selected_action": [answer.pk]})
    assert response.status_code == 200
    assert json.loads(response.content.decode())["id"] == str(answer.pk)


def test_filter_counts_work_with_the_annotated_filters(admin_client, filter_set):
    response = admin_client.get(changelist_url(), {"_facets": "True", "dropped": "yes"})
    assert response.status_code == 200
    assert listed_ids(response) == {
        filter_set["renumbered_dropped_stripped"].pk,
        filter_set["other_provider"].pk,
    }
