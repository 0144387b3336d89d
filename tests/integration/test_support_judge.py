"""The `judge` support method against the OpenAI stub server: one request, a strict reply, or fallback."""

from __future__ import annotations

import json
import re

import pytest

from answers.providers.openai_provider import OpenAIProvider
from answers.support.compute import compute_support
from answers.support.judge import JUDGE_SYSTEM_PROMPT, JudgeMethod
from answers.support.methods import LexicalMethod, support_inputs, support_record
from answers.support.record import SourceText
from tests.fixtures.providers import Reply, StubOpenAIServer

SOURCES = [
    SourceText(1, 1, "Walrus teacups are carved from driftwood by coastal carpenters."),
    SourceText(2, 2, "Fresnel lenses focus the lighthouse beam into a narrow band."),
    SourceText(3, None, "Volcanic soil is rich in potassium."),
]
TEXT = "Walrus teacups are carved from driftwood [1]. Lighthouse lenses are driftwood [2]. Soil is rich."


def verdicts_from_request(supported: set[tuple[int, int]]):
    """A stub reply that rules on exactly the pairs the request lists: supported when in `supported`."""

    def reply(body):
        pairs = re.findall(r"^S(\d+) N(\d+)$", body["messages"][1]["content"], re.MULTILINE)
        verdicts = [
            {"sentence": int(s), "source": int(n), "supported": (int(s), int(n)) in supported}
            for s, n in pairs
        ]
        text = json.dumps({"verdicts": verdicts})
        return Reply(pieces=[text[: len(text) // 2], text[len(text) // 2 :]])

    return reply


def _judge(stub: StubOpenAIServer) -> JudgeMethod:
    return JudgeMethod(
        OpenAIProvider(base_url=stub.base_url, api_key="k", model="judge-model", timeout=5, max_retries=0)
    )


async def test_judge_verdicts_become_the_record_in_one_request(stub_openai):
    stub_openai.enqueue(verdicts_from_request({(1, 1), (3, 3)}))
    record = await support_record(support_inputs(TEXT, SOURCES), method=_judge(stub_openai), min_score=0.5)

    assert (record["method"], record["fallback"]) == ("judge", None)
    assert [(s["verdict"], s["scores"], s["grounded_by"]) for s in record["sentences"]] == [
        ("supported", {"1": 1.0}, []),
        ("unsupported", {"2": 0.0}, []),
        ("uncited", {}, [3]),
    ]
    (request,) = stub_openai.requests
    assert request["model"] == "judge-model"
    assert request["messages"][0]["content"] == JUDGE_SYSTEM_PROMPT
    assert re.findall(r"^S\d+ N\d+$", request["messages"][1]["content"], re.MULTILINE) == [
        "S1 N1",
        "S2 N2",
        "S3 N1",
        "S3 N2",
        "S3 N3",
    ]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        pytest.param(Reply(pieces=["Sure, ", "all supported!"]), "not JSON", id="prose-instead-of-json"),
        pytest.param(Reply(pieces=['{"verdicts": [']), "not JSON", id="json-cut-short"),
        pytest.param(
            Reply(pieces=[json.dumps({"verdicts": [{"sentence": 1, "source": 1, "supported": True}]})]),
            "without a verdict",
            id="pairs-missing",
        ),
        pytest.param(Reply(status=400), "rejected the request", id="server-refuses"),
        pytest.param(Reply(pieces=["{"], cut_after=1), "could not be asked", id="connection-cut"),
    ],
)
async def test_a_bad_judge_reply_falls_back_to_lexical_and_says_so(stub_openai, reply, reason):
    stub_openai.enqueue(reply)
    inputs = support_inputs(TEXT, SOURCES)
    record = await support_record(inputs, method=_judge(stub_openai), min_score=0.5)

    assert record["method"] == "lexical"
    assert record["fallback"]["method"] == "judge"
    assert reason in record["fallback"]["reason"]
    lexical = await support_record(inputs, method=LexicalMethod(), min_score=0.5)
    assert record["sentences"] == lexical["sentences"]


def test_compute_support_asks_the_judge_when_set_to(answer_factory, openai_settings, stub_openai):
    answer = answer_factory(text="Doc one says something [1]. Nothing else.", source_count=2)
    openai_settings.ANSWERS_SUPPORT_METHOD = "judge"  # after the answer: its own record was lexical
    stub_openai.enqueue(verdicts_from_request({(1, 1)}))

    record = compute_support(answer)

    assert (record["method"], record["fallback"]) == ("judge", None)
    assert [s["verdict"] for s in record["sentences"]] == ["supported", "uncited"]
    assert len(stub_openai.requests) == 1


def test_compute_support_falls_back_when_the_judge_is_malformed(answer_factory, openai_settings, stub_openai):
    answer = answer_factory(text="Doc one says something [1].", source_count=2)
    openai_settings.ANSWERS_SUPPORT_METHOD = "judge"  # after the answer: its own record was lexical
    stub_openai.enqueue(Reply(pieces=["not json at all"]))

    record = compute_support(answer)

    assert record["method"] == "lexical"
    assert record["fallback"] == {"method": "judge", "reason": "The judge's reply was not JSON."}
