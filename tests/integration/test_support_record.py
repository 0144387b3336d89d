"""The support record a done answer gets after `done`: stored, in the API trail, on the admin page.

Answers come from the real pipeline (JSON path) with scripted replies over three
documents on unrelated topics; the factory waits for the record the pipeline
computes once the answer is done (nothing here calls compute_support itself).
"""

from __future__ import annotations

import json
import logging
import re
from html import unescape

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from answers.conf import conf
from answers.models import Answer
from answers.support.compute import compute_support
from tests.fixtures.providers import Reply
from tests.fixtures.support_texts import LIGHTHOUSE, TEACUPS, VOLCANO

pytestmark = pytest.mark.django_db


# Source 1 copied, but marked [2] (the lighthouse source).
MISCITED = (
    "Walrus teacups are carved from driftwood by coastal carpenters [1]. "
    "Each teacup holds exactly one hundred millilitres of kelp tea [2]."
)
# The second sentence copied from source 3, which the reply never cites (so it is dropped).
UNCITED = (
    "Walrus teacups are carved from driftwood by coastal carpenters [1]. Volcanic soil is rich in potassium."
)
# Every sentence copied from the source it cites.
FAITHFUL = (
    "Fresnel lenses focus the lighthouse beam into a narrow horizontal band [2]. "
    "Each teacup holds exactly one hundred millilitres of kelp tea [1]."
)

SENTENCE_KEYS = {"text", "start", "end", "cited", "scores", "verdict", "grounded_by", "passages"}


@pytest.fixture
def topics(make_document):
    """Three documents on unrelated topics: sources 1, 2, 3 in that order."""
    return [
        make_document(title="Walrus teacups", body=TEACUPS, url="https://example.org/teacups"),
        make_document(title="Lighthouse optics", body=LIGHTHOUSE, url="https://example.org/lighthouse"),
        make_document(title="Volcanic soil", body=VOLCANO, url="https://example.org/volcano"),
    ]


def trail(client, answer: Answer) -> dict:
    response = client.get(f"/api/answers/{answer.pk}/trail/")
    assert response.status_code == 200
    return response.json()


def page(client, answer: Answer) -> str:
    response = client.get(reverse("admin:answers_answer_change", args=[answer.pk]))
    assert response.status_code == 200
    return response.content.decode()


def sentence_spans(html: str) -> list[tuple[str, str, str]]:
    """(number, verdict class, text) of each sentence the support panel marks."""
    spans = re.findall(
        r'<span class="qa-support qa-support-(\w+)" data-sentence="(\d+)"[^>]*>'
        r'<sup class="qa-support-number">\d+</sup>(.*?)</span>',
        html,
        re.DOTALL,
    )
    return [(number, css, unescape(text)) for css, number, text in spans]


def test_a_sentence_copied_from_source_1_but_marked_2_is_unsupported(admin_client, answer_factory, topics):
    answer = answer_factory(text=MISCITED, documents=topics[:2])

    support = trail(admin_client, answer)["support"]
    assert set(support) >= {"method", "min_score", "sentences"}
    assert (support["method"], support["min_score"]) == ("lexical", conf.SUPPORT_MIN)
    first, second = support["sentences"]
    assert set(first) == set(second) == SENTENCE_KEYS
    assert (first["verdict"], first["cited"], first["grounded_by"]) == ("supported", [1], [])
    assert (second["verdict"], second["cited"], second["grounded_by"]) == ("unsupported", [2], [])
    assert second["scores"]["2"] < support["min_score"]
    assert answer.final_text[second["start"] : second["end"]] == second["text"]
    assert second["text"].endswith("[2].")  # the marker after the sentence belongs to it
    # The supported citation names the passage of its source that says it; the unsupported one none.
    start, end = first["passages"]["1"]
    excerpt = answer.sources.get(final_number=1).excerpt
    assert "carved from driftwood by coastal carpenters" in excerpt[start:end]
    assert second["passages"] == {}

    html = page(admin_client, answer)
    assert sentence_spans(html) == [
        ("1", "supported", first["text"]),
        ("2", "unsupported", second["text"]),
    ]
    # Source 2's score beside the sentence, marked as under the bar.
    assert re.search(
        r'<span class="qa-support-score qa-support-below" data-source="2" title="\[2\] Lighthouse optics">'
        rf" \[2\] {second['scores']['2']:.2f}</span>",
        html,
    )


