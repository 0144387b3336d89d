"""Reader feedback for QA reviewers: on the answer page and its source rows, the list's filters and
ordering, reviews resolving it, the feedback list, the export, the health shares. Hostile comments
are shown as text everywhere."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.urls import reverse
from django.utils import timezone

from answers.admin.selectors import citation_health
from answers.feedback import feedback_create
from answers.models import Answer, Document, Feedback, Review

pytestmark = pytest.mark.django_db

HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="alert(1)"> </td></table>'
ESCAPED = (
    "&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img src=x onerror=&quot;alert(1)&quot;&gt; "
    "&lt;/td&gt;&lt;/table&gt;"
)


_readers = itertools.count(1)


def feedback(answer: Answer, verdict: str, *, source: int | None = None, comment: str = "", user=None):
    """Feedback as the API stores it (answers.feedback is its one writer), each call from another
    anonymous reader (a reader's later verdict replaces the earlier: see test_api_feedback.py)."""
    return feedback_create(
        answer=answer,
        verdict=verdict,
        source_number=source,
        comment=comment,
        user=user,
        client=f"c0ffeec0{next(_readers):056x}",
    )


def change_url(answer: Answer) -> str:
    return reverse("admin:answers_answer_change", args=[answer.pk])


def listed(client, **params) -> list:
    response = client.get(reverse("admin:answers_answer_changelist"), params)
    assert response.status_code == 200
    return [a.pk for a in response.context["cl"].result_list]


def test_the_answer_page_shows_feedback_beside_the_trail_and_on_the_flagged_sources_row(
    qa_client, answer_factory, django_user_model
):
    answer = answer_factory(text="Tea [3] and chairs [1].", source_count=4)
    reader = django_user_model.objects.create_user("reader", password="pw")
    feedback(answer, "helpful", user=reader)
    feedback(answer, "unhelpful", source=1, comment=HOSTILE)

    response = qa_client.get(change_url(answer))

    assert response.status_code == 200
    html = response.content.decode()
    assert "Reader feedback" in html
    panel = html.split('class="qa-table qa-feedback"', 1)[1].split("</table>", 1)[0]
    assert "Helpful" in panel
    assert "Unhelpful" in panel
    assert "reader" in panel
    assert "anonymous reader c0ffeec0" in panel
    assert ESCAPED in panel
    assert "<script>window" not in html
    assert "<img src=x" not in html
    # Final [1] is the third source retrieved: its row says a reader flagged it.
    rows = html.split('class="qa-table"', 1)[1].split("</tbody>", 1)[0].split("<tr ")[1:]
    flagged_row = next(r for r in rows if "flagged by readers" in r)
    assert flagged_row.split("<td>", 2)[1].startswith("3<"), "the row of original source 3"
    assert ESCAPED in flagged_row
    assert sum("flagged by readers" in r for r in rows) == 1
    assert "unresolved" in panel


def _source_rows(html: str) -> dict[int, str]:
    """The sources table's rows by original number (its first cell)."""
    body = html.split('class="qa-table"', 1)[1].split("</tbody>", 1)[0]
    rows = [r for r in body.split("<tr ")[1:] if r.startswith('class="qa-source-') and "quotes" not in r[:30]]
    return {int(r.split("<td>", 2)[1].split("<", 1)[0]): r for r in rows}


def _documents(*bodies: str) -> list[Document]:
    return [
        Document.objects.create(
            key=f"https://example.org/support-{i}",
            title=f"Support {i}",
            url=f"https://example.org/support-{i}",
            body=body,
            content_hash=f"{i:064d}",
        )
        for i, body in enumerate(bodies, start=1)
    ]


def test_a_flagged_sources_row_shows_its_support_score_beside_the_readers_flags(qa_client, answer_factory):
    """The lowest score among the sentences citing the flagged source, against the bar: a reviewer
    sees at once whether the support check agrees with the reader."""
    answer = answer_factory(
        text=(
            "Walrus teacups hold carpentry nails [1]. Zebras graze on savanna grassland [2]. "
            "Opera singers rehearse arias tonight [1]."
        ),
        documents=_documents(
            "Walrus teacups hold carpentry nails in the workshop.",
            "Zebras graze on the open savanna grassland.",
            "Quokkas live on an island.",
        ),
    )
    # The record as the support check stored it: source [1] backs sentence 1 but not sentence 3.
    scores = [s["scores"] for s in answer.support["sentences"]]
    assert scores == [{"1": 1.0}, {"2": 1.0}, {"1": 0.0}]
    feedback(answer, "unhelpful", source=1, comment=HOSTILE)
    feedback(answer, "unhelpful", source=2, comment="Zebras are fine.")

    html = qa_client.get(change_url(answer)).content.decode()
    rows = _source_rows(html)

    flagged_low = rows[1].split('class="qa-reader-flags"', 1)[1]
    assert "1 flagged by readers" in flagged_low
    assert 'class="qa-support-score qa-support-below" data-flagged-support="1">0.00</span>' in flagged_low
    assert "(under the bar 0.50; lowest in sentence 3, of 1 and 3 citing it)" in flagged_low
    assert ESCAPED in flagged_low
    flagged_fine = rows[2].split('class="qa-reader-flags"', 1)[1]
    assert 'class="qa-support-score" data-flagged-support="2">1.00</span>' in flagged_fine
    assert "(at or over the bar 0.50; lowest in sentence 2)" in flagged_fine
    # A source nobody flagged (dropped here) shows no score in that column.
    assert "support score" not in rows[3].split('class="qa-reader-flags"', 1)[1]
    assert "<script>window" not in html


def test_a_flagged_source_shows_no_support_score_until_the_record_exists(qa_client, answer_factory):
    answer = answer_factory(text="Tea [1] and chairs [2].", source_count=2)
    Answer.objects.filter(pk=answer.pk).update(support=None)  # not computed yet (or it failed)
    feedback(answer, "unhelpful", source=2, comment="Chairs?")

    html = qa_client.get(change_url(answer)).content.decode()
    flags = _source_rows(html)[2].split('class="qa-reader-flags"', 1)[1]

    assert "1 flagged by readers" in flags
    assert "Chairs?" in flags
    assert "support score" not in flags
    assert "Not computed yet" in html


def test_a_flagged_source_no_sentence_cites_says_so(qa_client, answer_factory):
    """A fallback answer (no markers: every source listed) has a record, but no sentence cites a source."""
    answer = answer_factory(text="Tea is served in the afternoon.", source_count=2)
    assert answer.fallback
    assert answer.support is not None
    feedback(answer, "unhelpful", source=1)

    flags = _source_rows(qa_client.get(change_url(answer)).content.decode())[1].split(
        'class="qa-reader-flags"', 1
    )[1]

    assert "support check: no sentence cites it" in flags


def test_the_answer_list_filters_on_readers_verdicts_and_orders_by_unresolved_feedback(
    qa_client, answer_factory
):
    quiet = answer_factory(text="Quiet [1].", source_count=1)
    praised = answer_factory(text="Praised [1].", source_count=1)
    panned = answer_factory(text="Panned [1].", source_count=2)
    flagged = answer_factory(text="Flagged [1] [2].", source_count=2)
    feedback(praised, "helpful")
    feedback(panned, "unhelpful")
    feedback(panned, "unhelpful")
    for _ in range(3):
        feedback(flagged, "unhelpful", source=2)

    assert set(listed(qa_client, reader_unhelpful="yes")) == {panned.pk, flagged.pk}
    assert set(listed(qa_client, reader_unhelpful="no")) == {quiet.pk, praised.pk}
    assert set(listed(qa_client, reader_flagged="yes")) == {flagged.pk}
    assert set(listed(qa_client, reader_flagged="no")) == {quiet.pk, praised.pk, panned.pk}

    response = qa_client.get(reverse("admin:answers_answer_changelist"))
    html = response.content.decode()
    assert "reader said unhelpful" in html
    assert "reader flagged a source" in html
    columns = list(response.context["cl"].list_display)
    by_unresolved = f"-{columns.index('feedback_unresolved')}"
    ordered = listed(qa_client, o=by_unresolved)
    assert ordered[:3] == [flagged.pk, panned.pk, praised.pk]
    assert [a.unresolved_feedback for a in response.context["cl"].result_list if a.pk == flagged.pk] == [3]


def review_form(**fields: str) -> dict[str, str]:
    """The review form's POST: `fields`, and its source flags' inline with none."""
    management = {"TOTAL_FORMS": "0", "INITIAL_FORMS": "0", "MIN_NUM_FORMS": "0", "MAX_NUM_FORMS": "1000"}
    return {**fields, **{f"source_flags-{name}": value for name, value in management.items()}}


def test_a_review_resolves_the_feedback_sent_before_it(qa_client, reviewer, answer_factory):
    answer = answer_factory(text="Tea [1] and [2].", source_count=2)
    other = answer_factory(text="Other [1].", source_count=1)
    before = [feedback(answer, "unhelpful", source=2), feedback(answer, "helpful")]
    elsewhere = feedback(other, "unhelpful")

    add_url = f"{reverse('admin:answers_review_add')}?answer={answer.pk}"
    response = qa_client.post(
        add_url,
        review_form(answer=str(answer.pk), verdict="wrong_citation", notes="Source 2 is off."),
    )
    assert response.status_code == 302
    review = Review.objects.get(answer=answer)
    after = feedback(answer, "unhelpful", comment="Sent after the review.")

    for item in before:
        item.refresh_from_db()
        assert item.resolved_by == review
        assert item.resolved_at is not None
    elsewhere.refresh_from_db()
    after.refresh_from_db()
    assert elsewhere.resolved_at is None
    assert after.resolved_at is None
    page = qa_client.get(change_url(answer)).content.decode()
    assert "by <a href=" in page
    assert "of reviewer" in page
    assert page.count("<strong>unresolved</strong>") == 1
    # The review cannot be changed (it is final), so it resolves nothing more.
    refused = qa_client.post(
        reverse("admin:answers_review_change", args=[review.pk]),
        review_form(verdict="ok", notes=""),
    )
    assert refused.status_code == 403
    after.refresh_from_db()
    assert after.resolved_at is None


def test_reviewers_list_feedback_and_mark_it_resolved_but_never_add_or_delete_it(qa_client, answer_factory):
    answer = answer_factory(text="Tea [1].", source_count=1)
    first = feedback(answer, "unhelpful", source=1, comment=HOSTILE)
    second = feedback(answer, "helpful")

    listing = qa_client.get(reverse("admin:answers_feedback_changelist"))
    assert listing.status_code == 200
    html = listing.content.decode()
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    assert "<script>window" not in html
    assert qa_client.get(reverse("admin:answers_feedback_add")).status_code == 403
    assert qa_client.get(reverse("admin:answers_feedback_delete", args=[first.pk])).status_code == 403
    unresolved = qa_client.get(reverse("admin:answers_feedback_changelist"), {"resolved": "no"})
    assert {f.pk for f in unresolved.context["cl"].result_list} == {first.pk, second.pk}

    response = qa_client.post(
        reverse("admin:answers_feedback_changelist"),
        {"action": "mark_resolved", "_selected_action": [first.pk]},
    )
    assert response.status_code == 302
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.resolved_at is not None
    assert first.resolved_by is None
    assert second.resolved_at is None
    # Nothing else about it changed.
    assert (first.verdict, first.comment, first.source.final_number) == ("unhelpful", HOSTILE, 1)


def test_marking_feedback_resolved_records_who_did_it_and_logs_it(qa_client, reviewer, answer_factory):
    answer = answer_factory(text="Tea [1].", source_count=1)
    marked, resolved_earlier = feedback(answer, "helpful"), feedback(answer, "unhelpful", source=1)
    resolved_earlier.resolved_at = timezone.now()
    resolved_earlier.save(update_fields=["resolved_at"])

    response = qa_client.post(
        reverse("admin:answers_feedback_changelist"),
        {"action": "mark_resolved", "_selected_action": [marked.pk, resolved_earlier.pk]},
    )

    assert response.status_code == 302
    marked.refresh_from_db()
    resolved_earlier.refresh_from_db()
    assert (marked.resolver, resolved_earlier.resolver) == (reviewer, None)
    logged = LogEntry.objects.filter(content_type=ContentType.objects.get_for_model(Feedback))
    assert [(e.user, e.object_id, e.action_flag, e.change_message) for e in logged] == [
        (reviewer, str(marked.pk), CHANGE, "Marked resolved.")
    ]
    # The feedback's own history page shows it.
    history = qa_client.get(reverse("admin:answers_feedback_history", args=[marked.pk])).content.decode()
    assert "Marked resolved." in history
    page = qa_client.get(reverse("admin:answers_feedback_change", args=[marked.pk])).content.decode()
    assert reviewer.get_username() in page


def test_a_review_records_its_reviewer_as_whoever_resolved_the_feedback(qa_client, reviewer, answer_factory):
    answer = answer_factory(text="Tea [1].", source_count=1)
    sent = feedback(answer, "unhelpful")

    qa_client.post(
        f"{reverse('admin:answers_review_add')}?answer={answer.pk}",
        review_form(answer=str(answer.pk), verdict="ok", notes=""),
    )

    sent.refresh_from_db()
    assert (sent.resolved_by, sent.resolver) == (Review.objects.get(answer=answer), reviewer)


def test_staff_without_the_reviewers_permissions_cannot_see_feedback(
    client, django_user_model, answer_factory
):
    feedback(answer_factory(text="Tea [1].", source_count=1), "helpful")
    clerk = django_user_model.objects.create_user("clerk", password="pw", is_staff=True)
    client.force_login(clerk)
    assert client.get(reverse("admin:answers_feedback_changelist")).status_code == 403
    # Feedback quotes answers: seeing it takes the trail permission as well.
    clerk.user_permissions.add(Permission.objects.get(codename="view_feedback"))
    assert client.get(reverse("admin:answers_feedback_changelist")).status_code == 403


def test_the_export_carries_each_answers_feedback(admin_client, answer_factory, admin_user):
    answer = answer_factory(text="Tea [3] and chairs [1].", source_count=4)
    feedback(answer, "helpful", user=admin_user, comment="Good «tea»")
    feedback(answer, "unhelpful", source=1, comment=HOSTILE)

    response = admin_client.post(
        reverse("admin:answers_answer_changelist"),
        {"action": "export_trails", "_selected_action": [answer.pk]},
    )

    (row,) = [json.loads(line) for line in response.content.decode().splitlines()]
    assert [
        (f["verdict"], f["source"], f["comment"], f["user"], f["resolved_at"]) for f in row["feedback"]
    ] == [
        ("helpful", None, "Good «tea»", admin_user.get_username(), None),
        ("unhelpful", {"final_number": 1, "original_number": 3}, HOSTILE, None, None),
    ]
    assert row["feedback"][1]["client"].startswith("c0ffee")
    assert all(f["created_at"] for f in row["feedback"])


def test_health_counts_the_answers_readers_called_unhelpful_or_flagged(admin_client, answer_factory):
    made = [
        answer_factory(text=f"Answer {i} [1].", source_count=1, provider_name="p", model="m")
        for i in range(4)
    ]
    feedback(made[0], "helpful")
    feedback(made[1], "unhelpful")
    feedback(made[1], "unhelpful")  # one answer, counted once
    feedback(made[2], "unhelpful", source=1)
    (row,) = citation_health(
        since=timezone.now() - timedelta(days=1), until=timezone.now() + timedelta(days=1)
    )
    assert (row.done, row.reader_unhelpful, row.reader_flagged) == (4, 2, 1)
    assert (row.unhelpful_share, row.flagged_share) == (0.5, 0.25)

    page = admin_client.get(reverse("admin:answers_answer_health"))
    cells = next(r for r in page.context["rows"] if r["provider"] == "p")
    assert (cells["unhelpful"], cells["flagged"]) == ("50%", "25%")
    html = page.content.decode()
    assert "readers: unhelpful" in html
    assert "<title>readers: flagged a source: 25%</title>" in html
