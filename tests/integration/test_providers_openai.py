"""The openai provider against a real local server speaking streaming chat completions."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from answers.providers import Provider, ProviderError, build_prompt
from answers.providers.base import Generation
from answers.providers.openai_provider import OpenAIProvider
from answers.providers.registry import get_provider
from tests.fixtures.clock import FakeClock
from tests.fixtures.providers import Reply, StubOpenAIServer, cite_first_source, stub_usage
from tests.fixtures.providers import retrieved_source as _source

API_KEY = "sk-test-secret-0123456789"


PROMPT = build_prompt(
    "What does the with statement do?",
    [
        _source(1, "The with statement", "The with statement wraps a block with a context manager."),
        _source(2, "Floats", "Floating point literals are described here."),
    ],
)


# The stubs that hang never answer: a call that ends before this ended by the deadline, not
# by the test's own timeout (120 s), however loaded the machine is.
HANG_BOUND = 20.0


def _provider(stub: StubOpenAIServer, *, timeout: float = 5.0, **kwargs: object) -> OpenAIProvider:
    return OpenAIProvider(
        base_url=stub.base_url,
        api_key=API_KEY,
        model="stub-model",
        timeout=timeout,
        backoff_s=0.01,
        **kwargs,  # type: ignore[arg-type]
    )


async def _collect(provider: OpenAIProvider) -> tuple[list[str], ProviderError | None]:
    """The pieces the provider streams, and the error it ends with; a call still running after
    HANG_BOUND fails the test (it did not end by its own deadline)."""
    pieces: list[str] = []

    async def stream() -> ProviderError | None:
        try:
            async for piece in provider.stream(PROMPT):
                pieces.append(piece)
        except ProviderError as error:
            return error
        return None

    async with asyncio.timeout(HANG_BOUND):
        return pieces, await stream()


async def test_normal_stream_yields_every_piece_in_order(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(pieces=["Context managers", " wrap a block [1]", "."]))

    pieces, error = await _collect(_provider(stub_openai))

    assert error is None
    assert pieces == ["Context managers", " wrap a block [1]", "."]


async def test_request_carries_prompt_model_and_stream_flag(stub_openai: StubOpenAIServer) -> None:
    await _collect(_provider(stub_openai))

    (body,) = stub_openai.requests
    assert body["model"] == "stub-model"
    assert body["stream"] is True
    assert body["messages"] == [dict(m) for m in PROMPT.messages]
    assert stub_openai.headers[0]["authorization"] == f"Bearer {API_KEY}"


async def test_usage_is_asked_for_and_recorded_from_the_last_chunk(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(pieces=["Context managers", " wrap a block [1]."]))
    generation = Generation()

    async for _ in _provider(stub_openai).stream(PROMPT, generation):
        pass

    (body,) = stub_openai.requests
    assert body["stream_options"] == {"include_usage": True}
    counted = stub_usage(body, "Context managers wrap a block [1].")
    assert generation.usage == {
        "prompt_tokens": counted["prompt_tokens"],
        "completion_tokens": counted["completion_tokens"],
    }
    assert generation.usage["prompt_tokens"] > 20  # the prompt's words, not a constant


async def test_a_server_reporting_no_usage_leaves_it_null(stub_openai: StubOpenAIServer) -> None:
    # A server that ignores stream_options (and sends no usage chunk): the answer is unaffected.
    stub_openai.enqueue(Reply(pieces=["Fine [1]."], report_usage=False))
    generation = Generation()

    pieces = [piece async for piece in _provider(stub_openai).stream(PROMPT, generation)]

    assert pieces == ["Fine [1]."]
    assert generation.usage is None


async def test_pieces_split_mid_marker_arrive_unchanged(stub_openai: StubOpenAIServer) -> None:
    split = ["Context managers [", "1", "] do X [3", "]."]
    stub_openai.enqueue(Reply(pieces=split))

    pieces, error = await _collect(_provider(stub_openai))

    assert error is None
    assert pieces == split
    assert "".join(pieces) == "Context managers [1] do X [3]."


async def test_stream_without_done_but_with_finish_reason_is_complete(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(pieces=["Done", " [1]."], send_done=False))

    pieces, error = await _collect(_provider(stub_openai))

    assert error is None
    assert "".join(pieces) == "Done [1]."


async def test_stream_without_finish_reason_is_truncated(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(pieces=["Half an", " answer"], finish_reason=None))

    pieces, error = await _collect(_provider(stub_openai))

    assert error is not None
    assert error.kind == "upstream"
    assert error.truncated is True
    assert error.partial_text == "Half an answer"
    assert pieces == ["Half an", " answer"]


async def test_stream_without_finish_reason_or_done_is_truncated(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(pieces=["Half"], finish_reason=None, send_done=False))

    _, error = await _collect(_provider(stub_openai))

    assert error is not None
    assert (error.kind, error.truncated, error.partial_text) == ("upstream", True, "Half")


async def test_http_500_is_retried_twice_then_fails_as_upstream(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(status=500), Reply(status=500), Reply(status=500), Reply(pieces=["never"]))

    pieces, error = await _collect(_provider(stub_openai))

    assert pieces == []
    assert error is not None
    assert error.kind == "upstream"
    assert "500" in error.message
    assert error.partial_text == ""
    assert error.truncated is False
    assert len(stub_openai.requests) == 3


async def test_http_500_then_success_recovers(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(status=502), Reply(pieces=["Fine [1]."]))

    pieces, error = await _collect(_provider(stub_openai))

    assert error is None
    assert pieces == ["Fine [1]."]
    assert len(stub_openai.requests) == 2


async def test_429_then_success_waits_retry_after_and_recovers(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(status=429, retry_after=0.3), Reply(pieces=["After the wait [1]."]))

    started = time.monotonic()
    pieces, error = await _collect(_provider(stub_openai))

    assert error is None
    assert pieces == ["After the wait [1]."]
    assert len(stub_openai.requests) == 2
    assert time.monotonic() - started >= 0.3


async def test_429_with_long_retry_after_fails_at_once(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(status=429, retry_after=120))

    _, error = await _collect(_provider(stub_openai))

    assert error is not None
    assert error.kind == "upstream"
    assert "busy" in error.message
    assert len(stub_openai.requests) == 1


async def test_client_errors_are_not_retried(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(status=400))

    _, error = await _collect(_provider(stub_openai))

    assert error is not None
    assert error.kind == "upstream"
    assert len(stub_openai.requests) == 1


async def test_hanging_server_times_out_at_the_setting(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(hang=True))

    started = time.monotonic()
    _, error = await _collect(_provider(stub_openai, timeout=1.0))
    elapsed = time.monotonic() - started

    assert error is not None
    assert error.kind == "timeout"
    # Not before the deadline (a lower bound: a loaded machine only adds to it); _collect bounds the
    # wait, and the stub hangs for good, so the call ended by its own deadline.
    assert elapsed >= 0.9
    assert len(stub_openai.requests) == 1


async def test_server_hanging_mid_stream_times_out_keeping_partial_text(
    stub_openai: StubOpenAIServer,
) -> None:
    stub_openai.enqueue(Reply(pieces=["First", " second", " third"], hang=True, hang_after=1))

    pieces, error = await _collect(_provider(stub_openai, timeout=1.0))

    assert error is not None
    assert error.kind == "timeout"
    assert error.partial_text == "First"
    assert pieces == ["First"]


async def test_deadline_covers_retries(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(status=500), Reply(hang=True))

    _, error = await _collect(_provider(stub_openai, timeout=1.0))

    assert error is not None
    assert error.kind == "timeout"
    assert len(stub_openai.requests) == 2  # no third attempt once the deadline has passed


async def test_slow_consumer_is_not_cancelled_by_the_deadline(stub_openai: StubOpenAIServer) -> None:
    # The deadline guards the provider's own waits; a timeout held across `yield` would cancel the
    # consumer's code instead.
    stub_openai.enqueue(Reply(pieces=["a", "b", "c"]))
    pieces = []
    async for piece in _provider(stub_openai, timeout=30.0).stream(PROMPT):
        await asyncio.sleep(0.2)
        pieces.append(piece)

    assert pieces == ["a", "b", "c"]


async def test_the_consumers_time_between_pieces_does_not_count_against_the_deadline(
    stub_openai: StubOpenAIServer,
) -> None:
    # The app storing and publishing each piece (here: twice the whole deadline per piece, on the
    # deadline's clock) is not the provider's time: the answer ends well, every piece read. (Each
    # piece is sent a little after the last, so the provider is waited for, with the deadline, each time.)
    stub_openai.enqueue(Reply(pieces=["a", "b", "c"], delay_s=0.05))
    clock = FakeClock()
    pieces = []
    async for piece in _provider(stub_openai, timeout=5.0, clock=clock).stream(PROMPT):
        clock.advance(10.0)
        pieces.append(piece)

    assert pieces == ["a", "b", "c"]


async def test_the_providers_own_time_still_counts_after_a_slow_consumer(
    stub_openai: StubOpenAIServer,
) -> None:
    # The deadline moves by the consumer's time only: a provider that then hangs still times out.
    stub_openai.enqueue(Reply(pieces=["First", " second"], hang=True, hang_after=1))
    clock = FakeClock()
    pieces: list[str] = []

    async def consume() -> ProviderError | None:
        try:
            async for piece in _provider(stub_openai, timeout=1.0, clock=clock).stream(PROMPT):
                clock.advance(10.0)
                pieces.append(piece)
        except ProviderError as error:
            return error
        return None

    async with asyncio.timeout(HANG_BOUND):
        error = await consume()

    assert error is not None
    assert error.kind == "timeout"
    assert pieces == ["First"]


async def test_connection_cut_mid_stream_keeps_partial_text_and_is_not_retried(
    stub_openai: StubOpenAIServer,
) -> None:
    stub_openai.enqueue(Reply(pieces=["One [1]", " two", " three"], cut_after=2), Reply(pieces=["retried"]))

    pieces, error = await _collect(_provider(stub_openai))

    assert error is not None
    assert error.kind == "upstream"
    assert error.partial_text == "One [1] two"
    assert "lost" in error.message
    assert pieces == ["One [1]", " two"]
    assert len(stub_openai.requests) == 1


async def test_connection_cut_before_the_first_piece_is_retried(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(pieces=["lost"], cut_after=0), Reply(pieces=["Second try [1]."]))

    pieces, error = await _collect(_provider(stub_openai))

    assert error is None
    assert pieces == ["Second try [1]."]
    assert len(stub_openai.requests) == 2


async def test_unreachable_server_is_upstream(stub_openai: StubOpenAIServer) -> None:
    base_url = stub_openai.base_url
    stub_openai.stop()
    # A refused connection fails at once; the deadline only has to outlast a loaded machine's retries.
    provider = OpenAIProvider(base_url=base_url, api_key=API_KEY, model="m", timeout=30.0, backoff_s=0.01)

    _, error = await _collect(provider)

    assert error is not None
    assert error.kind == "upstream"
    assert "could not be reached" in error.message


async def test_malformed_json_chunk_is_a_bad_response(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(pieces=["Good", " bad", " never"], malformed_at=1))

    pieces, error = await _collect(_provider(stub_openai))

    assert error is not None
    assert error.kind == "bad_response"
    assert error.partial_text == "Good"
    assert pieces == ["Good"]
    assert len(stub_openai.requests) == 1


async def test_malformed_first_chunk_is_not_retried(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(pieces=["x"], malformed_at=0))

    _, error = await _collect(_provider(stub_openai))

    assert error is not None
    assert error.kind == "bad_response"
    assert len(stub_openai.requests) == 1


async def test_error_event_in_stream_is_upstream(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(pieces=["Some"], error_in_stream=True))

    _, error = await _collect(_provider(stub_openai))

    assert error is not None
    assert error.kind == "upstream"
    assert error.partial_text == "Some"


@pytest.mark.parametrize(
    "pieces", [[], [" "], ["\n\n", " \t", "\u3000"]], ids=["none", "a-space", "whitespace-pieces"]
)
async def test_empty_answer_is_a_bad_response(stub_openai: StubOpenAIServer, pieces: list[str]) -> None:
    stub_openai.enqueue(Reply(pieces=pieces))

    _, error = await _collect(_provider(stub_openai))

    assert error is not None
    assert error.kind == "bad_response"


async def test_api_key_never_appears_in_errors_or_logs(
    stub_openai: StubOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    stub_openai.enqueue(Reply(status=401), Reply(status=500), Reply(status=500), Reply(status=500))
    provider = _provider(stub_openai)

    _, unauthorised = await _collect(provider)
    _, failing = await _collect(provider)

    assert unauthorised is not None
    assert failing is not None
    for error in (unauthorised, failing):
        assert API_KEY not in error.message
        assert API_KEY not in repr(error)
        assert API_KEY not in str(error)
    assert "API key" in unauthorised.message
    assert API_KEY not in repr(provider)
    assert API_KEY not in caplog.text


async def test_consumer_stopping_early_closes_cleanly(stub_openai: StubOpenAIServer) -> None:
    stub_openai.enqueue(Reply(pieces=["a", "b", "c"], delay_s=0.05))
    stream = _provider(stub_openai).stream(PROMPT)

    first = await anext(stream)
    await stream.aclose()  # type: ignore[attr-defined]

    assert first == "a"


async def test_reply_computed_from_the_request(stub_openai: StubOpenAIServer) -> None:
    stub_openai.set_default(cite_first_source)

    pieces, error = await _collect(_provider(stub_openai))

    assert error is None
    assert "".join(pieces).endswith("[1].")


async def test_stub_serves_non_streaming_requests_too(stub_openai: StubOpenAIServer) -> None:
    import openai

    stub_openai.enqueue(Reply(pieces=["Whole", " answer."]))
    async with openai.AsyncOpenAI(base_url=stub_openai.base_url, api_key="k", max_retries=0) as client:
        completion = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "q"}]
        )

    assert completion.choices[0].message.content == "Whole answer."


def test_stub_server_runs_standalone_as_a_context_manager() -> None:
    import httpx

    with StubOpenAIServer() as server:
        response = httpx.get(f"{server.base_url}/models")
        assert response.status_code == 200
        assert server.base_url.startswith("http://127.0.0.1:")
        assert server.base_url.endswith("/v1")


def test_provider_meets_the_protocol() -> None:
    provider = OpenAIProvider(base_url="http://127.0.0.1:9/v1", api_key=None, model=None)

    assert isinstance(provider, Provider)
    assert provider.name == "openai"
    assert provider.model == "gpt-4o-mini"


@override_settings(
    ANSWERS_OPENAI_BASE_URL="http://127.0.0.1:9/v1",
    ANSWERS_OPENAI_API_KEY=API_KEY,
    ANSWERS_MODEL="llama3",
    ANSWERS_PROVIDER_TIMEOUT=7.5,
)
def test_get_provider_builds_openai_from_settings() -> None:
    provider = get_provider("openai")

    assert isinstance(provider, OpenAIProvider)
    assert (provider.name, provider.model, provider.base_url, provider.timeout) == (
        "openai",
        "llama3",
        "http://127.0.0.1:9/v1",
        7.5,
    )


@override_settings(ANSWERS_PROVIDER="openai")
def test_get_provider_reads_the_setting_each_call() -> None:
    assert get_provider().name == "openai"
    assert get_provider() is not get_provider()


def test_unknown_provider_name_is_improperly_configured() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"'nope'.*extractive, openai"):
        get_provider("nope")
