"""Reviews: the only thing QA reviewers write; each their own, kept with reviewer and time."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from django.urls import reverse

from answers.models import Answer, Review, ReviewSourceFlag
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


def test_reviewers_change_only_their_own_reviews(client, reviewer, other_reviewer, answer_factory):
    answer = answer_factory(text="A [1].", source_count=1)
    mine = Review.objects.create(answer=answer, reviewer=reviewer, verdict="ok")
    theirs = Review.objects.create(answer=answer, reviewer=other_reviewer, verdict="other", notes="theirs")
    client.force_login(reviewer)

    url = reverse("admin:answers_review_change", args=[mine.pk])
    assert (
        client.post(url, review_form(None, verdict="wrong_citation", notes="on second look")).status_code
        == 302
    )
    mine.refresh_from_db()
    assert (mine.verdict, mine.notes, mine.answer_id) == ("wrong_citation", "on second look", answer.pk)

    url = reverse("admin:answers_review_change", args=[theirs.pk])
    page = client.get(url)
    assert page.status_code == 200  # readable, not editable
    assert 'name="_save"' not in page.content.decode()
    assert client.post(url, review_form(None, verdict="ok")).status_code == 403
    theirs.refresh_from_db()
    assert (theirs.verdict, theirs.notes) == ("other", "theirs")


def test_superuser_may_change_any_review(admin_client, reviewer, answer_factory):
    answer = answer_factory(text="A [1].", source_count=1)
    review = Review.objects.create(answer=answer, reviewer=reviewer, verdict="ok")
    url = reverse("admin:answers_review_change", args=[review.pk])
    assert admin_client.post(url, review_form(None, verdict="other")).status_code == 302
    review.refresh_from_db()
    assert review.verdict == "other"
    assert review.reviewer == reviewer


def test_reviews_cannot_be_deleted_through_admin(admin_client, client, reviewer, answer_factory):
    answer = answer_factory(text="A [1].", source_count=1)
    review = Review.objects.create(answer=answer, reviewer=reviewer, verdict="ok")
    url = reverse("admin:answers_review_delete", args=[review.pk])
    assert admin_client.post(url, {"post": "yes"}).status_code == 403
    client.force_login(reviewer)
    assert client.post(url, {"post": "yes"}).status_code == 403
    assert Review.objects.filter(pk=review.pk).exists()


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
