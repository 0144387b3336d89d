"""compute_support on answers made by the real pipeline: which sentences their sources back."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext

from answers.conf import conf
from answers.models import Answer, Chunk
from answers.support.compute import acompute_support, compute_support
from answers.support.corpus import corpus_idf
from tests.fixtures.support_texts import LIGHTHOUSE, TEACUPS, VOLCANO


@pytest.fixture
def topics(make_document):
    """Three documents on unrelated topics: sources 1, 2, 3 in that order."""
    return [
        make_document(title="Walrus teacups", body=TEACUPS),
        make_document(title="Lighthouse optics", body=LIGHTHOUSE),
        make_document(title="Volcanic soil", body=VOLCANO),
    ]


def _sources(answer: Answer) -> dict[int, tuple[str, int | None]]:
    return {s.original_number: (s.status, s.final_number) for s in answer.sources.all()}


def test_a_sentence_copied_from_source_1_but_marked_2_is_unsupported(answer_factory, topics):
    answer = answer_factory(
        text="Walrus teacups are carved from driftwood by coastal carpenters [1]. "
        "Each teacup holds exactly one hundred millilitres of kelp tea [2].",
        documents=topics[:2],
    )
    assert _sources(answer) == {1: ("cited", 1), 2: ("cited", 2)}

    record = compute_support(answer)

    first, second = record["sentences"]
    assert (first["verdict"], first["cited"]) == ("supported", [1])
    assert first["scores"]["1"] == 1.0
    assert (second["verdict"], second["cited"]) == ("unsupported", [2])
    assert second["scores"]["2"] < record["min_score"] == conf.SUPPORT_MIN
    assert answer.final_text[second["start"] : second["end"]] == second["text"]


def test_a_sentence_copied_from_a_source_never_cited_is_uncited_and_grounded_by_it(answer_factory, topics):
    answer = answer_factory(
        text="Walrus teacups are carved from driftwood by coastal carpenters [1]. "
        "Volcanic soil is rich in potassium and phosphorus.",
        documents=topics,
    )
    assert _sources(answer)[3] == ("dropped", None)

    record = compute_support(answer)

    first, second = record["sentences"]
    assert first["verdict"] == "supported"
    assert (second["verdict"], second["cited"], second["scores"]) == ("uncited", [], {})
    assert second["grounded_by"] == [3]


def test_a_reply_copied_from_the_sources_it_cites_is_all_supported(answer_factory, topics):
    answer = answer_factory(
        text=[
            "Fresnel lenses focus the lighthouse beam into a narrow horizontal band [2]. ",
            "The lens rotates on a bath of mercury to reduce friction. [2] ",
            "Each teacup holds exactly one hundred millilitres of kelp tea [1].",
        ],
        documents=topics,
    )
    # Renumbered in first-citation order: original 2 is [1], original 1 is [2]; 3 dropped.
    assert _sources(answer) == {1: ("cited", 2), 2: ("cited", 1), 3: ("dropped", None)}

    record = compute_support(answer)

    assert record["method"] == "lexical"
    assert [(s["verdict"], s["cited"]) for s in record["sentences"]] == [
        ("supported", [1]),
        ("supported", [1]),
        ("supported", [2]),
    ]
    assert all(score == 1.0 for s in record["sentences"] for score in s["scores"].values())


def test_compute_support_only_reads(answer_factory, topics):
    answer = answer_factory(text="Volcanic soil is rich [3]. Teacups hold tea.", documents=topics)
    with CaptureQueriesContext(connection) as queries:
        compute_support(answer)
    writes = [q["sql"] for q in queries if not q["sql"].lstrip().upper().startswith(("SELECT", "WITH"))]
    assert writes == []


def test_the_bar_comes_from_the_setting(answer_factory, topics, settings):
    answer = answer_factory(text="Walrus teacups are carved from driftwood in Etna [1].", documents=topics)
    settings.ANSWERS_SUPPORT_MIN = 0.0
    assert compute_support(answer)["sentences"][0]["verdict"] == "supported"
    settings.ANSWERS_SUPPORT_MIN = 1.0
    record = compute_support(answer)
    assert record["min_score"] == 1.0
    assert record["sentences"][0]["verdict"] == "unsupported"


def test_a_failed_answer_has_no_support_record(answer_factory, topics):
    answer = answer_factory(text="Half an answer [1]", documents=topics, fail_kind="upstream")
    assert answer.status == Answer.Status.FAILED
    with pytest.raises(ValueError, match="done answers only"):
        compute_support(answer)


@pytest.mark.django_db(transaction=True)
async def test_async_callers_get_the_same_record(answer_factory, topics):
    answer = await sync_to_async(answer_factory)(
        text="Walrus teacups are carved from driftwood [1]. Volcanic soil is rich in potassium.",
        documents=topics,
    )
    record = await acompute_support(answer)
    assert record == await sync_to_async(compute_support)(answer)
    assert [s["verdict"] for s in record["sentences"]] == ["supported", "uncited"]


def test_word_weights_come_from_the_search_index_and_follow_corpus_changes(make_document, topics):
    before = corpus_idf(["walrus", "lighthouse", "unheard"])
    assert before.documents == Chunk.objects.count()
    assert before.counts["walrus"] == 1
    assert before.counts["unheard"] == 0
    assert before("unheard") > before("walrus")

    make_document(title="More walruses", body="A walrus naps. Walruses dive.")
    after = corpus_idf(["walrus", "lighthouse"])
    assert after.counts["walrus"] == 2  # the index stems "walruses" to "walrus"
    assert after("walrus") < before("walrus")