def test_support_reads_the_final_markers_the_trail_stored(answer_factory, topics):
    answer = answer_factory(text=FAITHFUL, documents=topics[:2])
    first, second = answer.support["sentences"]
    assert (first["cited"], second["cited"]) == ([1], [2])
    # The record follows the trail's markers, not a new scan of the text: with the stored
    # record of the first marker gone (as a reader of the trail would see it), that sentence cites nothing.
    answer.markers = [
        entry for entry in answer.markers if entry["final_start"] != answer.final_text.index("[1]")
    ]
    answer.save(update_fields=["markers"])
    record = compute_support(Answer.objects.get(pk=answer.pk))
    assert [s["cited"] for s in record["sentences"]] == [[], [2]]
    assert record["sentences"][0]["verdict"] == "uncited"


def test_a_sentence_copied_from_a_source_never_cited_is_grounded_by_that_dropped_source(
    admin_client, answer_factory, topics
):
    answer = answer_factory(text=UNCITED, documents=topics)
    assert answer.sources.get(original_number=3).final_number is None  # dropped

    support = trail(admin_client, answer)["support"]
    first, second = support["sentences"]
    assert first["verdict"] == "supported"
    assert (second["verdict"], second["cited"], second["scores"], second["grounded_by"]) == (
        "uncited",
        [],
        {},
        [3],
    )

    html = page(admin_client, answer)
    assert [(n, css) for n, css, _ in sentence_spans(html)] == [("1", "supported"), ("2", "grounded")]
    assert (
        '<span class="qa-support-grounding" data-grounded-by="3" title="Volcanic soil"> ← source 3 (dropped)'
        in html
    )
    # The sources panel: the dropped source is called out.
    assert '<em>dropped</em><strong class="qa-relied-on">, but sentence 2 relies on it</strong>' in html


def test_a_reply_copied_from_the_sources_it_cites_is_all_supported(admin_client, answer_factory, topics):
    answer = answer_factory(text=FAITHFUL, documents=topics)

    support = trail(admin_client, answer)["support"]
    assert [(s["verdict"], s["cited"]) for s in support["sentences"]] == [
        ("supported", [1]),
        ("supported", [2]),
    ]
    assert all(score >= support["min_score"] for s in support["sentences"] for score in s["scores"].values())

    html = page(admin_client, answer)
    assert [css for _, css, _ in sentence_spans(html)] == ["supported", "supported"]
    assert "qa-support-below" not in html
    assert "relies on it" not in html


def test_the_list_filters_find_unsupported_citations_and_grounded_uncited_sentences(
    admin_client, answer_factory, topics
):
    miscited = answer_factory(text=MISCITED, documents=topics[:2], question="Miscited?")
    uncited = answer_factory(text=UNCITED, documents=topics, question="Uncited?")
    faithful = answer_factory(text=FAITHFUL, documents=topics, question="Faithful?")
    assert (miscited.unsupported_count, miscited.grounded_uncited_count) == (1, 0)
    assert (uncited.unsupported_count, uncited.grounded_uncited_count) == (0, 1)
    assert (faithful.unsupported_count, faithful.grounded_uncited_count) == (0, 0)

    url = reverse("admin:answers_answer_changelist")
    listing = admin_client.get(url).content.decode()
    assert "By unsupported citations" in listing
    assert "By grounded but uncited" in listing

    def listed(**query: str) -> set[str]:
        html = admin_client.get(url, query).content.decode()
        return {q for q in ("Miscited?", "Uncited?", "Faithful?") if q in html}

    assert listed(unsupported="yes") == {"Miscited?"}
    assert listed(unsupported="no") == {"Uncited?", "Faithful?"}
    assert listed(grounded_uncited="yes") == {"Uncited?"}
    assert listed(grounded_uncited="no") == {"Miscited?", "Faithful?"}

    # The trails' export carries the records.
    response = admin_client.post(
        url, {"action": "export_trails", "_selected_action": [miscited.pk, uncited.pk, faithful.pk]}
    )
    exported = {row["id"]: row["support"] for row in map(json.loads, response.content.decode().splitlines())}
    assert exported == {str(a.pk): a.support for a in (miscited, uncited, faithful)}


