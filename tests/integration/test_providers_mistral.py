"""The mistral provider against a real local server speaking Mistral's chat completions."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import httpx
import pytest
from django.test import override_settings
from mistralai.client.models import ChatCompletionResponse, CompletionChunk

from answers.checks import check_settings
from answers.providers import Provider, ProviderError
from answers.providers.base import Generation
from answers.providers.mistral_provider import MistralProvider, request_messages
from answers.providers.prompt import NATIVE_SYSTEM_PROMPT
from answers.providers.registry import get_provider
from answers.support.judge import JudgeMethod
from answers.support.methods import support_inputs, support_record
from answers.support.record import SourceText
from tests.fixtures.mistral_stub import (
    API_KEY,
    Chunks,
    Completion,
    Item,
    Ref,
    StubMistralServer,
    documents_of,
)

# The anthropic provider's three sources and question, and its bound on a call's time.
from tests.fixtures.native_prompt import HANG_BOUND, PROMPT, SOURCES


def _provider(stub: StubMistralServer, **overrides: Any) -> MistralProvider:
    """The provider on `stub`: 5 s to answer and a quick backoff, unless `overrides` say otherwise."""
    return MistralProvider(
        base_url=stub.base_url,
        **{"api_key": API_KEY, "model": "mistral-stub", "timeout": 5.0, "backoff_s": 0.01, **overrides},
    )


async def _collect(provider: MistralProvider) -> tuple[list[str], Generation, ProviderError | None]:
    """The pieces streamed, what the call learned, and the error it ended with (if any)."""
    generation = Generation()
    pieces: list[str] = []

    async def stream() -> ProviderError | None:
        try:
            async for piece in provider.stream(PROMPT, generation):
                pieces.append(piece)
        except ProviderError as error:
            return error
        return None

    async with asyncio.timeout(HANG_BOUND):
        error = await stream()
    return pieces, generation, error


async def _text_of(stub: StubMistralServer, *items: Item, **options: Any) -> str:
    stub.enqueue(Completion(items=items, **options))
    # A long deadline: a thousand chunks on a loaded machine may take longer than the usual 5 s.
    pieces, _, error = await _collect(_provider(stub, timeout=HANG_BOUND / 2))
    assert error is None, error
    return "".join(pieces)


# --- What is sent


async def test_request_sends_the_sources_as_one_tool_calls_result(stub_mistral: StubMistralServer) -> None:
    await _text_of(stub_mistral, "Hello.")

    body = stub_mistral.requests[0]
    assert (body["model"], body["stream"], body["max_tokens"]) == ("mistral-stub", True, 2048)
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[0]["content"] == NATIVE_SYSTEM_PROMPT
    assert "What does the with statement do?" in messages[1]["content"]
    (call,) = messages[2]["tool_calls"]
    assert (messages[3]["tool_call_id"], messages[3]["name"]) == (call["id"], call["function"]["name"])
    # Key i is source i+1, each with its title, URL and excerpt as its one snippet.
    assert documents_of(body) == {
        str(index): {"title": s.title, "url": s.url, "snippets": [[s.excerpt]]}
        for index, s in enumerate(SOURCES)
    }
    assert body["tool_choice"] == "none"
    assert stub_mistral.headers[0]["authorization"] == f"Bearer {API_KEY}"


async def test_answers_max_tokens_is_sent(stub_mistral: StubMistralServer) -> None:
    stub_mistral.enqueue(Completion(items=["Short."]))
    await _collect(_provider(stub_mistral, max_tokens=77))

    assert stub_mistral.requests[0]["max_tokens"] == 77


# --- Where the markers go


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param(
            ["Penguins live in Antarctica.", Ref(0)], "Penguins live in Antarctica [1].", id="contract"
        ),
        pytest.param(
            ["Les manchots — été 🐧 glacé", " à l’abri.", Ref(1)],
            "Les manchots — été 🐧 glacé à l’abri [2].",
            id="multi-byte-text-before-a-reference",
        ),
        pytest.param(
            ["Floats are numbers.", Ref("1"), " Lambdas too!", Ref("2")],
            "Floats are numbers [2]. Lambdas too [3]!",
            id="string-ids",
        ),
        pytest.param(
            ["Floats are numbers;", Ref(1), " lambdas", Ref(2)],
            "Floats are numbers [2]; lambdas [3]",
            id="int-ids",
        ),
        pytest.param(
            ["Both apply.", Ref(2), Ref(0), Ref(2)], "Both apply [3, 1].", id="two-references-in-a-row"
        ),
        pytest.param(
            ["Both apply.", Ref(2, 0), Ref("2")], "Both apply [3, 1].", id="several-ids-in-one-chunk"
        ),
        pytest.param(["Made up.", Ref(7)], "Made up [0].", id="out-of-range-id"),
        pytest.param(["Made up.", Ref(-1), Ref("x"), Ref(3)], "Made up [0].", id="ids-naming-no-source"),
        pytest.param(
            ["Half", Ref(0), " and half", Ref(1), "."], "Half [1] and half [2].", id="between-texts"
        ),
        pytest.param(["One.\n\n", Ref(0), "Two? ", Ref(1)], "One [1].\n\nTwo [2]? ", id="before-whitespace"),
        pytest.param(["Nothing cited here. Really!"], "Nothing cited here. Really!", id="no-reference"),
        pytest.param(["Empty", Ref(), "."], "Empty.", id="a-reference-to-nothing"),
    ],
)
async def test_reference_chunks_become_markers(
    stub_mistral: StubMistralServer, items: list[Item], expected: str
) -> None:
    assert await _text_of(stub_mistral, *items) == expected


async def test_content_as_a_list_of_chunks(stub_mistral: StubMistralServer) -> None:
    text = await _text_of(
        stub_mistral,
        Chunks("Context managers wrap a block.", Ref(0), " Floats", Ref(1)),
        Chunks(" float.", Ref("2")),
        "",
        text_as_chunks=True,
    )

    assert text == "Context managers wrap a block [1]. Floats [2] float [3]."


async def test_2000_characters_in_2_character_pieces(stub_mistral: StubMistralServer) -> None:
    sentences = [f"Zebras graze at dawn; fact number {n:04d}. " for n in range(50)]  # 50 x 40 characters
    items: list[Item] = []
    expected = []
    for n, sentence in enumerate(sentences):
        items += [sentence[i : i + 2] for i in range(0, len(sentence), 2)]
        if n % 4 == 0:  # every fourth sentence cites two sources, by an int id and a string id
            items += [Ref(n % 3), Ref(str((n + 1) % 3))]
            expected.append(f"{sentence[:-2]} [{n % 3 + 1}, {(n + 1) % 3 + 1}]. ")
        else:
            expected.append(sentence)
    assert sum(len(item) for item in items if isinstance(item, str)) == 2000

    assert await _text_of(stub_mistral, *items) == "".join(expected)


async def test_the_tail_a_marker_goes_before_is_held_back_until_it_is_known(
    stub_mistral: StubMistralServer,
) -> None:
    stub_mistral.enqueue(Completion(items=["Penguins live ", "in Antarctica.", Ref(0), " They ", "swim."]))

    pieces, _, error = await _collect(_provider(stub_mistral))

    assert error is None
    # Each piece shown is final: the space and the full stop waited for what followed them.
    assert pieces == ["Penguins live", " in Antarctica", " [1]", ". They", " swim", "."]


async def test_native_records_say_where_each_reference_came_and_its_marker_went(
    stub_mistral: StubMistralServer,
) -> None:
    stub_mistral.enqueue(
        Completion(items=["Été 🐧 here.", Ref(0), " And", Ref("2"), Ref(1, 9), " more."], usage=(310, 27))
    )

    pieces, generation, error = await _collect(_provider(stub_mistral))

    raw = "".join(pieces)
    assert (error, raw) == (None, "Été 🐧 here [1]. And [3, 2, 0] more.")
    assert generation.native == [
        {"at": 11, "ids": [0], "marker_at": 11},
        {"at": 15, "ids": ["2"], "marker_at": 20},
        {"at": 15, "ids": [1, 9], "marker_at": 20},
    ]
    reply = "Été 🐧 here. And more."
    for record in generation.native:
        assert raw[int(record["marker_at"])] == "["  # type: ignore[call-overload]
    assert (reply[:11], reply[:15]) == ("Été 🐧 here.", "Été 🐧 here. And")
    assert generation.usage == {"prompt_tokens": 310, "completion_tokens": 27}
    assert (generation.truncated, generation.quotes) == (False, {})


async def test_no_usage_reported_leaves_it_none(stub_mistral: StubMistralServer) -> None:
    stub_mistral.enqueue(Completion(items=["Fine."], usage=None))

    _, generation, error = await _collect(_provider(stub_mistral))

    assert (error, generation.usage, generation.native) == (None, None, [])


async def test_length_finish_is_a_complete_but_truncated_answer(stub_mistral: StubMistralServer) -> None:
    stub_mistral.enqueue(Completion(items=["Context managers", Ref(0), " wrap"], finish_reason="length"))

    pieces, generation, error = await _collect(_provider(stub_mistral))

    assert ("".join(pieces), error, generation.truncated) == ("Context managers [1] wrap", None, True)


# --- Failures, as the openai provider's


async def test_stream_cut_midway_is_upstream_keeping_partial_text(stub_mistral: StubMistralServer) -> None:
    stub_mistral.enqueue(Completion(items=["Half an answer", Ref(0), " and", " more."], cut_after=3))

    _, _, error = await _collect(_provider(stub_mistral))

    assert error is not None
    assert (error.kind, error.partial_text) == ("upstream", "Half an answer [1] and")
    assert "lost" in error.message
    assert len(stub_mistral.requests) == 1  # text was shown: never retried


async def test_a_cut_before_the_first_piece_is_retried(stub_mistral: StubMistralServer) -> None:
    stub_mistral.enqueue(Completion(items=["lost"], cut_after=0), Completion(items=["Second try."]))

    pieces, _, error = await _collect(_provider(stub_mistral))

    assert (error, "".join(pieces), len(stub_mistral.requests)) == (None, "Second try.", 2)


async def test_stream_without_a_finish_reason_is_upstream_and_truncated(
    stub_mistral: StubMistralServer,
) -> None:
    stub_mistral.enqueue(Completion(items=["Half"], finish_reason=None))

    _, _, error = await _collect(_provider(stub_mistral))

    assert error is not None
    assert (error.kind, error.truncated, error.partial_text) == ("upstream", True, "Half")


@pytest.mark.parametrize(
    ("completions", "kind", "phrase", "requests"),
    [
        pytest.param(
            [Completion(status=500)] * 3, "upstream", "internal error (500)", 3, id="500-retried-twice"
        ),
        pytest.param(
            [Completion(status=503)] * 3, "upstream", "internal error (503)", 3, id="503-retried-twice"
        ),
        pytest.param(
            [Completion(status=429, retry_after=60)], "upstream", "rate limited", 1, id="429-long-wait"
        ),
        pytest.param([Completion(status=401)], "upstream", "check its API key", 1, id="401-not-retried"),
        pytest.param([Completion(hang=True)], "timeout", "did not answer within 1 seconds", 1, id="hanging"),
    ],
)
async def test_failures_end_as_with_openai(
    stub_mistral: StubMistralServer, completions: list[Completion], kind: str, phrase: str, requests: int
) -> None:
    stub_mistral.enqueue(*completions, Completion(items=["never"]))
    started = time.monotonic()

    # A short deadline for the hanging server only: the others' retries must fit in theirs.
    pieces, _, error = await _collect(_provider(stub_mistral, timeout=1.0 if kind == "timeout" else 10.0))

    assert error is not None
    assert (error.kind, phrase in error.message, pieces) == (kind, True, [])
    # Retries are ours (the client's own are off), and a hanging server is left at the deadline.
    assert len(stub_mistral.requests) == requests
    assert kind != "timeout" or time.monotonic() - started >= 0.9


async def test_500_then_success_recovers(stub_mistral: StubMistralServer) -> None:
    stub_mistral.enqueue(Completion(status=500), Completion(items=["Fine.", Ref(0)]))

    pieces, _, error = await _collect(_provider(stub_mistral))

    assert (error, "".join(pieces), len(stub_mistral.requests)) == (None, "Fine [1].", 2)


async def test_429_waits_retry_after_and_recovers(stub_mistral: StubMistralServer) -> None:
    stub_mistral.enqueue(Completion(status=429, retry_after=0.3), Completion(items=["After the wait."]))

    started = time.monotonic()
    pieces, _, error = await _collect(_provider(stub_mistral))

    assert (error, "".join(pieces), len(stub_mistral.requests)) == (None, "After the wait.", 2)
    assert time.monotonic() - started >= 0.3


async def test_unreachable_server_is_upstream(stub_mistral: StubMistralServer) -> None:
    provider = _provider(stub_mistral, timeout=30.0)
    stub_mistral.stop()

    _, _, error = await _collect(provider)

    assert error is not None
    assert (error.kind, "could not be reached" in error.message) == ("upstream", True)


async def test_a_malformed_chunk_is_a_bad_response_keeping_partial_text(
    stub_mistral: StubMistralServer,
) -> None:
    stub_mistral.enqueue(Completion(items=["Good.", Ref(0), " bad", " never"], malformed_at=2))

    pieces, _, error = await _collect(_provider(stub_mistral))

    assert error is not None
    # The marker and the full stop waited for text that never came readable: not shown, but
    # part of the partial text kept.
    assert (error.kind, error.partial_text, "".join(pieces)) == ("bad_response", "Good [1].", "Good")
    assert len(stub_mistral.requests) == 1


async def test_an_error_reported_mid_stream_is_upstream(stub_mistral: StubMistralServer) -> None:
    stub_mistral.enqueue(Completion(items=["Some", " text"], error_in_stream=True))

    _, _, error = await _collect(_provider(stub_mistral))

    assert error is not None
    assert (error.kind, error.message, error.partial_text) == (
        "upstream",
        "The answer service reported an error.",
        "Some text",
    )


@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
async def test_a_stream_of_another_content_type_is_a_bad_response(
    stub_mistral: StubMistralServer, content_type: str
) -> None:
    stub_mistral.enqueue(Completion(items=["Fine."], content_type=content_type))

    _, _, error = await _collect(_provider(stub_mistral))

    assert error is not None
    assert error.kind == "bad_response"
    assert len(stub_mistral.requests) == 1


@pytest.mark.parametrize(
    "items", [[], [""], [" \n", "", "\t"]], ids=["nothing", "an-empty-piece", "whitespace"]
)
async def test_empty_answer_is_a_bad_response(stub_mistral: StubMistralServer, items: list[Item]) -> None:
    stub_mistral.enqueue(Completion(items=items))

    _, _, error = await _collect(_provider(stub_mistral))

    assert error is not None
    assert error.kind == "bad_response"


async def test_api_key_never_appears_in_errors_reprs_or_logs(
    stub_mistral: StubMistralServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MISTRAL_DEBUG", "1")  # the client's own debug log writes request headers
    caplog.set_level(logging.DEBUG)
    provider = _provider(stub_mistral)
    for status in (401, 429, 500):
        stub_mistral.reset()
        stub_mistral.enqueue(*[Completion(status=status, retry_after=0)] * 3)
        _, _, error = await _collect(provider)
        assert error is not None
        assert API_KEY not in f"{error.message} {error!r} {error!s}"
    stub_mistral.reset()
    stub_mistral.enqueue(Completion(items=["Fine."]))
    assert (await _collect(provider))[2] is None
    assert API_KEY not in repr(provider)
    assert API_KEY not in caplog.text


def test_one_provider_serves_several_event_loops(stub_mistral: StubMistralServer) -> None:
    """A client is bound to the loop it was made in: each loop gets its own (a worker thread's
    loop, the server's loop, the support check's)."""
    provider = _provider(stub_mistral)
    for word in ("First", "Second"):
        stub_mistral.enqueue(Completion(items=[f"{word} answer.", Ref(0)]))
        pieces, _, error = asyncio.run(_collect(provider))
        assert (error, "".join(pieces)) == (None, f"{word} answer [1].")


# --- The non-streamed requests: a follow-up's rewrite and the judge


async def test_complete_is_one_non_streamed_request_whose_text_is_the_reply(
    stub_mistral: StubMistralServer,
) -> None:
    stub_mistral.enqueue(Completion(items=["What does the ", "with statement do?", Ref(0)]))
    messages = [{"role": "system", "content": "Rewrite."}, {"role": "user", "content": "And that?"}]

    reply = await _provider(stub_mistral).complete(messages, max_tokens=64)

    assert reply == "What does the with statement do?"
    (body,) = stub_mistral.requests
    assert (body.get("stream"), body["messages"], body["max_tokens"]) == (False, messages, 64)


async def test_complete_failures_are_provider_errors(stub_mistral: StubMistralServer) -> None:
    stub_mistral.enqueue(Completion(status=500))

    with pytest.raises(ProviderError) as raised:
        await _provider(stub_mistral).complete([{"role": "user", "content": "q"}], max_tokens=8)

    assert (raised.value.kind, len(stub_mistral.requests)) == ("upstream", 1)


JUDGED = [
    SourceText(1, 1, "Walrus teacups are carved from driftwood by coastal carpenters."),
    SourceText(2, 2, "Fresnel lenses focus the lighthouse beam into a narrow band."),
]


async def test_the_judge_asks_mistral_with_one_non_streamed_request(stub_mistral: StubMistralServer) -> None:
    verdicts = [
        {"sentence": 1, "source": 1, "supported": True},
        {"sentence": 2, "source": 2, "supported": False},
    ]
    stub_mistral.enqueue(Completion(items=[json.dumps({"verdicts": verdicts})]))
    text = "Walrus teacups are carved from driftwood [1]. Lighthouse lenses are driftwood [2]."

    record = await support_record(
        support_inputs(text, JUDGED), method=JudgeMethod(_provider(stub_mistral)), min_score=0.5
    )

    assert (record["method"], record["fallback"]) == ("judge", None)
    assert [s["verdict"] for s in record["sentences"]] == ["supported", "unsupported"]
    (body,) = stub_mistral.requests
    assert body.get("stream") is False
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


@override_settings(
    ANSWERS_PROVIDER="mistral",
    ANSWERS_MODEL="mistral-x",
    ANSWERS_MISTRAL_BASE_URL="http://127.0.0.1:9",
    ANSWERS_MISTRAL_API_KEY=API_KEY,
    ANSWERS_PROVIDER_TIMEOUT=7,
)
def test_settings_build_mistral_for_answers_and_the_judge() -> None:
    provider = get_provider()

    assert isinstance(provider, MistralProvider)
    assert (provider.model, provider.base_url, provider.timeout) == ("mistral-x", "http://127.0.0.1:9", 7)
    assert isinstance(JudgeMethod().provider, MistralProvider)
    assert isinstance(provider, Provider)
    assert provider.native_citations is True


@pytest.mark.parametrize(
    ("model", "key", "base_url", "expected"),
    [
        pytest.param("mistral-x", API_KEY, "", [], id="complete"),
        pytest.param("mistral-x", API_KEY, "https://api.eu.mistral.ai", [], id="another-server"),
        pytest.param(" ", API_KEY, "", ["answers.E064"], id="no-model"),
        pytest.param("mistral-x", "", "", ["answers.E065"], id="no-key"),
        pytest.param("mistral-x", "two words", "", ["answers.E065"], id="a-key-with-a-space"),
        pytest.param("mistral-x", API_KEY, "api.mistral.ai", ["answers.E066"], id="not-a-url"),
        pytest.param("", "", "ftp://x", ["answers.E064", "answers.E065", "answers.E066"], id="all-wrong"),
    ],
)
def test_the_system_checks_of_mistral(
    settings: Any, model: str, key: str, base_url: str, expected: list[str]
) -> None:
    settings.ANSWERS_PROVIDER = "mistral"
    settings.ANSWERS_MODEL = model
    settings.ANSWERS_MISTRAL_API_KEY = key
    settings.ANSWERS_MISTRAL_BASE_URL = base_url

    found = check_settings()

    assert [message.id for message in found] == expected
    assert all(key not in str(message) for message in found if key)


# --- The stub speaks what the client reads


def test_the_stubs_replies_validate_strictly_against_the_clients_types(
    stub_mistral: StubMistralServer,
) -> None:
    """The client validates what it reads, leniently; here the stub's shapes are checked strictly."""
    completion = Completion(
        items=["Floats.", Ref(1), Chunks(" More", Ref("0")), " end."], text_as_chunks=True
    )
    stub_mistral.enqueue(completion, completion)
    body = {"model": "mistral-stub", "stream": True, "messages": request_messages(PROMPT)}
    url = f"{stub_mistral.base_url}/v1/chat/completions"
    with httpx.stream("POST", url, json=body, timeout=10) as response:
        assert response.headers["content-type"] == "text/event-stream"
        data = [line.removeprefix("data: ") for line in response.iter_lines() if line]
    assert data[-1] == "[DONE]"
    chunks = [CompletionChunk.model_validate(json.loads(line), strict=True) for line in data[:-1]]
    assert [c.choices[0].finish_reason for c in chunks] == [None] * 5 + ["stop"]
    assert chunks[-1].usage is not None

    whole = httpx.post(url, json={**body, "stream": False}, timeout=10)
    assert whole.headers["content-type"] == "application/json"
    ChatCompletionResponse.model_validate(whole.json(), strict=True)
