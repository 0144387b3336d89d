"""The cohere provider against a real local server speaking Cohere's v2 chat API as the official
client parses it (tests/fixtures/cohere_stub.py): where each citation's marker goes (docs/howto/providers.md),
the native record, quotes, usage, truncation, and failures as with `openai`."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import httpx
import pytest
from cohere.v2.types import v2chat_stream_response
from cohere.v2.types.v2chat_response import V2ChatResponse
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings
from pydantic import BaseModel

from answers.providers import Provider, ProviderError, build_prompt
from answers.providers.base import Generation
from answers.providers.cohere_provider import CohereProvider, request_documents
from answers.providers.prompt import NATIVE_SYSTEM_PROMPT
from answers.providers.registry import get_provider
from tests.fixtures.cohere_stub import Chat, Cite, StubCohereServer
from tests.fixtures.providers import collect
from tests.fixtures.providers import retrieved_source as _source

API_KEY = "co-test-secret-0123456789"
HANG_BOUND = 20.0  # a call that ends before this ended by the deadline, however loaded the machine

SOURCES = [
    _source(1, "Tall penguins", "Emperor penguins are the tallest."),
    _source(2, "Penguin habitats", "Emperor penguins only live in Antarctica."),
    _source(3, "Animals", "Animals are different from plants."),
]
PROMPT = build_prompt("Where do the tallest penguins live?", SOURCES, native_citations=True)


def _provider(stub: StubCohereServer, **overrides: Any) -> CohereProvider:
    """The provider on `stub`: a 5 s deadline and quick backoff unless `overrides` say otherwise."""
    options: dict[str, Any] = {"api_key": API_KEY, "model": "command-stub", "timeout": 5.0, "backoff_s": 0.01}
    return CohereProvider(base_url=stub.base_url, **{**options, **overrides})


async def _collect(provider: CohereProvider) -> tuple[str, Generation, ProviderError | None]:
    return await collect(provider, PROMPT)


async def _raw(stub: StubCohereServer, *events: str | Cite) -> tuple[str, Generation]:
    stub.enqueue(Chat(events))
    text, generation, error = await _collect(_provider(stub))
    assert error is None
    return text, generation


def _at(text: str, span: str) -> Cite:
    """A citation of `span`'s first occurrence in `text` (code points), naming document 1."""
    start = text.index(span)
    return Cite(start, start + len(span))


async def test_request_sends_each_source_as_a_numbered_document_streaming(
    stub_cohere: StubCohereServer,
) -> None:
    await _raw(stub_cohere, "Hello.")

    body = stub_cohere.requests[0]
    assert (body["model"], body["stream"], body["max_tokens"]) == ("command-stub", True, 2048)
    assert body["documents"] == [
        {"id": str(s.number), "data": {"title": s.title, "snippet": s.excerpt}} for s in SOURCES
    ]
    assert body["messages"][0] == {"role": "system", "content": NATIVE_SYSTEM_PROMPT}
    assert body["messages"][-1]["role"] == "user"
    assert "Where do the tallest penguins live?" in body["messages"][-1]["content"]
    assert stub_cohere.headers[0]["authorization"] == f"Bearer {API_KEY}"