def test_the_health_page_gives_the_shares_per_provider_and_model(admin_client, answer_factory, topics):
    alpha = {"provider_name": "alpha", "model": "a-1"}
    answer_factory(text=MISCITED, documents=topics[:2], **alpha)
    answer_factory(text=UNCITED, documents=topics, **alpha)
    answer_factory(text=FAITHFUL, documents=topics, **alpha)
    answer_factory(text=FAITHFUL, documents=topics, **alpha)
    answer_factory(text=MISCITED, documents=topics[:2], provider_name="beta", model="b-1")

    html = admin_client.get(reverse("admin:answers_answer_health")).content.decode()

    def text(cell: str) -> str:
        return unescape(re.sub(r"<[^>]+>", "", cell)).strip()

    # The table has a row per figure and a column per provider/model, then one for all of them.
    head = html.split("<thead>")[1].split("</thead>")[0]
    columns = [text(c) for c in re.findall(r"<th[^>]*>(.*?)</th>", head, re.DOTALL)][1:]
    figures = {
        text(label): [text(c) for c in re.findall(r"<td>(.*?)</td>", cells, re.DOTALL)]
        for label, cells in re.findall(
            r'<tr class="qa-health-[a-z_]+">\s*<th scope="row">(.*?)</th>(.*?)</tr>', html, re.DOTALL
        )
    }

    def shares(name: str) -> tuple[str, str, str]:
        at = columns.index(name)
        return tuple(  # type: ignore[return-value]
            figures[figure][at]
            for figure in ("support checked", "unsupported citations", "grounded but uncited")
        )

    assert shares("alpha / a-1") == ("4", "25%", "25%")
    assert shares("beta / b-1") == ("1", "100%", "0%")
    assert shares("All") == ("5", "40%", "20%")
    assert "unsupported citations: 25%" in html  # the chart's bar


def test_what_the_model_and_the_documents_say_is_escaped(admin_client, answer_factory, make_document):
    evil = make_document(
        title='Teacups <img src=x onerror="window.__pwned=1">',
        body="Walrus teacups <script>window.__pwned = 1</script> are carved from driftwood.",
    )
    other = make_document(title="Volcanic <b>soil</b>", body=VOLCANO)
    answer = answer_factory(
        text="Walrus teacups <script>window.__pwned = 1</script> are carved from driftwood [2]. "
        "Volcanic soil is rich in potassium.",
        documents=[other, evil],
    )
    html = page(admin_client, answer)
    panel = html.split("qa-support-text")[1].split("</div>")[0]
    for tag in ("<script>", "<img", "<b>"):
        assert tag not in panel
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in panel
    assert 'title="[1] Teacups &lt;img src=x onerror=&quot;window.__pwned=1&quot;&gt;"' in panel
    assert 'title="Volcanic &lt;b&gt;soil&lt;/b&gt;"' in panel  # grounded by the dropped source
    assert "<script>window.__pwned" not in html


def test_a_failure_to_compute_is_logged_and_leaves_null(
    admin_client, answer_factory, topics, settings, caplog
):
    settings.ANSWERS_SUPPORT_METHOD = "answers.support.nowhere.Method"
    with caplog.at_level(logging.ERROR, logger="answers.pipeline.support"):
        answer = answer_factory(text=MISCITED, documents=topics[:2])

    assert answer.status == Answer.Status.DONE
    assert answer.final_text == MISCITED
    assert (answer.support, answer.unsupported_count, answer.grounded_uncited_count) == (None, None, None)
    assert f"answer {answer.pk}: support record not computed" in caplog.text
    assert trail(admin_client, answer)["support"] is None
    assert "Not computed yet" in page(admin_client, answer)


def test_a_failed_answer_gets_no_record(admin_client, answer_factory, topics):
    answer = answer_factory(text="Walrus teacups [1", documents=topics, fail_kind="upstream")
    assert answer.status == Answer.Status.FAILED
    assert answer.support is None
    assert trail(admin_client, answer)["support"] is None


