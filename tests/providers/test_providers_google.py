"""GoogleGenAIClient (the real google-genai SDK inside) against the simulator over HTTP."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from google.genai import types

from evalfleet.core.types import Decoding, Part
from evalfleet.providers.clients import make_client
from evalfleet.providers.google_errors import retry_delay_seconds
from evalfleet.providers.google_genai import from_generate_response, generation_config
from evalfleet.providers.registry import ModelConfig, resolve_model
from evalfleet.providers.retry import RetryPolicy, call_with_retries
from evalfleet.providers.types import ErrorKind, ProviderError
from evalfleet.simulator import draw_correct, prompt_sha256, start_simulator_in_thread
from evalfleet.simulator.answering import reasoning_for
from evalfleet.simulator.process import SimulatorHandle
from evalfleet.simulator.samples import tiny_jpeg, tiny_png, tiny_wav, write_answer_key
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
KEYED = [(f"Question {i}: which colour? Answer in braces.", "red") for i in range(8)]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatorHandle]:
    root = tmp_path_factory.mktemp("sim-google")
    key = write_answer_key(root / "key.jsonl", KEYED)
    config = {
        "image_tokens": IMAGE_TOKENS,
        "audio_tokens": AUDIO_TOKENS,
        "reasoning_tokens": REASONING_TOKENS,
        "rules": [{"match": f"*-{name}", "faults": faults} for name, faults in FAULTS.items()],
    }
    with start_simulator_in_thread(key, config, log_path=root / "log.jsonl") as handle:
        yield handle


def model(sim: SimulatorHandle, name: str, **changes: Any) -> ModelConfig:
    config = resolve_model(f"google/{name}", simulator_url=sim.url)
    return dataclasses.replace(config, **changes)


def test_images_and_audio_with_exact_usage_and_cost(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5-media")
    assert config.modalities == frozenset({"text", "image", "audio"})
    prompt = "Compare both images and transcribe the clip."
    parts = [
        Part.of_text(prompt),
        Part(kind="image", data=tiny_png(), media_type="image/png"),
        Part(kind="image", data=tiny_jpeg(), media_type="image/jpeg"),
        Part(kind="audio", data=tiny_wav(), media_type="audio/wav"),
    ]
    response = complete(config, parts, Decoding(max_tokens=500))
    expected_in = text_tokens(prompt) + 2 * IMAGE_TOKENS + AUDIO_TOKENS
    assert (response.text, response.finish_reason) == (UNKNOWN, "stop")
    assert (response.usage.input_tokens, response.usage.output_tokens) == (expected_in, 6)
    assert (response.usage.reasoning_tokens, response.usage.cached_input_tokens) == (0, 0)
    assert config.cost_usd(expected_in, 6) == (expected_in * 1.0 + 6 * 4.0) / 1e6
    [entry] = log_for(sim, "sim-0.5-media")
    assert entry["input_tokens"] == expected_in
    assert response.request_id == entry["request_id"]  # Gemini's responseId
    assert response.model_reported == "sim-0.5-media"


def test_thoughts_are_kept_apart_and_counted_in_output(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5-think")
    assert (config.thinking, config.thinking_budget) == ("budget", 1024)
    prompt = "Think before answering."
    response = complete(config, [Part.of_text(prompt)], Decoding(max_tokens=2000))
    assert response.text == UNKNOWN
    assert response.reasoning_text == reasoning_for("sim-0.5-think", prompt_sha256(prompt))
    usage = response.usage
    assert (usage.output_tokens, usage.reasoning_tokens) == (6 + REASONING_TOKENS, REASONING_TOKENS)
    [entry] = log_for(sim, "sim-0.5-think")
    assert entry["output_tokens"] == 6 + REASONING_TOKENS


def test_effort_none_sends_a_zero_budget(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5-think")
    off = Decoding(max_tokens=500, reasoning_effort="none")
    response = complete(config, [Part.of_text("No thinking.")], off)
    assert (response.usage.reasoning_tokens, response.reasoning_text) == (0, None)
    assert generation_config(config, off).thinking_config == types.ThinkingConfig(thinking_budget=0)


def test_generation_config_per_model() -> None:
    gemini3 = resolve_model("google/gemini-3-pro-preview")
    decoding = Decoding(max_tokens=100_000, temperature=0.3, top_p=0.9, seed=4)
    cfg = generation_config(gemini3, decoding)
    assert cfg.automatic_continuation is False
    assert (cfg.max_output_tokens, cfg.temperature, cfg.top_p, cfg.seed) == (65536, 0.3, 0.9, 4)
    assert cfg.thinking_config == types.ThinkingConfig(
        include_thoughts=True, thinking_level=types.ThinkingLevel.HIGH
    )
    low = generation_config(gemini3, dataclasses.replace(decoding, reasoning_effort="low"))
    assert low.thinking_config.thinking_level == types.ThinkingLevel.LOW
    flash = generation_config(resolve_model("google/gemini-2.5-flash"), decoding)
    assert flash.thinking_config == types.ThinkingConfig(include_thoughts=True, thinking_budget=-1)


def test_seed_reaches_the_simulator(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5")
    for prompt, target in KEYED:
        response = complete(config, [Part.of_text(prompt)], Decoding(max_tokens=500, seed=21))
        correct = draw_correct("sim-0.5", prompt_sha256(prompt), 21, 0.5)
        assert response.text.endswith("{" + target + "}") is correct


@pytest.mark.parametrize(
    ("fault", "kind", "status"),
    [
        ("f500", ErrorKind.SERVER_ERROR, 500),
        ("f503", ErrorKind.OVERLOADED, 503),
        ("f529", ErrorKind.OVERLOADED, 503),  # Gemini answers overload with 503 UNAVAILABLE
        ("r429", ErrorKind.RATE_LIMITED, 429),
        ("malformed", ErrorKind.MALFORMED_RESPONSE, 200),
    ],
)
def test_faults_map_to_the_taxonomy(
    sim: SimulatorHandle, fault: str, kind: ErrorKind, status: int
) -> None:
    name = f"sim-0.5-{fault}"
    error = failure(model(sim, name), [Part.of_text(f"Fault {fault}")], Decoding(max_tokens=100))
    [entry] = log_for(sim, name)
    assert (error.kind, error.status, entry["status"]) == (kind, status, status)
    assert error.request_id is None  # Gemini sends its id (responseId) only in successes
    # The 429 carries RetryInfo "1s" (whole seconds), which wins over retry-after-ms: 30.
    assert error.retry_after_s == (1.0 if fault == "r429" else None)


def test_retry_info_is_read_from_the_error_body() -> None:
    detail = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37.5s"}
    assert retry_delay_seconds({"error": {"code": 429, "details": [detail]}}) == 37.5
    assert retry_delay_seconds({"error": {"code": 429}}) is None


def test_hang_past_the_client_timeout_is_a_timeout(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5-hang", timeout_s=1.0)
    started = time.monotonic()
    error = failure(config, [Part.of_text("Hang.")], Decoding(max_tokens=100))
    assert 1.0 <= time.monotonic() - started < 5.0
    assert (error.kind, error.status, error.request_id) == (ErrorKind.TIMEOUT, None, None)
    assert isinstance(error.__cause__, httpx2.ReadTimeout)
    [entry] = log_for(sim, "sim-0.5-hang")
    assert entry["outcome"] == "hang"


def test_connection_refused_is_a_connection_error(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5", base_url="http://127.0.0.1:9/")
    error = failure(config, [Part.of_text("Nobody home.")], Decoding())
    assert (error.kind, error.status) == (ErrorKind.CONNECTION, None)
    assert isinstance(error.__cause__, httpx2.ConnectError)


def test_empty_content_is_returned_with_its_usage(sim: SimulatorHandle) -> None:
    """The worker turns an empty text into EMPTY_ANSWER while keeping usage and finish."""
    config = model(sim, "sim-0.5-think-empty")
    response = complete(config, [Part.of_text("Empty, please.")], Decoding(max_tokens=2000))
    assert (response.text, response.finish_reason) == ("", "stop")
    assert response.usage.output_tokens == response.usage.reasoning_tokens == REASONING_TOKENS


def test_truncation_and_max_tokens_finish_with_length(sim: SimulatorHandle) -> None:
    truncated = complete(model(sim, "sim-0.5-truncate"), [Part.of_text("Cut.")], Decoding())
    assert (truncated.text, truncated.finish_reason) == (UNKNOWN[:12], "length")
    assert truncated.usage.output_tokens == 3
    assert truncated.extra == {"finish_reason": "MAX_TOKENS"}
    limited = Decoding(max_tokens=2)
    short = complete(model(sim, "sim-0.5-short"), [Part.of_text("Limit.")], limited)
    assert (short.text, short.finish_reason) == (UNKNOWN[:8], "length")
    assert short.usage.output_tokens == 2


def test_blocked_prompt_and_safety_stop_are_content_filtered() -> None:
    blocked = types.GenerateContentResponse(
        prompt_feedback=types.GenerateContentResponsePromptFeedback(
            block_reason=types.BlockedReason.PROHIBITED_CONTENT
        ),
        response_id="r1",
    )
    with pytest.raises(ProviderError) as info:
        from_generate_response(blocked)
    assert (info.value.kind, info.value.request_id) == (ErrorKind.CONTENT_FILTERED, "r1")
    unsafe = types.GenerateContentResponse(
        candidates=[types.Candidate(finish_reason=types.FinishReason.SAFETY)], response_id="r2"
    )
    with pytest.raises(ProviderError) as info:
        from_generate_response(unsafe)
    assert (info.value.kind, info.value.message) == (
        ErrorKind.CONTENT_FILTERED,
        "blocked: answer (SAFETY)",
    )


def test_retries_are_visible_in_the_log_and_bounded(sim: SimulatorHandle) -> None:
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        await asyncio.sleep(seconds)

    async def run(name: str, attempts: int) -> tuple[Any, ProviderError | None, Any]:
        policy = RetryPolicy(
            max_attempts=attempts, base_delay_s=0.001, max_delay_s=0.005, max_rate_limited_s=1.5
        )
        client = make_client(model(sim, name), "gemini-test-key")
        try:
            return await call_with_retries(
                lambda: client.complete([Part.of_text(f"Retry {name}")], Decoding()),
                policy,
                sleep=sleep,
            )
        finally:
            await client.aclose()

    response, error, attempted = asyncio.run(run("sim-0.5-flaky", 3))
    assert error is None and response.text == UNKNOWN
    assert attempted.attempts == 3
    assert [e.kind for e in attempted.errors] == [ErrorKind.OVERLOADED] * 2
    entries = log_for(sim, "sim-0.5-flaky", count=3)
    assert [(e["n"], e["status"]) for e in entries] == [(0, 503), (1, 503), (2, 200)]

    response, error, attempted = asyncio.run(run("sim-0.5-down", 3))
    assert response is None and error is not None
    assert (error.kind, error.status, attempted.attempts) == (ErrorKind.SERVER_ERROR, 500, 3)
    entries = log_for(sim, "sim-0.5-down", count=3)
    assert [(e["n"], e["status"]) for e in entries] == [(0, 500), (1, 500), (2, 500)]

    # 429s are bounded by waiting time (1.5 s here), not attempts: the second RetryInfo wait
    # of 1 s would pass it, so the item ends after two attempts and one wait.
    delays.clear()
    response, error, attempted = asyncio.run(run("sim-0.5-r429", 1))
    assert (error.kind, attempted.attempts) == (ErrorKind.RATE_LIMITED, 2)
    assert len(delays) == 1 and delays[0] >= 1.0  # RetryInfo honoured
