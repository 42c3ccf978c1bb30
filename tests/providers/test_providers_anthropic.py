"""AnthropicMessagesClient (the real anthropic SDK inside) against the simulator over HTTP."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from evalfleet.core.types import Decoding, Part
from evalfleet.providers.anthropic_messages import (
    from_message,
    messages_arguments,
    messages_content,
)
from evalfleet.providers.clients import make_client
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
REASONING_TOKENS = 40
FAULTS = fault_rules(flaky_status=529)
KEYED = [(f"Question {i}: which shape? Answer in braces.", "circle") for i in range(8)]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatorHandle]:
    root = tmp_path_factory.mktemp("sim-anthropic")
    key = write_answer_key(root / "key.jsonl", KEYED)
    config = {
        "image_tokens": IMAGE_TOKENS,
        "reasoning_tokens": REASONING_TOKENS,
        "rules": [{"match": f"*-{name}", "faults": faults} for name, faults in FAULTS.items()],
    }
    with start_simulator_in_thread(key, config, log_path=root / "log.jsonl") as handle:
        yield handle


def model(sim: SimulatorHandle, name: str, **changes: Any) -> ModelConfig:
    config = resolve_model(f"anthropic/{name}", simulator_url=sim.url)
    return dataclasses.replace(config, **changes)


def png() -> Part:
    return Part(kind="image", data=tiny_png(), media_type="image/png")


def jpeg() -> Part:
    return Part(kind="image", data=tiny_jpeg(), media_type="image/jpeg")


def test_several_images_in_order_with_exact_usage_and_cost(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5-images")
    prompt = "Compare the three images."
    parts = [png(), Part.of_text(prompt), jpeg(), png()]
    response = complete(config, parts, Decoding(max_tokens=500))
    expected_in = text_tokens(prompt) + 3 * IMAGE_TOKENS
    assert response.text == UNKNOWN
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (expected_in, 6)
    assert (response.usage.reasoning_tokens, response.usage.cached_input_tokens) == (0, 0)
    assert response.reasoning_text is None
    assert config.cost_usd(expected_in, 6) == (expected_in * 1.0 + 6 * 4.0) / 1e6
    [entry] = log_for(sim, "sim-0.5-images")
    assert entry["input_tokens"] == expected_in
    assert response.request_id == entry["request_id"]
    assert response.model_reported == "sim-0.5-images"
    kinds = [block["type"] for block in messages_content(config, parts)]
    assert kinds == ["image", "text", "image", "image"]
    media = [b["source"]["media_type"] for b in messages_content(config, parts) if "source" in b]
    assert media == ["image/png", "image/jpeg", "image/png"]


def test_media_type_is_sent_as_given(sim: SimulatorHandle) -> None:
    """PNG bytes labelled JPEG reach the API unchanged, which refuses them."""
    config = model(sim, "sim-0.5-mislabelled")
    wrong = Part(kind="image", data=tiny_png(), media_type="image/jpeg")
    error = failure(config, [Part.of_text("What is it?"), wrong], Decoding(max_tokens=100))
    assert (error.kind, error.status) == (ErrorKind.BAD_REQUEST, 400)
    assert "does not match the provided media type image/jpeg" in error.message
    [entry] = [e for e in sim.read_log() if e["request_id"] == error.request_id]
    assert (entry["route"], entry["status"]) == ("anthropic.messages", 400)


def test_audio_is_refused_before_any_request(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5-audio")
    assert config.modalities == frozenset({"text", "image"})
    audio = Part(kind="audio", data=tiny_wav(), media_type="audio/wav")
    error = failure(config, [Part.of_text("Transcribe."), audio], Decoding())
    assert error.kind == ErrorKind.BAD_REQUEST
    assert error.message == (
        "anthropic/sim-0.5-audio cannot take part 1 (audio): the messages API takes image, text"
    )
    assert log_for(sim, "sim-0.5-audio", count=0) == []


def test_thinking_is_kept_apart_from_the_answer(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5-think")
    assert (config.thinking, config.thinking_budget) == ("enabled", 1024)
    prompt = "Think about this image."
    response = complete(config, [Part.of_text(prompt), png()], Decoding(max_tokens=2000))
    assert response.text == UNKNOWN
    assert response.reasoning_text == reasoning_for("sim-0.5-think", prompt_sha256(prompt))
    usage = response.usage
    assert (usage.output_tokens, usage.reasoning_tokens) == (6 + REASONING_TOKENS, REASONING_TOKENS)
    assert usage.input_tokens == text_tokens(prompt) + IMAGE_TOKENS
    args = messages_arguments(config, Decoding(max_tokens=2000, temperature=0.5, seed=3))
    assert args == {
        "max_tokens": 2000,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "extra_body": {"seed": 3},  # no sampling with thinking on
    }


def test_effort_none_turns_thinking_off(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5-think")
    prompt = "Answer without thinking."
    response = complete(config, [Part.of_text(prompt)], Decoding(reasoning_effort="none"))
    assert (response.usage.reasoning_tokens, response.reasoning_text) == (0, None)
    off = messages_arguments(
        config, Decoding(max_tokens=50, temperature=0.5, reasoning_effort="none")
    )
    assert off == {
        "max_tokens": 50,
        "thinking": {"type": "disabled"},
        "extra_body": {"temperature": 0.5},
    }


def test_thinking_budget_must_fit_below_max_tokens(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5-think")
    error = failure(config, [Part.of_text("Short budget.")], Decoding(max_tokens=1024))
    assert error.kind == ErrorKind.BAD_REQUEST
    assert error.message == (
        "anthropic/sim-0.5-think: max_tokens 1024 leaves no room for a thinking budget of "
        "1024 tokens"
    )


def test_adaptive_thinking_sends_effort() -> None:
    config = resolve_model("anthropic/claude-opus-4-7")
    args = messages_arguments(config, Decoding(max_tokens=8000, temperature=0.2, seed=1))
    assert args == {
        "max_tokens": 8000,
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "high"},
    }
    low = messages_arguments(config, Decoding(max_tokens=8000, reasoning_effort="minimal"))
    assert low["output_config"] == {"effort": "low"}


def test_seed_reaches_the_simulator(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5")
    for prompt, target in KEYED:
        response = complete(config, [Part.of_text(prompt)], Decoding(max_tokens=500, seed=11))
        correct = draw_correct("sim-0.5", prompt_sha256(prompt), 11, 0.5)
        assert response.text.endswith("{" + target + "}") is correct


@pytest.mark.parametrize(
    ("fault", "kind", "status"),
    [
        ("f500", ErrorKind.SERVER_ERROR, 500),
        ("f503", ErrorKind.SERVER_ERROR, 503),
        ("f529", ErrorKind.OVERLOADED, 529),
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
    assert (error.kind, error.status, error.request_id) == (kind, status, entry["request_id"])
    assert error.retry_after_s == (0.03 if fault == "r429" else None)


def test_hang_past_the_client_timeout_is_a_timeout(sim: SimulatorHandle) -> None:
    config = model(sim, "sim-0.5-hang", timeout_s=1.0)
    started = time.monotonic()
    error = failure(config, [Part.of_text("Hang.")], Decoding(max_tokens=100))
    assert 1.0 <= time.monotonic() - started < 5.0
    assert (error.kind, error.status, error.request_id) == (ErrorKind.TIMEOUT, None, None)
    assert isinstance(error.__cause__, anthropic.APITimeoutError)
    [entry] = log_for(sim, "sim-0.5-hang")
    assert entry["outcome"] == "hang"


def test_empty_content_is_returned_with_its_usage(sim: SimulatorHandle) -> None:
    """The worker turns an empty text into EMPTY_ANSWER while keeping usage and finish."""
    config = model(sim, "sim-0.5-think-empty")
    prompt = "Empty, please."
    response = complete(config, [Part.of_text(prompt)], Decoding(max_tokens=2000))
    assert (response.text, response.finish_reason) == ("", "stop")
    assert response.usage.output_tokens == response.usage.reasoning_tokens == REASONING_TOKENS
    assert response.reasoning_text == reasoning_for("sim-0.5-think-empty", prompt_sha256(prompt))


def test_truncation_and_max_tokens_finish_with_length(sim: SimulatorHandle) -> None:
    truncated = complete(model(sim, "sim-0.5-truncate"), [Part.of_text("Cut.")], Decoding())
    assert (truncated.text, truncated.finish_reason) == (UNKNOWN[:12], "length")
    assert truncated.usage.output_tokens == 3
    assert truncated.extra == {"stop_reason": "max_tokens"}
    limited = Decoding(max_tokens=2)
    short = complete(model(sim, "sim-0.5-short"), [Part.of_text("Limit.")], limited)
    assert (short.text, short.finish_reason) == (UNKNOWN[:8], "length")
    assert short.usage.output_tokens == 2


def test_retries_are_visible_in_the_log_and_bounded(sim: SimulatorHandle) -> None:
    policy = RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.005)
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        await asyncio.sleep(seconds)

    async def run(name: str) -> tuple[Any, ProviderError | None, Any]:
        client = make_client(model(sim, name), "sk-ant-test")
        try:
            return await call_with_retries(
                lambda: client.complete([Part.of_text(f"Retry {name}")], Decoding()),
                policy,
                sleep=sleep,
            )
        finally:
            await client.aclose()

    response, error, attempted = asyncio.run(run("sim-0.5-flaky"))
    assert error is None and response.text == UNKNOWN
    assert attempted.attempts == 3
    assert [e.kind for e in attempted.errors] == [ErrorKind.OVERLOADED] * 2
    entries = log_for(sim, "sim-0.5-flaky", count=3)
    assert [(e["n"], e["status"]) for e in entries] == [(0, 529), (1, 529), (2, 200)]

    response, error, attempted = asyncio.run(run("sim-0.5-down"))
    assert response is None and error is not None
    assert (error.kind, error.status, attempted.attempts) == (ErrorKind.SERVER_ERROR, 500, 3)
    entries = log_for(sim, "sim-0.5-down", count=3)
    assert [(e["n"], e["status"]) for e in entries] == [(0, 500), (1, 500), (2, 500)]
    assert error.request_id == entries[-1]["request_id"]

    # 429s have their own budget, in waiting time: three attempts do not end the item.
    delays.clear()
    policy = RetryPolicy(
        max_attempts=3, base_delay_s=0.001, max_delay_s=0.005, max_rate_limited_s=0.2
    )
    response, error, attempted = asyncio.run(run("sim-0.5-r429"))
    assert error.kind == ErrorKind.RATE_LIMITED and attempted.attempts > 3
    assert all(d >= 0.03 for d in delays)  # retry-after-ms honoured
    assert 0.2 - 0.03 <= sum(delays) <= 0.2  # the whole budget waited, not more


def test_key_is_never_shown(sim: SimulatorHandle) -> None:
    client = make_client(model(sim, "sim-0.5"), "sk-ant-secret")
    assert "sk-ant-secret" not in repr(client)
    asyncio.run(client.aclose())


def test_refusal_is_content_filtered_and_odd_images_are_refused(sim: SimulatorHandle) -> None:
    message = anthropic.types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [],
            "stop_reason": "refusal",
            "usage": {"input_tokens": 3, "output_tokens": 0},
        }
    )
    with pytest.raises(ProviderError) as info:
        from_message(message, "req_9")
    assert (info.value.kind, info.value.status, info.value.request_id) == (
        ErrorKind.CONTENT_FILTERED,
        200,
        "req_9",
    )
    bmp = Part(kind="image", data=b"BM\x00\x00", media_type="image/bmp")
    with pytest.raises(ProviderError) as info:
        messages_content(model(sim, "sim-0.5"), [Part.of_text("Look."), bmp])
    assert info.value.message == (
        "anthropic/sim-0.5 cannot take part 1 (image): image/bmp is not an image type it takes"
    )