def test_the_judge_rules_after_done_and_a_malformed_reply_falls_back_and_says_so(
    admin_client, answer_factory, topics, openai_settings, stub_openai
):
    openai_settings.ANSWERS_SUPPORT_METHOD = "judge"
    stub_openai.enqueue(Reply(pieces=['{"verdicts": [{"sentence": 1, "source": 1, "supported": true}, ']))
    answer = answer_factory(text=MISCITED, documents=topics[:2])

    (request,) = stub_openai.requests  # the judge, asked once (the answer came from the scripted provider)
    assert "Pairs to judge" in request["messages"][1]["content"]
    support = trail(admin_client, answer)["support"]
    assert support["method"] == "lexical"
    assert support["fallback"] == {"method": "judge", "reason": "The judge's reply was not JSON."}
    assert [s["verdict"] for s in support["sentences"]] == ["supported", "unsupported"]
    html = page(admin_client, answer)
    assert (
        "The configured method (judge) failed, so lexical stood in: The judge&#x27;s reply was not JSON."
        in html
    )


def test_the_judge_verdicts_are_stored(admin_client, answer_factory, topics, openai_settings, stub_openai):
    openai_settings.ANSWERS_SUPPORT_METHOD = "judge"
    stub_openai.enqueue(
        Reply(
            pieces=[
                '{"verdicts": [{"sentence": 1, "source": 1, "supported": true},'
                ' {"sentence": 2, "source": 2, "supported": false}]}'
            ]
        )
    )
    answer = answer_factory(text=MISCITED, documents=topics[:2])

    support = trail(admin_client, answer)["support"]
    assert (support["method"], support["fallback"]) == ("judge", None)
    assert [(s["verdict"], s["scores"]) for s in support["sentences"]] == [
        ("supported", {"1": 1.0}),
        ("unsupported", {"2": 0.0}),
    ]


def test_check_support_recomputes_stored_records_after_a_setting_change(
    answer_factory, topics, settings, capsys
):
    answer = answer_factory(text=FAITHFUL, documents=topics)
    assert answer.unsupported_count == 0

    settings.ANSWERS_SUPPORT_MIN = 1.0
    Answer.objects.filter(pk=answer.pk).update(support=None, unsupported_count=None)  # as if never computed
    call_command("check_support")

    answer.refresh_from_db()
    assert answer.support["min_score"] == 1.0
    assert answer.unsupported_count == sum(s["verdict"] == "unsupported" for s in answer.support["sentences"])
    out = capsys.readouterr()
    assert "Stored the support record of 1 answer(s) (lexical, bar 1)." in out.out
    # audit_citations is unaffected: the stored pair still matches its re-finalization.
    call_command("audit_citations")


def test_check_support_since_a_day_and_a_bad_date(answer_factory, topics, capsys):
    answer_factory(text=FAITHFUL, documents=topics)
    call_command("check_support", "--since", "2999-01-01")
    assert "No done answers to check." in capsys.readouterr().out
    call_command("check_support", "--since", "2000-01-01")
    assert "Stored the support record of 1 answer(s)" in capsys.readouterr().out

    with pytest.raises(CommandError, match="'yesterday' is not a date \\(YYYY-MM-DD\\)"):
        call_command("check_support", "--since", "yesterday")


def test_the_page_shows_what_it_can_of_a_damaged_record(admin_client, answer_factory, topics):
    answer = answer_factory(text=MISCITED, documents=topics[:2])
    good = answer.support["sentences"][0]
    damaged = {
        "method": "lexical",
        "sentences": [good, "junk", {**good, "start": 500, "end": 600}, {**good, "verdict": "maybe"}],
    }
    Answer.objects.filter(pk=answer.pk).update(support=damaged)

    html = page(admin_client, answer)
    assert [(n, css) for n, css, _ in sentence_spans(html)] == [("1", "supported")]
    panel = html.split("qa-support-text")[1].split("</div>")[0]
    # The rest of the text is there, unmarked.
    assert "Each teacup holds exactly one hundred millilitres of kelp tea [2]." in unescape(panel)