MULTI = "Les manchots 🐧 empereurs — les plus grands — vivent en Antarctique."
MID = "Emperors are the tallest."
TWO = "Emperor penguins are the tallest."


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        pytest.param(["Emperor penguins.", Cite(0, 17)], "Emperor penguins [1].", id="contract-example"),
        pytest.param(
            [MULTI[:20], MULTI[20:], _at(MULTI, "vivent en Antarctique.")],
            "Les manchots 🐧 empereurs — les plus grands — vivent en Antarctique [1].",
            id="multi-byte-text-before-the-span",
        ),
        pytest.param(
            ["Empe", "rors are", " the tallest.", Cite(0, 7, "2")],
            "Emperor [2]s are the tallest.",
            id="span-ending-mid-word",
        ),
        pytest.param(
            [TWO, Cite(0, 33, "3"), Cite(0, 33, ("1", "3"))],
            "Emperor penguins are the tallest [3, 1].",
            id="two-citations-on-one-span-merge-each-number-once",
        ),
        pytest.param(
            [TWO, Cite(0, 16, "2"), Cite(4, 16, "1")],
            "Emperor penguins [2, 1] are the tallest.",
            id="two-spans-ending-at-one-point-merge",
        ),
        pytest.param(
            [TWO, Cite(0, 16, ("9", "2")), Cite(21, 33, "0")],
            "Emperor penguins [0, 2] are the tallest [0].",
            id="ids-naming-no-document-are-0",
        ),
        pytest.param(
            [Cite(0, 17), "Emperor", " penguins.", " They live in Antarctica.", Cite(18, 42, "2")],
            "Emperor penguins [1]. They live in Antarctica [2].",
            id="citation-before-its-text",
        ),
        pytest.param(
            ["Emperor penguins.\n\n", Cite(0, 19)], "Emperor penguins [1].\n\n", id="trailing-newlines"
        ),
        pytest.param(["Nothing cited here.", " At all."], "Nothing cited here. At all.", id="no-citation"),
    ],
)
async def test_each_citation_puts_one_marker_at_its_end(
    stub_cohere: StubCohereServer, events: list[str | Cite], expected: str
) -> None:
    text, _ = await _raw(stub_cohere, *events)

    assert text == expected


async def test_2000_characters_in_2_character_pieces(stub_cohere: StubCohereServer) -> None:
    sentences = [f"Penguin fact number {i} holds." for i in range(70)]
    reply = " ".join(sentences)[:2000]
    pieces = [reply[i : i + 2] for i in range(0, len(reply), 2)]
    # Every whole sentence cited, by documents 1, 2, 3 in turn.
    cites, start = [], 0
    for i, sentence in enumerate(sentences):
        if start + len(sentence) > len(reply):
            break
        cites.append(Cite(start, start + len(sentence), str(i % 3 + 1)))
        start += len(sentence) + 1

    text, generation = await _raw(stub_cohere, *pieces, *cites)

    # Each cited sentence's marker before its full stop, inserted from the last one back.
    expected = reply
    for cite in reversed(cites):
        expected = f"{expected[: cite.end - 1]} [{cite.ids}]{expected[cite.end - 1 :]}"
    assert text == expected
    assert len(cites) > 50
    assert [r["marker_at"] for r in generation.native] == [i for i, char in enumerate(text) if char == "["]


async def test_the_native_record_lists_each_citation_as_given_with_its_marker(
    stub_cohere: StubCohereServer,
) -> None:
    text, generation = await _raw(
        stub_cohere,
        "Emperor penguins. They live in Antarctica.",
        Cite(0, 17, ("1", "7")),
        Cite(19, 43, "2", text="live in Antarctica."),  # offsets off by one: repaired
        Cite(200, 210, "3", text="not in the reply"),
    )

    assert text == "Emperor penguins [1, 0]. They live in Antarctica [2]. [3]"
    assert generation.native == [
        {
            "start": 0,
            "end": 17,
            "text": "Emperor penguins.",
            "sources": ["1", "7"],
            "marker_at": 17,
            "repaired": False,
            "span_at": [0, 24],
        },
        {
            "start": 19,
            "end": 43,
            "text": "live in Antarctica.",
            "sources": ["2"],
            "marker_at": 49,
            "repaired": True,
            "span_at": [30, 53],
        },
        {
            "start": 200,
            "end": 210,
            "text": "not in the reply",
            "sources": ["3"],
            "marker_at": 54,
            "repaired": True,
            "span_at": [53, 53],  # the end of the text, an empty span
        },
    ]
    # marker_at is where each marker's "[" is in the raw text; span_at the cited span there.
    assert [text[r["marker_at"]] for r in generation.native] == ["[", "[", "["]
    assert text[30:53] == "live in Antarctica [2]."


