"""Reviews: the only thing QA reviewers write; append-only, kept with reviewer and time, the latest counts."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from django.urls import reverse

from answers.feedback import feedback_create
from answers.models import Answer, Feedback, Review, ReviewSourceFlag
from answers.models.reviews import ReviewIsFinal
from tests.fixtures.reviewers import make_reviewer

pytestmark = pytest.mark.django_db

FLAGS_PREFIX = "source_flags"


@pytest.fixture
def other_reviewer(django_user_model):
    return make_reviewer(django_user_model, "other")


def review_form(answer: Answer | None, *, verdict: str, notes: str = "", flags=(), initial: int = 0) -> dict:
    data = {
        "verdict": verdict,
        "notes": notes,
        f"{FLAGS_PREFIX}-TOTAL_FORMS": str(max(len(flags), initial)),
        f"{FLAGS_PREFIX}-INITIAL_FORMS": str(initial),
        f"{FLAGS_PREFIX}-MIN_NUM_FORMS": "0",
        f"{FLAGS_PREFIX}-MAX_NUM_FORMS": "1000",
    }
    if answer is not None:
        data["answer"] = str(answer.pk)
    for i, flag in enumerate(flags):
        for key, value in flag.items():
            data[f"{FLAGS_PREFIX}-{i}-{key}"] = value
    return data


def test_reviewer_adds_a_review_with_source_flags(client, reviewer, answer_factory):
    answer = answer_factory(text="A [3] then [1].", source_count=3)
    dropped = answer.sources.get(original_number=2)
    client.force_login(reviewer)

    page = client.get(reverse("admin:answers_answer_change", args=[answer.pk]))
    add_url = f"{reverse('admin:answers_review_add')}?answer={answer.pk}"
    assert add_url in page.content.decode()
    form_page = client.get(add_url)
    assert form_page.status_code == 200
    # The answer's sources to flag, by the number readers saw, the retrieval number beside.
    html = form_page.content.decode()
    first = answer.sources.get(original_number=3)
    assert f"[1] {first.title} (retrieved as [3])" in html
    assert f"dropped: {dropped.title} (retrieved as [2])" in html
    assert html.index(f"[1] {first.title}") < html.index(f"dropped: {dropped.title}")

    response = client.post(
        add_url,
        review_form(
            answer,
            verdict="missing_citation",
            notes="Source 2 backs the second sentence.",
            flags=[{"source": str(dropped.pk), "flag": "should_be_cited", "note": "second sentence"}],
        ),
    )
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    review = Review.objects.get(answer=answer)
    assert (review.verdict, review.reviewer, review.notes) == (
        "missing_citation",
        reviewer,
        "Source 2 backs the second sentence.",
    )
    assert review.created_at is not None
    flag = review.source_flags.get()
    assert (flag.source, flag.flag, flag.note) == (dropped, "should_be_cited", "second sentence")

    # The answer's page and list show it.
    html = client.get(reverse("admin:answers_answer_change", args=[answer.pk])).content.decode()
    assert "Missing citation" in html
    assert "Should have been cited" in html
    listed = client.get(reverse("admin:answers_answer_changelist")).content.decode()
    assert "Missing citation" in listed


def test_several_reviews_per_answer_are_kept(client, reviewer, other_reviewer, answer_factory):
    answer = answer_factory(text="A [1].", source_count=1)
    for user, verdict in ((reviewer, "ok"), (other_reviewer, "unsupported_claim")):
        client.force_login(user)
        response = client.post(reverse("admin:answers_review_add"), review_form(answer, verdict=verdict))
        assert response.status_code == 302
    reviews = list(Review.objects.filter(answer=answer).order_by("created_at", "pk"))
    assert [(r.reviewer, r.verdict) for r in reviews] == [
        (reviewer, "ok"),
        (other_reviewer, "unsupported_claim"),
    ]


def test_the_reviewer_is_the_signed_in_user_whatever_the_form_says(
    client, reviewer, other_reviewer, answer_factory
):
    answer = answer_factory(text="A [1].", source_count=1)
    client.force_login(reviewer)
    data = review_form(answer, verdict="ok") | {"reviewer": str(other_reviewer.pk)}
    assert client.post(reverse("admin:answers_review_add"), data).status_code == 302
    assert Review.objects.get(answer=answer).reviewer == reviewer


def saved_review(answer: Answer, reviewer, *, verdict: str = "ok", flag: str | None = None) -> Review:
    review = Review.objects.create(answer=answer, reviewer=reviewer, verdict=verdict, notes="first look")
    if flag:
        ReviewSourceFlag.objects.create(review=review, source=answer.sources.first(), flag=flag, note="n")
    return review


@pytest.mark.parametrize("who", ["its reviewer", "a superuser"])
def test_a_saved_review_cannot_be_changed_or_deleted_through_admin(
    who, client, admin_client, reviewer, answer_factory
):
    answer = answer_factory(text="A [1].", source_count=1)
    review = saved_review(answer, reviewer, flag="does_not_support")
    if who == "its reviewer":
        client.force_login(reviewer)
    else:
        client = admin_client

    url = reverse("admin:answers_review_change", args=[review.pk])
    page = client.get(url)
    assert page.status_code == 200  # readable, as a record
    html = page.content.decode()
    assert "first look" in html
    assert "Cited but does not support the claim" in html  # its flags, shown
    assert 'name="_save"' not in html
    assert 'name="_continue"' not in html
    assert reverse("admin:answers_review_delete", args=[review.pk]) not in html
    assert 'name="source_flags-0-flag"' not in html  # no flag to edit, none to add

    edit = review_form(None, verdict="wrong_citation", notes="on second look")
    assert client.post(url, edit).status_code == 403
    delete_url = reverse("admin:answers_review_delete", args=[review.pk])
    assert client.get(delete_url).status_code == 403
    assert client.post(delete_url, {"post": "yes"}).status_code == 403

    review.refresh_from_db()
    assert (review.verdict, review.notes) == ("ok", "first look")
    assert [(f.flag, f.note) for f in review.source_flags.all()] == [("does_not_support", "n")]


def test_the_model_refuses_to_change_or_delete_a_saved_review_or_flag(reviewer, answer_factory):
    answer = answer_factory(text="A [1].", source_count=1)
    review = saved_review(answer, reviewer, flag="irrelevant")
    flag = review.source_flags.get()

    review.verdict = "other"
    with pytest.raises(ReviewIsFinal):
        review.save()
    with pytest.raises(ReviewIsFinal):
        review.delete()
    flag.flag = "other"
    with pytest.raises(ReviewIsFinal):
        flag.save()
    with pytest.raises(ReviewIsFinal):
        flag.delete()
    # Nor in bulk, through a queryset or the answer's related manager.
    with pytest.raises(ReviewIsFinal):
        Review.objects.filter(pk=review.pk).update(verdict="other")
    with pytest.raises(ReviewIsFinal):
        answer.reviews.all().delete()
    with pytest.raises(ReviewIsFinal):
        ReviewSourceFlag.objects.filter(review=review).update(note="changed")
    with pytest.raises(ReviewIsFinal):
        review.source_flags.all().delete()

    stored = Review.objects.get(pk=review.pk)
    assert (stored.verdict, stored.notes) == ("ok", "first look")
    assert list(stored.source_flags.values_list("flag", "note")) == [("irrelevant", "n")]


def correct(client, answer: Answer, verdict: str, notes: str = ""):
    return client.post(
        f"{reverse('admin:answers_review_add')}?answer={answer.pk}",
        review_form(answer, verdict=verdict, notes=notes),
    )


def test_a_correction_is_a_second_review_and_the_latest_counts(client, reviewer, answer_factory):
    answer = answer_factory(text="A [1].", source_count=1, question="Where is the tea kept?")
    client.force_login(reviewer)
    assert correct(client, answer, "ok", "looked fine").status_code == 302
    assert correct(client, answer, "incomplete", "misses the second half").status_code == 302

    first, second = Review.objects.filter(answer=answer).order_by("created_at", "pk")
    assert (first.verdict, first.notes, second.verdict) == ("ok", "looked fine", "incomplete")

    # The answer list's verdict column and filter read the latest review.
    answers = reverse("admin:answers_answer_changelist")
    listed = client.get(answers)
    assert [row.latest_verdict for row in listed.context["cl"].result_list] == ["incomplete"]
    assert "Does not fully answer the question" in listed.content.decode()
    assert [a.pk for a in client.get(answers, {"verdict": "incomplete"}).context["cl"].result_list] == [
        answer.pk
    ]
    assert list(client.get(answers, {"verdict": "ok"}).context["cl"].result_list) == []

    # The review list keeps both, and says which one counts.
    reviews = reverse("admin:answers_review_changelist")
    rows = {r.pk: r.latest for r in client.get(reviews).context["cl"].result_list}
    assert rows == {first.pk: False, second.pk: True}
    counting = client.get(reviews, {"latest": "yes"}).context["cl"].result_list
    assert [r.pk for r in counting] == [second.pk]
    corrected = client.get(reviews, {"latest": "no"}).context["cl"].result_list
    assert [r.pk for r in corrected] == [first.pk]

    # The answer's page lists both, oldest first, with who, verdict and notes; the last one counts.
    page = client.get(reverse("admin:answers_answer_change", args=[answer.pk])).content.decode()
    panel = page[page.index('class="qa-table qa-reviews"') :]
    assert panel.index("looked fine") < panel.index("misses the second half")
    assert panel.count("reviewer") >= 2
    assert panel.index("corrected later") < panel.index("latest: counts")


def test_saving_a_review_names_the_answer_and_counts_the_feedback_it_resolved(
    client, reviewer, answer_factory
):
    answer = answer_factory(text="A [1].", source_count=1, question="How do I <b>reset</b> my password?")
    for n in range(2):
        feedback_create(
            answer=answer, verdict="unhelpful", source_number=None, comment="", user=None, client=f"c{n}"
        )
    client.force_login(reviewer)

    response = correct(client, answer, "off_topic")
    assert response.status_code == 302
    # Back to the answer's page, where the message is shown.
    assert response["Location"] == reverse("admin:answers_answer_change", args=[answer.pk])
    page = client.get(response["Location"]).content.decode()
    assert (
        "Review saved: “Answers another question” on “How do I &lt;b&gt;reset&lt;/b&gt; my password?”. "
        "It resolved 2 reader feedback items."
    ) in page
    assert Feedback.objects.filter(answer=answer, resolved_at__isnull=True).count() == 0

    feedback_create(answer=answer, verdict="helpful", source_number=None, comment="", user=None, client="c9")
    followed = client.post(
        f"{reverse('admin:answers_review_add')}?answer={answer.pk}",
        review_form(answer, verdict="ok"),
        follow=True,
    )
    messages = [str(m) for m in followed.context["messages"]]
    assert messages == [
        "Review saved: “OK” on “How do I <b>reset</b> my password?”. It resolved 1 reader feedback item."
    ]
    again = client.post(
        f"{reverse('admin:answers_review_add')}?answer={answer.pk}",
        review_form(answer, verdict="ok"),
        follow=True,
    )
    assert [str(m) for m in again.context["messages"]] == [
        "Review saved: “OK” on “How do I <b>reset</b> my password?”. It resolved no reader feedback."
    ]


def test_the_new_verdicts_are_offered_and_stored(client, reviewer, answer_factory):
    answer = answer_factory(text="A [1].", source_count=1)
    client.force_login(reviewer)
    form = client.get(f"{reverse('admin:answers_review_add')}?answer={answer.pk}").content.decode()
    assert '<option value="incomplete">Does not fully answer the question</option>' in form
    assert '<option value="off_topic">Answers another question</option>' in form
    # One button: a saved review is final, nothing to continue editing.
    assert 'name="_save"' in form
    assert 'name="_continue"' not in form
    assert 'name="_addanother"' not in form

    for verdict in ("incomplete", "off_topic"):
        assert correct(client, answer, verdict).status_code == 302
    assert list(
        Review.objects.filter(answer=answer).order_by("created_at", "pk").values_list("verdict", flat=True)
    ) == [
        "incomplete",
        "off_topic",
    ]
    # The list filters offer them.
    filters = client.get(reverse("admin:answers_answer_changelist")).content.decode()
    assert "?verdict=off_topic" in filters


def test_a_flag_must_name_a_source_of_the_reviewed_answer(client, reviewer, answer_factory):
    answer = answer_factory(text="A [1].", source_count=2)
    elsewhere = answer_factory(text="B [1].", source_count=1).sources.get()
    client.force_login(reviewer)
    response = client.post(
        reverse("admin:answers_review_add"),
        review_form(
            answer, verdict="wrong_citation", flags=[{"source": str(elsewhere.pk), "flag": "irrelevant"}]
        ),
    )
    assert response.status_code == 200  # the form again, with the error
    assert not Review.objects.exists()
    assert not ReviewSourceFlag.objects.exists()


def test_flag_model_validation_rejects_another_answers_source(reviewer, answer_factory):
    from django.core.exceptions import ValidationError

    answer = answer_factory(text="A [1].", source_count=1)
    elsewhere = answer_factory(text="B [1].", source_count=1).sources.get()
    review = Review.objects.create(answer=answer, reviewer=reviewer, verdict="ok")
    with pytest.raises(ValidationError):
        ReviewSourceFlag(review=review, source=elsewhere, flag="other").full_clean()


def test_verdict_and_flag_are_database_constraints(reviewer, answer_factory):
    answer = answer_factory(text="A [1].", source_count=1)
    with transaction.atomic(), pytest.raises(IntegrityError):
        Review.objects.create(answer=answer, reviewer=reviewer, verdict="great")
    review = Review.objects.create(answer=answer, reviewer=reviewer, verdict="ok")
    with transaction.atomic(), pytest.raises(IntegrityError):
        ReviewSourceFlag.objects.create(review=review, source=answer.sources.get(), flag="bad")


def test_a_reviewed_answer_is_protected_from_deletion(reviewer, answer_factory):
    answer = answer_factory(text="A [1].", source_count=1)
    Review.objects.create(answer=answer, reviewer=reviewer, verdict="ok")
    with pytest.raises(ProtectedError):
        answer.delete()


def test_a_review_outlives_its_reviewer_account(reviewer, answer_factory):
    answer = answer_factory(text="A [1].", source_count=1)
    review = Review.objects.create(answer=answer, reviewer=reviewer, verdict="ok")
    reviewer.delete()
    review.refresh_from_db()
    assert review.reviewer is None


def test_review_list_escapes_the_question(admin_client, reviewer, answer_factory):
    answer = answer_factory(text="A [1].", source_count=1, question="<script>alert(1)</script>")
    Review.objects.create(answer=answer, reviewer=reviewer, verdict="ok", notes="<b>bold</b>")
    html = admin_client.get(reverse("admin:answers_review_changelist")).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    page = admin_client.get(reverse("admin:answers_answer_change", args=[answer.pk])).content.decode()
    assert "<b>bold</b>" not in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page


def test_the_review_form_shows_the_answer_its_sources_and_its_support_check(client, reviewer, answer_factory):
    """Above the form: the question, the final text as readers got it, its Sources list by the numbers
    readers saw, and each sentence's support verdict; also when a refused post shows the form again."""
    answer = answer_factory(
        text="First claim [3]. Second claim [1].", source_count=3, question="Which <b>doc</b> says what?"
    )
    assert answer.support is not None, "the factory waits for the support record"
    client.force_login(reviewer)
    add_url = f"{reverse('admin:answers_review_add')}?answer={answer.pk}"

    for html in (
        client.get(add_url).content.decode(),
        client.post(add_url, review_form(answer, verdict="not a verdict")).content.decode(),
    ):
        assert html.index("data-reviewed-answer") < html.index('name="verdict"'), "the answer comes first"
        shown = html.split("data-reviewed-answer", 1)[1].split('name="verdict"', 1)[0]
        assert "Which &lt;b&gt;doc&lt;/b&gt; says what?" in shown
        assert reverse("admin:answers_answer_change", args=[answer.pk]) in shown
        assert answer.html in shown  # the final text, rendered as readers see it
        for source in answer.sources.exclude(final_number=None):
            assert f'value="{source.final_number}">[{source.final_number}] ' in shown
            assert source.title in shown
        dropped = answer.sources.get(original_number=2)
        assert dropped.title not in shown.split("Support check", 1)[0], "the Sources list readers got only"
        verdicts = re.findall(r'data-verdict="(\w+)"', shown)
        assert verdicts == [s["verdict"] for s in answer.support["sentences"]]
        assert len(verdicts) == 2


def test_the_review_form_shows_no_answer_to_whoever_may_not_read_trails(
    client, django_user_model, answer_factory
):
    answer = answer_factory(text="A claim [1].", source_count=1)
    writer = django_user_model.objects.create_user("writer", password="pw", is_staff=True)
    writer.user_permissions.add(Permission.objects.get(codename="add_review"))
    client.force_login(writer)
    html = client.get(f"{reverse('admin:answers_review_add')}?answer={answer.pk}").content.decode()
    assert "data-reviewed-answer" not in html
