"""OpenAI clients (Responses, chat, OpenAI-compatible; the real openai SDK inside) against the
simulator over HTTP."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai.types.responses import Response

from evalfleet.core.types import Decoding, Part
from evalfleet.providers.clients import make_client
from evalfleet.providers.openai_chat import OpenAIChatClient, decoding_arguments
from evalfleet.providers.openai_responses import (
    OpenAIResponsesClient,
    _finish_reason,
    responses_arguments,
    responses_content,
)
from evalfleet.providers.registry import ModelConfig, resolve_api_key, resolve_model
from evalfleet.providers.retry import RetryPolicy, call_with_retries
from evalfleet.providers.types import ErrorKind, ProviderError
from evalfleet.simulator import prompt_sha256, start_simulator_in_thread
from evalfleet.simulator.answering import reasoning_for
from evalfleet.simulator.process import SimulatorHandle
from evalfleet.simulator.samples import tiny_jpeg, tiny_png, tiny_wav
from tests.support.provider_harness import (
    UNKNOWN,
    complete,
    failure,
    fault_rules,
    log_for,
    text_tokens,
)

IMAGE_TOKENS = 100
AUDIO_TOKENS = 300
REASONING_TOKENS = 40
FAULTS = fault_rules(flaky_status=503)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatorHandle]:
    root = tmp_path_factory.mktemp("sim-openai")
    config = {
        "image_tokens": IMAGE_TOKENS,
        "audio_tokens": AUDIO_TOKENS,
        "reasoning_tokens": REASONING_TOKENS,
        "rules": [{"match": f"*-{name}", "faults": faults} for name, faults in FAULTS.items()],
    }
    with start_simulator_in_thread(None, config, log_path=root / "log.jsonl") as handle:
        yield handle


def model(sim: SimulatorHandle, name: str, **changes: Any) -> ModelConfig:
    config = resolve_model(f"openai/{name}", simulator_url=sim.url)
    return dataclasses.replace(config, **changes)


def images() -> list[Part]:
    return [
        Part(kind="image", data=tiny_png(), media_type="image/png"),
        Part(kind="image", data=tiny_jpeg(), media_type="image/jpeg"),
    ]


def test_simulated_models_pick_their_api(sim: SimulatorHandle) -> None:
    chat, resp, think = (model(sim, n) for n in ("sim-0.5", "sim-0.5-resp", "sim-0.5-think"))
    assert (chat.api, resp.api, think.api) == ("chat", "responses", "responses")
    assert chat.modalities == frozenset({"text", "image", "audio"})
    assert resp.modalities == frozenset({"text", "image"})
    assert isinstance(make_client(chat, "k"), OpenAIChatClient)
    assert isinstance(make_client(think, "k"), OpenAIResponsesClient)
    assert chat.base_url == sim.url + "/v1"


def test_responses_several_images_with_exact_usage_and_cost(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5-resp")
    prompt = "Compare both images."
    parts = [Part.of_text(prompt), *images(), images()[0]]
    response = complete(config, parts, Decoding(max_tokens=500, seed=9))
    expected_in = text_tokens(prompt) + 3 * IMAGE_TOKENS
    assert (response.text, response.finish_reason) == (UNKNOWN, "stop")
    assert (response.usage.input_tokens, response.usage.output_tokens) == (expected_in, 6)
    assert (response.usage.reasoning_tokens, response.usage.cached_input_tokens) == (0, 0)
    assert config.cost_usd(expected_in, 6) == (expected_in * 1.0 + 6 * 4.0) / 1e6
    [entry] = log_for(sim, "sim-0.5-resp")
    # Responses has no seed; the simulator takes a body-level one so epochs differ.
    assert (entry["input_tokens"], entry["seed"]) == (expected_in, 9)
    assert response.request_id == entry["request_id"]
    content = responses_content(config, parts)
    assert [c["type"] for c in content] == ["input_text"] + ["input_image"] * 3
    assert content[2]["image_url"].startswith("data:image/jpeg;base64,/9j/")
    assert {c.get("detail") for c in content[1:]} == {"auto"}


def test_responses_reasoning_is_kept_apart(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5-think")
    prompt = "Reason about this image."
    response = complete(config, [Part.of_text(prompt), images()[0]], Decoding(max_tokens=2000))
    assert response.text == UNKNOWN
    assert response.reasoning_text == reasoning_for("sim-0.5-think", prompt_sha256(prompt))
    usage = response.usage
    assert (usage.output_tokens, usage.reasoning_tokens) == (6 + REASONING_TOKENS, REASONING_TOKENS)
    assert usage.input_tokens == text_tokens(prompt) + IMAGE_TOKENS
    assert responses_arguments(config, Decoding(max_tokens=2000, seed=3, temperature=0.2)) == {
        "max_output_tokens": 2000,
        "temperature": 0.2,
        "reasoning": {"effort": "medium"},
        "extra_body": {"seed": 3},
    }


def test_real_reasoning_model_arguments() -> None:
    gpt5 = resolve_model("openai/gpt-5-2025-08-07")
    assert gpt5.api == "responses"
    decoding = Decoding(
        max_tokens=200_000, temperature=0.7, top_p=0.9, reasoning_effort="high", seed=5
    )
    assert responses_arguments(gpt5, decoding) == {
        "max_output_tokens": 128000,
        "reasoning": {"effort": "high"},
    }


def test_responses_refuses_audio_before_any_request(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5-resp-audio")
    audio = Part(kind="audio", data=tiny_wav(), media_type="audio/wav")
    error = failure(config, [Part.of_text("Transcribe."), audio], Decoding())
    assert error.kind == ErrorKind.BAD_REQUEST
    assert error.message == (
        "openai/sim-0.5-resp-audio cannot take part 1 (audio): the responses API takes image, text"
    )
    assert log_for(sim, "sim-0.5-resp-audio", count=0) == []


def test_chat_takes_images_and_audio(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5-chat")
    prompt = "Describe the images and the clip."
    audio = Part(kind="audio", data=tiny_wav(), media_type="audio/wav")
    response = complete(config, [Part.of_text(prompt), *images(), audio], Decoding(seed=2))
    expected_in = text_tokens(prompt) + 2 * IMAGE_TOKENS + AUDIO_TOKENS
    assert (response.usage.input_tokens, response.usage.output_tokens) == (expected_in, 6)
    [entry] = log_for(sim, "sim-0.5-chat")
    assert (entry["input_tokens"], entry["seed"]) == (expected_in, 2)


def test_openai_compatible_server_from_the_registry(sim: SimulatorHandle) -> None:
    entry = {
        "base_url": sim.openai_base_url,
        "api_model": "sim-0.5-vllm",
        "api_key_env": "LOCAL_VLLM_KEY",
        "accepts": ["max_tokens", "temperature"],
    }
    registry = {"models": {"openai-compatible/llama-local": entry}}
    config = resolve_model("openai-compatible/llama-local", registry=registry)
    assert (config.api, config.base_url) == ("chat", sim.openai_base_url)
    key = resolve_api_key(config, {"LOCAL_VLLM_KEY": "local-key"})
    decoding = Decoding(max_tokens=2, temperature=0.1, seed=5)
    assert decoding_arguments(config, decoding) == {"max_tokens": 2, "temperature": 0.1}
    response = asyncio.run(_complete_with_key(config, key, decoding))
    assert (response.text, response.finish_reason) == (UNKNOWN[:8], "length")
    [logged] = log_for(sim, "sim-0.5-vllm")
    assert (logged["auth"], logged["seed"], logged["output_tokens"]) == (True, None, 2)


async def _complete_with_key(config: ModelConfig, key: str, decoding: Decoding) -> Any:
    client = make_client(config, key)
    try:
        return await client.complete([Part.of_text("Local model.")], decoding)
    finally:
        await client.aclose()


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize(
    ("fault", "kind", "status"),
    [
        ("f500", ErrorKind.SERVER_ERROR, 500),
        ("f503", ErrorKind.SERVER_ERROR, 503),
        ("f529", ErrorKind.OVERLOADED, 529),
        ("r429", ErrorKind.RATE_LIMITED, 429),
    ],
)
def test_faults_map_to_the_taxonomy(
    sim: SimulatorHandle, api: str, fault: str, kind: ErrorKind, status: int
) -> None:
    name = f"sim-0.5{'-resp' if api == 'responses' else ''}-{fault}"
    error = failure(model(sim, name), [Part.of_text(f"Fault {fault}")], Decoding(max_tokens=100))
    [entry] = log_for(sim, name)
    assert (error.kind, error.status, error.request_id) == (kind, status, entry["request_id"])
    assert error.retry_after_s == (0.03 if fault == "r429" else None)


def test_malformed_json_is_a_malformed_response(sim: SimulatorHandle) -> None:
    error = failure(model(sim, "sim-0.5-resp-malformed"), [Part.of_text("Bad body.")], Decoding())
    [entry] = log_for(sim, "sim-0.5-resp-malformed")
    assert (error.kind, error.status, error.request_id) == (
        ErrorKind.MALFORMED_RESPONSE,
        200,
        entry["request_id"],
    )
    chat_error = failure(model(sim, "sim-0.5-malformed"), [Part.of_text("Bad.")], Decoding())
    assert chat_error.kind == ErrorKind.MALFORMED_RESPONSE


@pytest.mark.parametrize("name", ["sim-0.5-hang", "sim-0.5-resp-hang"])
def test_hang_past_the_client_timeout_is_a_timeout(sim: SimulatorHandle, name: str) -> None:
    config = model(sim, name, timeout_s=1.0)
    started = time.monotonic()
    error = failure(config, [Part.of_text("Hang.")], Decoding(max_tokens=100))
    assert 1.0 <= time.monotonic() - started < 5.0
    assert (error.kind, error.status, error.request_id) == (ErrorKind.TIMEOUT, None, None)
    assert isinstance(error.__cause__, openai.APITimeoutError)
    [entry] = log_for(sim, name)
    assert entry["outcome"] == "hang"


def test_empty_content_is_returned_with_its_usage(sim: SimulatorHandle) -> None:
    """The worker turns an empty text into EMPTY_ANSWER while keeping usage and finish."""
    config = model(sim, "sim-0.5-think-empty")
    response = complete(config, [Part.of_text("Empty, please.")], Decoding(max_tokens=2000))
    assert (response.text, response.finish_reason) == ("", "stop")
    assert response.usage.output_tokens == response.usage.reasoning_tokens == REASONING_TOKENS


def test_truncation_and_max_tokens_finish_with_length(sim: SimulatorHandle) -> None:
    truncated = complete(model(sim, "sim-0.5-resp-truncate"), [Part.of_text("Cut.")], Decoding())
    assert (truncated.text, truncated.finish_reason) == (UNKNOWN[:12], "length")
    assert truncated.usage.output_tokens == 3
    limited = Decoding(max_tokens=2)
    short = complete(model(sim, "sim-0.5-resp-short"), [Part.of_text("Limit.")], limited)
    assert (short.text, short.finish_reason) == (UNKNOWN[:8], "length")
    assert short.usage.output_tokens == 2


def _response(status: str, reason: str | None = None, error: Any = None) -> Response:
    return Response.model_validate(
        {
            "id": "r1",
            "object": "response",
            "created_at": 0,
            "model": "m",
            "status": status,
            "incomplete_details": {"reason": reason} if reason else None,
            "error": error,
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
    )


def test_content_filter_and_failed_responses() -> None:
    with pytest.raises(ProviderError) as info:
        _finish_reason(_response("incomplete", "content_filter"), "req_1")
    assert (info.value.kind, info.value.status, info.value.request_id) == (
        ErrorKind.CONTENT_FILTERED,
        200,
        "req_1",
    )
    failed = _response("failed", error={"code": "server_error", "message": "boom"})
    with pytest.raises(ProviderError) as info:
        _finish_reason(failed, "req_2")
    assert (info.value.kind, info.value.message) == (
        ErrorKind.SERVER_ERROR,
        "response failed: server_error: boom",
    )
    assert _finish_reason(_response("incomplete", "max_output_tokens"), None) == "length"


def test_retries_are_visible_in_the_log_and_bounded(sim: SimulatorHandle) -> None:
    policy = RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.005)
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        await asyncio.sleep(seconds)

    async def run(name: str) -> tuple[Any, ProviderError | None, Any]:
        client = make_client(model(sim, name), "sk-test")
        try:
            return await call_with_retries(
                lambda: client.complete([Part.of_text(f"Retry {name}")], Decoding()),
                policy,
                sleep=sleep,
            )
        finally:
            await client.aclose()

    response, error, attempted = asyncio.run(run("sim-0.5-resp-flaky"))
    assert error is None and response.text == UNKNOWN
    assert attempted.attempts == 3
    assert [e.kind for e in attempted.errors] == [ErrorKind.SERVER_ERROR] * 2
    entries = log_for(sim, "sim-0.5-resp-flaky", count=3)
    assert [(e["n"], e["status"], e["attempt"]) for e in entries] == [
        (0, 503, 0),  # x-stainless-retry-count stays 0: the SDK itself never retries
        (1, 503, 0),
        (2, 200, 0),
    ]

    response, error, attempted = asyncio.run(run("sim-0.5-resp-down"))
    assert response is None and error is not None
    assert (error.kind, error.status, attempted.attempts) == (ErrorKind.SERVER_ERROR, 500, 3)
    entries = log_for(sim, "sim-0.5-resp-down", count=3)
    assert [(e["n"], e["status"]) for e in entries] == [(0, 500), (1, 500), (2, 500)]

    # 429s have their own budget, in waiting time: three attempts do not end the item.
    delays.clear()
    policy = RetryPolicy(
        max_attempts=3, base_delay_s=0.001, max_delay_s=0.005, max_rate_limited_s=0.1
    )
    response, error, attempted = asyncio.run(run("sim-0.5-resp-r429"))
    assert error.kind == ErrorKind.RATE_LIMITED
    assert attempted.attempts == len(delays) + 1 > 3
    assert all(d >= 0.03 for d in delays)  # retry-after-ms honoured
    assert 0.1 - 0.03 <= sum(delays) <= 0.1  # the whole budget waited, not more
    sha = prompt_sha256("Retry sim-0.5-resp-r429")
    entries = [
        e
        for e in log_for(sim, "sim-0.5-resp-r429", attempted.attempts)
        if e["prompt_sha256"] == sha
    ]
    assert [(e["n"], e["status"]) for e in entries] == [(n, 429) for n in range(attempted.attempts)]