async def test_each_citations_text_is_a_quote_of_its_sources(stub_cohere: StubCohereServer) -> None:
    _, generation = await _raw(
        stub_cohere,
        "Emperor penguins are the tallest. They live in Antarctica.",
        Cite(0, 16, ("1", "2")),
        Cite(34, 58, ("2", "8")),
        Cite(0, 16, "1"),
    )

    assert generation.quotes == {
        1: ["Emperor penguins"],
        2: ["Emperor penguins", "They live in Antarctica."],
    }


async def test_usage_is_recorded_from_message_end(stub_cohere: StubCohereServer) -> None:
    stub_cohere.enqueue(
        Chat(["Fine."]),
        Chat(["Fine."], usage={"billed_units": {"input_tokens": 11, "output_tokens": 3}}),
        Chat(["Fine."], usage=None),
    )
    provider = _provider(stub_cohere)

    usages = [(await _collect(provider))[1].usage for _ in range(3)]

    assert usages == [
        {"prompt_tokens": 150, "completion_tokens": 32},
        {"prompt_tokens": 11, "completion_tokens": 3},
        None,
    ]


async def test_max_tokens_is_a_complete_but_truncated_answer(stub_cohere: StubCohereServer) -> None:
    stub_cohere.enqueue(Chat(["Emperor penguins are", Cite(0, 16)], finish_reason="MAX_TOKENS"))

    text, generation, error = await _collect(_provider(stub_cohere))

    assert (text, error, generation.truncated) == ("Emperor penguins [1] are", None, True)


async def test_events_the_client_would_not_build_are_skipped(stub_cohere: StubCohereServer) -> None:
    # As the official client's own stream does: an unknown type, broken JSON, a known type whose
    # fields its type rejects, and data that is no object are each skipped, the answer unharmed.
    odd = (
        '{"type": "tool-plan-x", "delta": {}}',
        "{not json",
        '{"type": "content-delta", "delta": 7}',
        "[1, 2]",
    )
    stub_cohere.enqueue(Chat(["Emperor penguins.", Cite(0, 17)], odd_data=odd))

    text, generation, error = await _collect(_provider(stub_cohere))

    assert (text, error, generation.truncated) == ("Emperor penguins [1].", None, False)


async def test_a_cut_stream_is_upstream_keeping_the_partial_text_never_retried(
    stub_cohere: StubCohereServer,
) -> None:
    # content-start, three pieces and a citation, then the connection drops: no content-end.
    stub_cohere.enqueue(Chat(["Emperor penguins.", " They", " live", Cite(0, 17), " in"], cut_after=6))

    _, _, error = await _collect(_provider(stub_cohere))

    assert error is not None
    assert (error.kind, error.partial_text) == ("upstream", "Emperor penguins [1]. They live")
    assert "lost mid-answer" in error.message
    assert len(stub_cohere.requests) == 1


async def test_an_error_finish_is_upstream(stub_cohere: StubCohereServer) -> None:
    stub_cohere.enqueue(Chat(["Emperor"], finish_reason="ERROR"))

    _, _, error = await _collect(_provider(stub_cohere))

    assert error is not None
    assert (error.kind, error.message, error.partial_text) == (
        "upstream",
        "The answer service reported an error.",
        "Emperor",
    )


@pytest.mark.parametrize(("status", "phrase"), [(500, "internal error (500)"), (503, "internal error (503)")])
async def test_5xx_is_retried_by_the_app_then_fails_as_upstream(
    stub_cohere: StubCohereServer, status: int, phrase: str
) -> None:
    stub_cohere.enqueue(*[Chat(status=status)] * 3)

    _, _, error = await _collect(_provider(stub_cohere))

    assert error is not None
    assert (error.kind, phrase in error.message) == ("upstream", True)
    assert len(stub_cohere.requests) == 3  # one, then the app's two retries; none of the client's


async def test_429_with_a_short_retry_after_then_success_recovers(stub_cohere: StubCohereServer) -> None:
    stub_cohere.enqueue(Chat(status=429, retry_after=0), Chat(["Fine.", Cite(0, 5)]))

    text, _, error = await _collect(_provider(stub_cohere))

    assert (text, error) == ("Fine [1].", None)
    assert len(stub_cohere.requests) == 2


