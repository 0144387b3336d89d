"""The anthropic provider against a real local server speaking the streaming Messages API."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import httpx
import pytest
from anthropic.types import RawMessageStreamEvent
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings
from pydantic import TypeAdapter

from answers.providers import Provider, ProviderError, build_prompt
from answers.providers.anthropic_provider import AnthropicProvider, request_messages
from answers.providers.base import Generation
from answers.providers.prompt import NATIVE_PROMPT_VERSION, NATIVE_SYSTEM_PROMPT
from answers.providers.registry import get_provider
from tests.fixtures.anthropic_stub import Block, Cite, Message, StubAnthropicServer, stub_usage
from tests.fixtures.native_prompt import HANG_BOUND, PROMPT, SOURCES
from tests.fixtures.providers import collect

API_KEY = "sk-ant-test-secret-0123456789"


def _provider(stub: StubAnthropicServer, **overrides: Any) -> AnthropicProvider:
    """The provider on `stub`: a 5 s deadline and quick backoff unless `overrides` say otherwise."""
    options: dict[str, Any] = {"api_key": API_KEY, "model": "claude-stub", "timeout": 5.0, "backoff_s": 0.01}
    return AnthropicProvider(base_url=stub.base_url, **{**options, **overrides})


async def _collect(provider: AnthropicProvider) -> tuple[str, Generation, ProviderError | None]:
    return await collect(provider, PROMPT)


async def _text_of(stub: StubAnthropicServer, *blocks: Block) -> str:
    stub.enqueue(Message(blocks=blocks))
    text, _, error = await _collect(_provider(stub))
    assert error is None
    return text


async def test_request_sends_each_source_as_a_cited_document_in_order(
    stub_anthropic: StubAnthropicServer,
) -> None:
    await _text_of(stub_anthropic, Block("Hello."))

    body = stub_anthropic.requests[0]
    assert body["model"] == "claude-stub"
    assert body["stream"] is True
    assert body["system"] == NATIVE_SYSTEM_PROMPT
    content = body["messages"][0]["content"]
    assert content[:3] == [
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": source.excerpt},
            "title": source.title,
            "citations": {"enabled": True},
        }
        for source in SOURCES
    ]
    assert content[3]["type"] == "text"
    assert "What does the with statement do?" in content[3]["text"]
    headers = stub_anthropic.headers[0]
    # The client sends the key as it chooses (this release: a bearer token).
    assert API_KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))


def test_the_native_prompt_asks_for_no_markers_and_has_its_own_version() -> None:
    assert PROMPT.version == NATIVE_PROMPT_VERSION != build_prompt("q", SOURCES).version
    assert "[" not in NATIVE_SYSTEM_PROMPT
    assert all("<source" not in m["content"] for m in PROMPT.messages)


@pytest.mark.parametrize(
    ("blocks", "expected"),
    [
        pytest.param([Block("the grass is green", Cite(1))], "the grass is green [2]", id="contract-example"),
        pytest.param(
            [Block(Cite(0), "Context managers wrap a block.")],
            "Context managers wrap a block. [1]",
            id="citation-before-text",
        ),
        pytest.param(
            [Block("Context ", Cite(0), "managers wrap a block.")],
            "Context managers wrap a block. [1]",
            id="citation-between-text",
        ),
        pytest.param(
            [Block("Both apply.", Cite(2), Cite(0), Cite(2))],
            "Both apply. [3, 1]",
            id="several-citations-distinct-in-arrival-order",
        ),
        pytest.param(
            [Block("Context managers wrap a block.", Cite(0)), Block(" "), Block("They exit.\n\n", Cite(0))],
            "Context managers wrap a block. [1] They exit. [1]\n\n",
            id="marker-before-trailing-whitespace",
        ),
        pytest.param(
            [Block("Intro: "), Block("floats are numbers", Cite(1)), Block(". No more.")],
            "Intro: floats are numbers [2]. No more.",
            id="uncited-blocks-unchanged",
        ),
        pytest.param([Block("Made up.", Cite(7))], "Made up. [8]", id="out-of-range-index-kept-raw"),
    ],
)
async def test_each_cited_text_block_gets_one_marker(
    stub_anthropic: StubAnthropicServer, blocks: list[Block], expected: str
) -> None:
    assert await _text_of(stub_anthropic, *blocks) == expected


async def test_markers_are_placed_whatever_the_delta_split(stub_anthropic: StubAnthropicServer) -> None:
    text = await _text_of(stub_anthropic, Block("Con", "text ", " ", "managers ", "\n", Cite(0), " \n"))

    assert text == "Context  managers [1] \n \n"


async def test_usage_is_recorded_from_message_start_and_the_last_message_delta(
    stub_anthropic: StubAnthropicServer,
) -> None:
    message = Message(
        blocks=[Block("Context managers wrap a block.", Cite(0)), Block(" Uncited words here.")]
    )
    stub_anthropic.enqueue(message)

    _, generation, error = await _collect(_provider(stub_anthropic))

    assert error is None
    (body,) = stub_anthropic.requests
    counted = stub_usage(body, message)
    assert generation.usage == {
        "prompt_tokens": counted["input_tokens"],
        "completion_tokens": counted["output_tokens"],
    }
    # The cumulative count of message_delta, not message_start's provisional 1.
    assert generation.usage["completion_tokens"] == 8


async def test_cited_text_is_kept_as_quotes_per_source(stub_anthropic: StubAnthropicServer) -> None:
    stub_anthropic.enqueue(
        Message(
            blocks=[
                Block("A", Cite(0, "wraps a block"), Cite(2, "anonymous functions")),
                Block(" B", Cite(0, "a context manager"), Cite(0, "wraps a block"), Cite(5, "invented")),
            ]
        )
    )

    text, generation, error = await _collect(_provider(stub_anthropic))

    assert error is None
    assert text == "A [1, 3] B [1, 6]"
    # In arrival order, each passage once per source; none for an index with no source.
    assert generation.quotes == {1: ["wraps a block", "a context manager"], 3: ["anonymous functions"]}
    assert generation.truncated is False


async def test_max_tokens_stop_is_a_complete_but_truncated_answer(
    stub_anthropic: StubAnthropicServer,
) -> None:
    stub_anthropic.enqueue(Message(blocks=[Block("Context managers", Cite(0))], stop_reason="max_tokens"))

    text, generation, error = await _collect(_provider(stub_anthropic))

    assert (text, error, generation.truncated) == ("Context managers [1]", None, True)


async def test_stream_cut_midway_is_upstream_keeping_partial_text(
    stub_anthropic: StubAnthropicServer,
) -> None:
    # content_block_start, one text delta, then the connection drops.
    stub_anthropic.enqueue(Message(blocks=[Block("Half an answer", " and more.")], cut_after=2))

    _, _, error = await _collect(_provider(stub_anthropic))

    assert error is not None
    assert (error.kind, error.partial_text) == ("upstream", "Half an answer")
    assert len(stub_anthropic.requests) == 1  # text was shown: never retried


@pytest.mark.parametrize(("status", "phrase"), [(500, "internal error"), (529, "overloaded")])
async def test_5xx_is_retried_then_fails_as_upstream(
    stub_anthropic: StubAnthropicServer, status: int, phrase: str
) -> None:
    stub_anthropic.enqueue(*[Message(status=status)] * 3)

    _, _, error = await _collect(_provider(stub_anthropic))

    assert error is not None
    assert error.kind == "upstream"
    assert phrase in error.message
    assert len(stub_anthropic.requests) == 3


async def test_429_then_success_recovers(stub_anthropic: StubAnthropicServer) -> None:
    stub_anthropic.enqueue(Message(status=429, retry_after=0.05), Message(blocks=[Block("Fine.", Cite(0))]))

    text, _, error = await _collect(_provider(stub_anthropic))

    assert (text, error) == ("Fine. [1]", None)
    assert len(stub_anthropic.requests) == 2


async def test_429_asking_a_long_wait_fails_at_once_as_rate_limited(
    stub_anthropic: StubAnthropicServer,
) -> None:
    stub_anthropic.enqueue(Message(status=429, retry_after=60))

    _, _, error = await _collect(_provider(stub_anthropic))

    assert error is not None
    assert (error.kind, "rate limited" in error.message) == ("upstream", True)
    assert len(stub_anthropic.requests) == 1


async def test_client_errors_are_not_retried(stub_anthropic: StubAnthropicServer) -> None:
    stub_anthropic.enqueue(Message(status=401))

    _, _, error = await _collect(_provider(stub_anthropic))

    assert error is not None
    assert "check its API key" in error.message
    assert len(stub_anthropic.requests) == 1


async def test_hanging_server_times_out_at_the_setting(stub_anthropic: StubAnthropicServer) -> None:
    stub_anthropic.enqueue(Message(hang=True))
    started = time.monotonic()

    _, _, error = await _collect(_provider(stub_anthropic, timeout=0.5))

    assert error is not None
    assert error.kind == "timeout"
    assert time.monotonic() - started < HANG_BOUND


@pytest.mark.parametrize(
    "blocks",
    [[], [Block()], [Block(" \n"), Block("\t")]],
    ids=["no-blocks", "one-empty-block", "whitespace-blocks"],
)
async def test_empty_answer_is_a_bad_response(
    stub_anthropic: StubAnthropicServer, blocks: list[Block]
) -> None:
    stub_anthropic.enqueue(Message(blocks=blocks))
    text, generation, error = await _collect(_provider(stub_anthropic))
    assert (text.strip(), generation.quotes, error and error.kind) == ("", {}, "bad_response")


async def test_api_key_never_appears_in_errors_reprs_or_logs(
    stub_anthropic: StubAnthropicServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    provider = _provider(stub_anthropic)
    for status in (401, 429, 500):
        stub_anthropic.enqueue(*[Message(status=status, retry_after=0)] * 3)
        _, _, error = await _collect(provider)
        assert error is not None
        assert API_KEY not in f"{error.message} {error!r} {error!s}"
    assert API_KEY not in repr(provider)
    assert API_KEY not in caplog.text


def test_provider_meets_the_protocol() -> None:
    provider = AnthropicProvider(base_url="http://127.0.0.1:9", api_key=API_KEY, model="m")

    assert isinstance(provider, Provider)
    assert provider.native_citations is True


@override_settings(
    ANSWERS_PROVIDER="anthropic",
    ANSWERS_MODEL="claude-x",
    ANSWERS_ANTHROPIC_BASE_URL="http://127.0.0.1:9",
    ANSWERS_ANTHROPIC_API_KEY=API_KEY,
    ANSWERS_PROVIDER_TIMEOUT=7,
)
def test_get_provider_builds_anthropic_from_settings() -> None:
    provider = get_provider()

    assert isinstance(provider, AnthropicProvider)
    assert (provider.model, provider.base_url, provider.timeout) == ("claude-x", "http://127.0.0.1:9", 7)


@override_settings(ANSWERS_PROVIDER="anthropic", ANSWERS_MODEL="")
def test_anthropic_without_a_model_fails_the_system_check() -> None:
    with pytest.raises(SystemCheckError, match=r"answers\.E017"):
        call_command("check")


@override_settings(ANSWERS_PROVIDER="anthropic", ANSWERS_MODEL="claude-x", ANSWERS_ANTHROPIC_API_KEY="sk-x")
def test_anthropic_with_a_model_and_a_key_passes_the_system_check() -> None:
    call_command("check")


def test_the_stubs_events_validate_strictly_against_the_clients_types(
    stub_anthropic: StubAnthropicServer,
) -> None:
    """The client builds events without validating them; here every field is checked."""
    stub_anthropic.enqueue(
        Message(
            blocks=[Block(Cite(1), "Floats.", Cite(0, "wraps")), Block(" Done.")], stop_reason="max_tokens"
        )
    )
    body = {
        "model": "claude-stub",
        "max_tokens": 100,
        "stream": True,
        "messages": request_messages(PROMPT),
    }
    adapter = TypeAdapter(RawMessageStreamEvent)
    names: list[str] = []
    with httpx.stream("POST", f"{stub_anthropic.base_url}/v1/messages", json=body, timeout=10) as response:
        lines = [line for line in response.iter_lines() if line]
    for name_line, data_line in zip(lines[::2], lines[1::2], strict=True):
        name = name_line.removeprefix("event: ")
        data = json.loads(data_line.removeprefix("data: "))
        assert data["type"] == name
        names.append(name)
        if name != "ping":
            adapter.validate_python(data, strict=True)

    assert names == [
        "message_start",
        "ping",
        *["content_block_start", "content_block_delta", "content_block_delta", "content_block_delta"],
        "content_block_stop",
        *["content_block_start", "content_block_delta", "content_block_stop"],
        "message_delta",
        "message_stop",
    ]
