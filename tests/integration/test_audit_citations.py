"""`manage.py audit_citations` re-derives every stored trail from its raw text and names those that differ."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from answers.audit import audit_answers
from answers.citations import RULES_VERSION
from answers.models import Answer, AnswerSource

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, CommandError | None]:
    out = StringIO()
    try:
        call_command("audit_citations", *args, stdout=out)
    except CommandError as exc:
        return out.getvalue(), exc
    return out.getvalue(), None


@pytest.fixture
def real_answers(answer_factory):
    return [
        answer_factory(text="A [3] then [1] and [9].", source_count=4),  # renumbered, dropped, stripped
        answer_factory(text="Plain [1] and [2].", source_count=2),
        answer_factory(text="No markers at all.", source_count=2),  # fallback
        answer_factory(text="Range [2-3] and `code [1]` and [1](link).", source_count=3),
        answer_factory(text="Zero sources [1].", source_count=0),
        answer_factory(text="cut [1", source_count=2, fail_kind="upstream"),  # failed: not compared
    ]


def test_passes_on_real_answers(real_answers):
    out, error = run()
    assert error is None
    assert out.strip().splitlines() == ["audit_citations: checked 5 answers, 0 differ"]


def test_catches_a_tampered_final_text(real_answers):
    tampered = real_answers[0]
    Answer.objects.filter(pk=tampered.pk).update(final_text="A [2] then [1] and.")
    out, error = run()
    assert error is not None
    assert error.returncode == 1
    lines = out.strip().splitlines()
    assert lines[-1] == "audit_citations: checked 5 answers, 1 differ"
    assert all(line.startswith(f"{tampered.pk}: ") for line in lines[:-1])
    assert any("final text differs" in line for line in lines[:-1])
    assert str(tampered.pk) in out  # the UUID as the API writes it, with dashes
    assert "-" in str(tampered.pk)


def test_catches_a_tampered_final_number(real_answers):
    tampered = real_answers[1]
    AnswerSource.objects.filter(answer=tampered, original_number=2).update(final_number=7)
    out, error = run()
    assert error is not None
    assert error.returncode == 1
    assert f"{tampered.pk}: source 2: final_number differs: stored 7, recomputed 2" in out
    assert out.strip().splitlines()[-1] == "audit_citations: checked 5 answers, 1 differ"


def test_catches_a_tampered_status(real_answers):
    tampered = real_answers[2]  # fallback: every source keeps its number with status "fallback"
    AnswerSource.objects.filter(answer=tampered, original_number=1).update(status=AnswerSource.Status.CITED)
    out, error = run()
    assert error is not None
    assert f"{tampered.pk}: source 1: status differs: stored 'cited', recomputed 'fallback'" in out


def test_catches_tampered_stripped_fallback_and_counts(real_answers):
    a, b = real_answers[0], real_answers[1]
    Answer.objects.filter(pk=a.pk).update(stripped=[], fallback=True)
    AnswerSource.objects.filter(answer=b, original_number=1).update(citation_count=5, first_cited_offset=0)
    out, error = run()
    assert error is not None
    assert f"{a.pk}: stripped differs" in out
    assert f"{a.pk}: fallback differs" in out
    assert f"{b.pk}: source 1: citation_count differs" in out
    assert f"{b.pk}: source 1: first_cited_offset differs" in out
    assert out.strip().splitlines()[-1] == "audit_citations: checked 5 answers, 2 differ"


def test_failed_answers_are_not_compared(real_answers):
    failed = real_answers[-1]
    Answer.objects.filter(pk=failed.pk).update(final_text="anything")
    assert run()[1] is None


def test_since_limits_the_answers_checked(real_answers):
    old = real_answers[0]
    Answer.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(days=10), final_text="tampered long ago"
    )
    since = (timezone.now() - timedelta(days=2)).date().isoformat()
    out, error = run("--since", since)
    assert error is None
    assert out.strip() == "audit_citations: checked 4 answers, 0 differ"
    out, error = run()
    assert error is not None
    assert str(old.pk) in out


def test_rejects_a_bad_date():
    with pytest.raises(CommandError, match="not a date"):
        call_command("audit_citations", "--since", "yesterday")


def test_service_reports_per_answer(real_answers):
    audits = list(audit_answers(chunk_size=2))
    assert [a.answer_id for a in audits] == [str(a.pk) for a in real_answers[:-1]]
    assert all(a.ok for a in audits)


def test_answers_under_older_rules_are_reported_apart_never_as_failures(real_answers):
    # An answer stored before the citation rules changed (its trail followed the rules of its day):
    # even a final text today's rules would not give is not a failure.
    older = real_answers[3]
    Answer.objects.filter(pk=older.pk).update(rules_version=1, final_text="as the old rules left it")
    out, error = run()
    assert error is None
    assert out.strip().splitlines() == [
        "audit_citations: checked 4 answers, 0 differ",
        "audit_citations: 1 answers computed under older citation rules "
        f"(version 1; current {RULES_VERSION}), not checked",
    ]


@pytest.mark.parametrize(
    ("raw", "count", "final"),
    [
        # Where a hand notion of code and CommonMark parted ways, through the real pipeline: what
        # the trail stores is what the reader sees.
        (
            "Press the ` key to open the console [2].\n\nThen type `help` [1].",
            2,
            "Press the ` key to open the console [1].\n\nThen type `help` [2].",
        ),
        ("> ~~~\n> print(a[1])\n> ~~~\nSee [3].", 3, "> ~~~\n> print(a[1])\n> ~~~\nSee [1]."),
        ("It is great[9] and true [1].", 1, "It is great and true [1]."),
        ("Per [[Source: 2]] and \u30103:0\u2020source\u3011.", 2, "Per [1] and."),
    ],
)
def test_the_stored_trail_says_what_the_reader_sees(answer_factory, raw, count, final):
    answer = answer_factory(text=raw, source_count=count)
    assert answer.final_text == final
    assert answer.rules_version == RULES_VERSION
    out, error = run()
    assert error is None, out
    assert "checked 1 answers, 0 differ" in out