async def test_429_asking_a_long_wait_fails_at_once_as_rate_limited(stub_cohere: StubCohereServer) -> None:
    # The client's own retries would wait the 60 s it asks (up to its 60 s cap): they are off.
    stub_cohere.enqueue(Chat(status=429, retry_after=60))
    started = time.monotonic()

    _, _, error = await _collect(_provider(stub_cohere, timeout=30))

    assert error is not None
    assert (error.kind, "rate limited" in error.message) == ("upstream", True)
    assert len(stub_cohere.requests) == 1
    assert time.monotonic() - started < HANG_BOUND


async def test_client_errors_are_not_retried(stub_cohere: StubCohereServer) -> None:
    stub_cohere.enqueue(Chat(status=401))

    _, _, error = await _collect(_provider(stub_cohere))

    assert error is not None
    assert "check its API key" in error.message
    assert len(stub_cohere.requests) == 1


async def test_a_hanging_server_times_out_at_the_setting(stub_cohere: StubCohereServer) -> None:
    stub_cohere.enqueue(Chat(hang=True))
    started = time.monotonic()

    _, _, error = await _collect(_provider(stub_cohere, timeout=0.5))

    assert error is not None
    assert error.kind == "timeout"
    assert time.monotonic() - started < HANG_BOUND


async def test_an_unreachable_server_is_upstream() -> None:
    provider = CohereProvider(
        base_url="http://127.0.0.1:9", api_key=API_KEY, model="m", timeout=5, max_retries=0
    )

    _, _, error = await _collect(provider)

    assert error is not None
    assert (error.kind, error.message) == ("upstream", "The answer service could not be reached.")


@pytest.mark.parametrize("events", [(), (" \n", "\t")], ids=["no-text", "whitespace"])
async def test_an_empty_answer_is_a_bad_response(
    stub_cohere: StubCohereServer, events: tuple[str, ...]
) -> None:
    stub_cohere.enqueue(Chat(events))

    _, _, error = await _collect(_provider(stub_cohere))

    assert error is not None
    assert error.kind == "bad_response"


