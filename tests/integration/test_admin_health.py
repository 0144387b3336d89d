"""The citation health page: per provider/model shares over a chosen period, and its chart."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils import timezone

from answers.admin.selectors import citation_health, health_total
from answers.models import Answer, Review

pytestmark = pytest.mark.django_db

HEALTH = "admin:answers_answer_health"


@pytest.fixture
def known_answers(answer_factory):
    """Provider "alpha": 4 done + 1 failed; provider "beta": 1 done; one alpha answer outside the period."""
    alpha = {"provider_name": "alpha", "model": "a-1"}
    made = [
        answer_factory(
            text="A [3] then [1] and [9].", source_count=4, **alpha
        ),  # dropped, renumbered, stripped
        answer_factory(text="Plain [1] and [2].", source_count=2, **alpha),  # clean
        answer_factory(text="No markers at all.", source_count=3, **alpha),  # fallback
        answer_factory(text="[2] only.", source_count=2, **alpha),  # dropped (1), renumbered (2 → 1)
        answer_factory(text="cut [1", source_count=2, fail_kind="upstream", **alpha),  # failed
        answer_factory(
            text="[1] and [4].", source_count=3, provider_name="beta", model="b-1"
        ),  # dropped, stripped
    ]
    old = answer_factory(text="[2] old.", source_count=2, **alpha)
    Answer.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=90))
    return made


def period(days: int = 30):
    now = timezone.now()
    return {"since": now - timedelta(days=days), "until": now + timedelta(days=1)}


def test_health_figures_on_a_known_set_of_answers(known_answers):
    rows = {(r.provider, r.model): r for r in citation_health(**period())}
    assert set(rows) == {("alpha", "a-1"), ("beta", "b-1")}

    alpha = rows["alpha", "a-1"]
    assert (alpha.answers, alpha.done, alpha.failed) == (5, 4, 1)
    assert (alpha.with_dropped, alpha.renumbered, alpha.fallback, alpha.with_stripped) == (2, 2, 1, 1)
    assert (alpha.retrieved, alpha.cited) == (4 + 2 + 3 + 2, 2 + 2 + 0 + 1)
    assert alpha.dropped_share == pytest.approx(0.5)
    assert alpha.renumbered_share == pytest.approx(0.5)
    assert alpha.fallback_share == pytest.approx(0.25)
    assert alpha.stripped_share == pytest.approx(0.25)
    assert alpha.failed_share == pytest.approx(0.2)
    assert alpha.avg_retrieved == pytest.approx(11 / 4)
    assert alpha.avg_cited == pytest.approx(5 / 4)

    beta = rows["beta", "b-1"]
    assert (beta.answers, beta.done, beta.failed, beta.with_dropped, beta.renumbered) == (1, 1, 0, 1, 0)
    assert (beta.with_stripped, beta.retrieved, beta.cited) == (1, 3, 1)

    total = health_total(rows.values())
    assert (total.answers, total.done, total.failed, total.with_dropped) == (6, 5, 1, 3)


def test_the_period_decides_which_answers_count(known_answers):
    rows = {(r.provider, r.model): r for r in citation_health(**period(days=120))}
    assert rows["alpha", "a-1"].answers == 6
    now = timezone.now()
    assert citation_health(since=now + timedelta(days=1), until=now + timedelta(days=2)) == []


def test_health_page_shows_the_figures_and_a_chart(admin_client, known_answers):
    response = admin_client.get(reverse(HEALTH))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Citation health" in html
    alpha = next(r for r in response.context["rows"] if r["provider"] == "alpha")
    assert alpha == {
        "provider": "alpha",
        "model": "a-1",
        "answers": 5,
        "done": 4,
        "dropped": "50%",
        "renumbered": "50%",
        "fallback": "25%",
        "stripped": "25%",
        "normalized": "0%",
        "unhelpful": "0%",
        "flagged": "0%",
        "support_checked": 4,
        "unsupported": "75%",  # three of them cite documents whose words their sentences lack
        "grounded_uncited": "0%",
        "declined": "0%",
        "coverage_checked": 4,
        # "What do the documents say?": no cited "Doc n" page holds "documents".
        "may_not_address": "100%",
        "failed": "20%",
        "avg_retrieved": "2.75",
        "avg_cited": "1.25",
        "reviewed": 0,
        **{f"verdict_{verdict}": "—" for verdict in Review.Verdict.values},
    }
    assert response.context["total"]["answers"] == 6
    assert "<svg" in html
    assert "alpha / a-1" in html
    assert "<title>with dropped sources: 50%</title>" in html


def test_health_page_takes_a_period(admin_client, known_answers):
    today = timezone.localdate()
    response = admin_client.get(
        reverse(HEALTH), {"since": (today - timedelta(days=100)).isoformat(), "until": today.isoformat()}
    )
    alpha = next(r for r in response.context["rows"] if r["provider"] == "alpha")
    assert alpha["answers"] == 6
    response = admin_client.get(reverse(HEALTH), {"since": "2001-01-01", "until": "2001-01-31"})
    assert response.context["rows"] == []
    assert "No answers in this period." in response.content.decode()


def test_health_page_reports_a_bad_period(admin_client, known_answers):
    response = admin_client.get(reverse(HEALTH), {"since": "2030-01-02", "until": "2030-01-01"})
    assert response.status_code == 200
    assert "The period starts after it ends." in response.content.decode()
    response = admin_client.get(reverse(HEALTH), {"since": "not a date"})
    assert response.status_code == 200
    assert response.context["total"]["answers"] == 6  # the default period


def test_health_page_escapes_provider_names(admin_client, answer_factory):
    answer_factory(text="[1].", source_count=1, provider_name="<script>x()</script>", model="<b>m</b>")
    html = admin_client.get(reverse(HEALTH)).content.decode()
    assert "<script>x()</script>" not in html
    assert "<b>m</b>" not in html
    assert "&lt;script&gt;x()&lt;/script&gt;" in html


def test_health_page_for_qa_reviewers_only(client, django_user_model):
    url = reverse(HEALTH)
    staff = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)
    assert client.get(url).status_code == 403
    staff.groups.add(Group.objects.get(name="QA reviewers"))
    assert client.get(url).status_code == 200


def test_the_share_of_answers_whose_markers_needed_repair_per_model(admin_client, answer_factory):
    answer_factory(text="A 【2】 b [citation:1].", source_count=2, provider_name="gamma", model="g-1")
    answer_factory(text="A [2] b [1].", source_count=2, provider_name="gamma", model="g-1")
    answer_factory(text="A [1].", source_count=1, provider_name="delta", model="d-1")

    rows = {(r.provider, r.model): r for r in citation_health(**period())}
    assert (rows["gamma", "g-1"].with_normalized, rows["gamma", "g-1"].normalized_share) == (1, 0.5)
    assert rows["delta", "d-1"].normalized_share == 0.0
    html = admin_client.get(reverse(HEALTH)).content.decode()
    assert '<th scope="row">markers repaired</th>' in html
    assert "<title>markers repaired (dialects): 50%</title>" in html


def test_reviewers_verdict_shares_count_each_answers_latest_review(admin_client, admin_user, answer_factory):
    """Per provider/model, the share of each verdict among the reviewed answers, by each answer's latest
    review: a corrected review counts as its correction, an unreviewed answer not at all."""
    corrected = answer_factory(text="A [1].", source_count=1, provider_name="gamma", model="g-1")
    ok = answer_factory(text="B [1].", source_count=1, provider_name="gamma", model="g-1")
    answer_factory(text="C [1].", source_count=1, provider_name="gamma", model="g-1")  # unreviewed
    other = answer_factory(text="D [1].", source_count=1, provider_name="delta", model="d-1")
    Review.objects.create(answer=corrected, reviewer=admin_user, verdict=Review.Verdict.OK)
    Review.objects.create(answer=corrected, reviewer=admin_user, verdict=Review.Verdict.WRONG_CITATION)
    Review.objects.create(answer=ok, reviewer=admin_user, verdict=Review.Verdict.OK)
    Review.objects.create(answer=other, reviewer=admin_user, verdict=Review.Verdict.OFF_TOPIC)

    response = admin_client.get(reverse(HEALTH))

    rows = {row["provider"]: row for row in response.context["rows"]}
    assert (rows["gamma"]["reviewed"], rows["gamma"]["verdict_ok"]) == (2, "50%")
    assert rows["gamma"]["verdict_wrong_citation"] == "50%"
    assert rows["gamma"]["verdict_off_topic"] == "0%"
    assert (rows["delta"]["reviewed"], rows["delta"]["verdict_off_topic"]) == (1, "100%")
    total = response.context["total"]
    assert (total["reviewed"], total["verdict_ok"], total["verdict_off_topic"]) == (3, "33%", "33%")
    # One row per figure, one column per provider/model and all of them.
    html = response.content.decode()
    verdicts = html.split('<tr class="qa-health-verdict_ok">', 1)[1].split("</tr>", 1)[0]
    assert re.findall(r"<td>([^<]*)</td>", verdicts) == ["0%", "50%", "33%"]  # delta, gamma, all


def test_the_page_opens_with_one_line_and_folds_the_definitions(admin_client, known_answers):
    html = admin_client.get(reverse(HEALTH)).content.decode()
    lead = re.search(r'<p class="qa-health-lead">(.*?)</p>', html, re.S)
    assert lead is not None
    assert len(lead[1]) < 120
    definitions = re.search(
        r'<details class="qa-definitions">\s*<summary>(.*?)</summary>(.*?)</details>', html, re.S
    )
    assert definitions is not None
    assert "over the done answers whose support check is computed" not in html.replace(definitions[0], "")
    assert "support check is computed" in definitions[2]
    # The chart names each bar beside it; no colour key.
    assert '<text class="qa-chart-label"' in html
    assert html.count('class="qa-chart-label"') == html.count("<rect ")


def test_the_admin_index_links_the_health_page_for_qa_reviewers_only(client, django_user_model):
    url = reverse(HEALTH)
    staff = django_user_model.objects.create_user("plainstaff", password="pw", is_staff=True)
    client.force_login(staff)
    assert f'href="{url}"' not in client.get(reverse("admin:index")).content.decode()
    staff.groups.add(Group.objects.get(name="QA reviewers"))
    index = client.get(reverse("admin:index")).content.decode()
    assert f'<a href="{url}" data-health-link>Citation health</a>' in index