async def test_the_api_key_never_appears_in_errors_reprs_or_logs(
    stub_cohere: StubCohereServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    provider = _provider(stub_cohere)
    for status in (401, 429, 500):
        stub_cohere.enqueue(*[Chat(status=status, retry_after=0)] * 3)
        _, _, error = await _collect(provider)
        assert error is not None
        assert API_KEY not in f"{error.message} {error!r} {error!s}"
    assert API_KEY not in repr(provider)
    assert API_KEY not in caplog.text


async def test_complete_is_one_non_streamed_chat(stub_cohere: StubCohereServer) -> None:
    stub_cohere.enqueue(Chat(["Where do emperor ", "penguins live?"]), Chat(status=429, retry_after=0))
    provider = _provider(stub_cohere)
    messages = [{"role": "system", "content": "Rewrite."}, {"role": "user", "content": "And them?"}]

    assert await provider.complete(messages, max_tokens=200) == "Where do emperor penguins live?"
    with pytest.raises(ProviderError, match="rate limited"):
        await provider.complete(messages, max_tokens=200)

    first, second = stub_cohere.requests
    assert (first["stream"], first["max_tokens"], first["messages"]) == (False, 200, messages)
    assert "documents" not in first
    assert second["stream"] is False  # and no retry by the client: two requests in all


def test_provider_meets_the_protocol() -> None:
    provider = CohereProvider(base_url="http://127.0.0.1:9", api_key=API_KEY, model="m")

    assert isinstance(provider, Provider)
    assert (provider.native_citations, provider.judges) == (True, True)


@override_settings(
    ANSWERS_PROVIDER="cohere",
    ANSWERS_MODEL="command-x",
    ANSWERS_COHERE_BASE_URL="http://127.0.0.1:9",
    ANSWERS_COHERE_API_KEY=API_KEY,
    ANSWERS_PROVIDER_TIMEOUT=7,
    ANSWERS_MAX_TOKENS=300,
)
def test_get_provider_builds_cohere_from_settings() -> None:
    provider = get_provider()

    assert isinstance(provider, CohereProvider)
    assert (provider.model, provider.base_url, provider.timeout, provider.max_tokens) == (
        "command-x",
        "http://127.0.0.1:9",
        7,
        300,
    )


@pytest.mark.parametrize(
    ("overrides", "check_id"),
    [
        ({"ANSWERS_MODEL": ""}, "E061"),
        ({"ANSWERS_COHERE_API_KEY": ""}, "E062"),
        ({"ANSWERS_COHERE_API_KEY": "co key\n"}, "E062"),
        ({"ANSWERS_COHERE_BASE_URL": "api.cohere.com"}, "E063"),
    ],
)
def test_misconfigured_cohere_fails_the_system_check(overrides: dict[str, str], check_id: str) -> None:
    good = {
        "ANSWERS_PROVIDER": "cohere",
        "ANSWERS_MODEL": "command-x",
        "ANSWERS_COHERE_API_KEY": API_KEY,
        "ANSWERS_COHERE_BASE_URL": "https://api.cohere.com",
    }
    with override_settings(**good):
        call_command("check")
    with override_settings(**{**good, **overrides}), pytest.raises(SystemCheckError) as raised:
        call_command("check")
    assert f"answers.{check_id}" in str(raised.value)
    assert API_KEY not in str(raised.value)


# --- The stub's shapes, checked against the client's own types

_VARIANTS = {
    cls.model_fields["type"].default: cls
    for cls in vars(v2chat_stream_response).values()
    if isinstance(cls, type) and issubclass(cls, BaseModel) and "type" in cls.model_fields
}


def _unknown_fields(value: Any, path: str = "$") -> list[str]:
    """Every field the client's types do not name (a misnamed field would be built as None)."""
    found: list[str] = []
    if isinstance(value, BaseModel):
        found += [f"{path}.{name}" for name in value.model_extra or {}]
        for name in type(value).model_fields:
            found += _unknown_fields(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _unknown_fields(item, f"{path}[{index}]")
    return found


def _body(stream: bool) -> dict[str, Any]:
    messages = [dict(m) for m in PROMPT.messages]
    return {"model": "m", "messages": messages, "documents": request_documents(PROMPT), "stream": stream}


def test_the_stubs_events_validate_strictly_against_the_clients_types(stub_cohere: StubCohereServer) -> None:
    stub_cohere.enqueue(Chat([Cite(0, 8, ("2", "5")), "Emperor", " penguins.", Cite(0, 17)]))

    with httpx.stream("POST", f"{stub_cohere.url}/v2/chat", json=_body(True), timeout=10) as response:
        lines = [line for line in response.iter_lines() if line]

    assert all(line.startswith("data: ") for line in lines)  # the type is inside: no `event:` line
    events = [json.loads(line.removeprefix("data: ")) for line in lines]
    for data in events:
        event = _VARIANTS[data["type"]].model_validate(data, strict=True)
        assert _unknown_fields(event) == [], data
    assert [e["type"] for e in events] == [
        "message-start",
        "content-start",
        *[
            "citation-start",
            "citation-end",
            "content-delta",
            "content-delta",
            "citation-start",
            "citation-end",
        ],
        "content-end",
        "message-end",
    ]
    sources = events[2]["delta"]["message"]["citations"]["sources"]
    assert sources[0]["document"] == {"id": "2", "title": "Penguin habitats", "snippet": SOURCES[1].excerpt}


@pytest.mark.parametrize("cited", [True, False], ids=["cited", "uncited"])
def test_the_stubs_whole_reply_validates_against_the_clients_type(
    stub_cohere: StubCohereServer, cited: bool
) -> None:
    stub_cohere.enqueue(Chat(["Emperor penguins.", Cite(0, 17)] if cited else ["Emperor penguins."]))

    reply = V2ChatResponse.model_validate(
        httpx.post(f"{stub_cohere.url}/v2/chat", json=_body(False), timeout=10).json(), strict=True
    )

    assert _unknown_fields(reply) == []
    # An uncited reply's citations are None, not [].
    assert reply.message.citations is None if not cited else len(reply.message.citations or []) == 1
