"""Faults, retries and rate limits as each official SDK sees them."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from evalfleet.simulator import prompt_sha256, start_simulator_in_thread
from evalfleet.simulator.answering import AnswerKey, answer
from evalfleet.simulator.faults import fault_draw
from evalfleet.simulator.process import SimulatorHandle
from evalfleet.simulator.samples import write_answer_key

PROMPTS = [f"Fault prompt {i}: give the total in braces." for i in range(40)]
RULES: list[dict[str, Any]] = [
    {"match": "*-x500", "faults": {"http_500": 1.0}},
    {"match": "*-x503", "faults": {"http_503": 1.0}},
    {"match": "*-x529", "faults": {"http_529": 1.0}},
    {"match": "*-hang", "faults": {"hang": 1.0, "hang_s": 30}},
    {"match": "*-badjson", "faults": {"malformed_json": 1.0}},
    {"match": "*-empty", "faults": {"empty_content": 1.0}},
    {"match": "*-trunc", "faults": {"truncate": 1.0}},
    {"match": "*-half", "faults": {"http_500": 0.5}},
    {"match": "*-ff2", "faults": {"fail_first_n": 2, "retry_after_ms": 5}},
    {
        "match": "*-ff429",
        "faults": {"fail_first_n": 1, "fail_first_status": 429, "retry_after_ms": 5},
    },
    {"match": "*-rpm3*", "requests_per_minute": 3},
    {"match": "*-tpm60", "tokens_per_minute": 60},
]


@pytest.fixture(scope="module")
def key_path(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("sim-faults")
    return write_answer_key(root / "key.jsonl", [(p, str(100 + i)) for i, p in enumerate(PROMPTS)])


@pytest.fixture(scope="module")
def sim(key_path: Any) -> Iterator[SimulatorHandle]:
    config = {"rules": RULES, "latency": {"ms": 1}}
    with start_simulator_in_thread(key_path, config, log_path=key_path.parent / "log.jsonl") as h:
        yield h


def _openai(sim: SimulatorHandle, **kwargs: Any) -> openai.OpenAI:
    options: dict[str, Any] = {"max_retries": 0, "_strict_response_validation": True}
    options.update(kwargs)
    return openai.OpenAI(base_url=sim.openai_base_url, api_key="sk-test", **options)


def _claude(sim: SimulatorHandle, **kwargs: Any) -> anthropic.Anthropic:
    options: dict[str, Any] = {"max_retries": 0, "_strict_response_validation": True}
    options.update(kwargs)
    return anthropic.Anthropic(base_url=sim.anthropic_base_url, api_key="sk-ant", **options)


def _gemini(sim: SimulatorHandle, timeout_ms: int = 5000) -> genai.Client:
    options = types.HttpOptions(
        base_url=sim.gemini_base_url, api_version="v1beta", timeout=timeout_ms
    )
    return genai.Client(api_key="g-key", http_options=options)


def _chat(client: openai.OpenAI, model: str, prompt: str, **kwargs: Any) -> Any:
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": prompt}], **kwargs
    )


def _message(client: anthropic.Anthropic, model: str, prompt: str, **kwargs: Any) -> Any:
    return client.messages.create(
        model=model, max_tokens=500, messages=[{"role": "user", "content": prompt}], **kwargs
    )


def _log_for(sim: SimulatorHandle, model: str, wait_s: float = 0.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + wait_s
    while True:
        lines = [x for x in sim.read_log() if x["model"] == model]
        if lines or time.monotonic() >= deadline:
            return lines
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("suffix", "status", "etype"),
    [("x500", 500, "server_error"), ("x503", 503, "server_error"), ("x529", 529, "server_error")],
)
def test_openai_server_errors(sim: SimulatorHandle, suffix: str, status: int, etype: str) -> None:
    with pytest.raises(openai.InternalServerError) as info:
        _chat(_openai(sim), f"sim-0.5-{suffix}", PROMPTS[0])
    assert info.value.status_code == status
    assert info.value.body["type"] == etype
    assert info.value.request_id.startswith("req_")


@pytest.mark.parametrize(
    ("suffix", "cls", "status", "etype"),
    [
        ("x500", anthropic.InternalServerError, 500, "api_error"),
        ("x503", anthropic.ServiceUnavailableError, 503, "api_error"),
        ("x529", anthropic.OverloadedError, 529, "overloaded_error"),
    ],
)
def test_anthropic_server_errors(
    sim: SimulatorHandle, suffix: str, cls: type, status: int, etype: str
) -> None:
    with pytest.raises(anthropic.APIStatusError) as info:
        _message(_claude(sim), f"sim-0.5-{suffix}", PROMPTS[0])
    assert type(info.value) is cls
    assert info.value.status_code == status
    assert info.value.type == etype
    assert info.value.request_id == info.value.body["request_id"]


@pytest.mark.parametrize(
    ("suffix", "status", "code"),
    [("x500", 500, "INTERNAL"), ("x503", 503, "UNAVAILABLE"), ("x529", 503, "UNAVAILABLE")],
)
def test_gemini_server_errors(sim: SimulatorHandle, suffix: str, status: int, code: str) -> None:
    client = _gemini(sim)
    with pytest.raises(genai_errors.ServerError) as info:
        client.models.generate_content(model=f"sim-0.5-{suffix}", contents=PROMPTS[0])
    assert (info.value.code, info.value.status) == (status, code)


def test_hangs_surface_as_client_timeouts(sim: SimulatorHandle) -> None:
    with pytest.raises(openai.APITimeoutError):
        _chat(_openai(sim, timeout=0.3), "sim-0.5-hang", PROMPTS[1])
    with pytest.raises(anthropic.APITimeoutError):
        _message(_claude(sim, timeout=0.3), "sim-0.6-hang", PROMPTS[1])
    client = _gemini(sim, timeout_ms=300)
    with pytest.raises(httpx2.ReadTimeout):
        client.models.generate_content(model="sim-0.7-hang", contents=PROMPTS[1])
    for model in ("sim-0.5-hang", "sim-0.6-hang", "sim-0.7-hang"):
        (line,) = _log_for(sim, model, wait_s=3.0)
        assert (line["status"], line["outcome"]) == (499, "hang")
        assert 250 < line["latency_ms"] < 3000


def test_malformed_json_bodies(sim: SimulatorHandle) -> None:
    with pytest.raises(json.JSONDecodeError):
        _chat(_openai(sim), "sim-0.5-badjson", PROMPTS[2])
    with pytest.raises(json.JSONDecodeError):
        _message(_claude(sim), "sim-0.5-badjson", PROMPTS[2])
    client = _gemini(sim)
    with pytest.raises(json.JSONDecodeError):
        client.models.generate_content(model="sim-0.5-badjson", contents=PROMPTS[2])
    statuses = {(x["status"], x["outcome"]) for x in _log_for(sim, "sim-0.5-badjson")}
    assert statuses == {(200, "malformed_json")}


def test_empty_content(sim: SimulatorHandle) -> None:
    completion = _chat(_openai(sim), "sim-0.5-empty", PROMPTS[3])
    assert completion.choices[0].message.content == ""
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.completion_tokens == 0
    message = _message(_claude(sim), "sim-0.5-empty", PROMPTS[3])
    assert message.content == [] and message.stop_reason == "end_turn"
    client = _gemini(sim)
    response = client.models.generate_content(model="sim-0.5-empty", contents=PROMPTS[3])
    assert response.text is None
    assert response.candidates[0].finish_reason == types.FinishReason.STOP


def test_truncate_fault_uses_each_length_signal(sim: SimulatorHandle, key_path: Any) -> None:
    key = AnswerKey.load(key_path)
    model, prompt = "sim-0.5-trunc", PROMPTS[4]
    full = answer(key, model, prompt_sha256(prompt), None, accuracy=0.5).text
    half = full[: len(full) // 2]
    completion = _chat(_openai(sim), model, prompt)
    assert completion.choices[0].finish_reason == "length"
    assert completion.choices[0].message.content == half
    response = _openai(sim).responses.create(model=model, input=prompt)
    assert response.status == "incomplete"
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.output_text == half
    message = _message(_claude(sim), model, prompt)
    assert message.stop_reason == "max_tokens" and message.content[0].text == half
    client = _gemini(sim)
    result = client.models.generate_content(model=model, contents=prompt)
    assert result.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert result.text == half
    lines = _log_for(sim, model)
    assert [(x["outcome"], x["correct"]) for x in lines] == [("truncate", False)] * 4


def test_fail_first_n_with_sdk_retries(sim: SimulatorHandle) -> None:
    raw = _openai(sim, max_retries=2).chat.completions.with_raw_response.create(
        model="sim-0.5-ff2", messages=[{"role": "user", "content": PROMPTS[5]}]
    )
    assert raw.retries_taken == 2
    assert raw.parse().choices[0].finish_reason == "stop"
    lines = _log_for(sim, "sim-0.5-ff2")
    assert [(x["attempt"], x["n"], x["status"], x["outcome"]) for x in lines] == [
        (0, 0, 503, "fail_first"),
        (1, 1, 503, "fail_first"),
        (2, 2, 200, "ok"),
    ]


def test_fail_first_n_with_our_own_retries(sim: SimulatorHandle) -> None:
    """With max_retries=0 the retry header stays 0; the server counts attempts itself."""
    claude = _claude(sim)
    for _ in range(2):
        with pytest.raises(anthropic.ServiceUnavailableError) as info:
            _message(claude, "sim-0.6-ff2", PROMPTS[6])
        assert info.value.response.headers["retry-after-ms"] == "5"
    assert _message(claude, "sim-0.6-ff2", PROMPTS[6]).stop_reason == "end_turn"
    client = _gemini(sim)
    for _ in range(2):
        with pytest.raises(genai_errors.ServerError):
            client.models.generate_content(model="sim-0.7-ff2", contents=PROMPTS[6])
    assert client.models.generate_content(model="sim-0.7-ff2", contents=PROMPTS[6]).text
    lines = _log_for(sim, "sim-0.6-ff2")
    assert [(x["attempt"], x["n"]) for x in lines] == [(0, 0), (0, 1), (0, 2)]


def test_fail_first_429_honours_retry_after_ms(sim: SimulatorHandle) -> None:
    started = time.monotonic()
    raw = _openai(sim, max_retries=1).chat.completions.with_raw_response.create(
        model="sim-0.5-ff429", messages=[{"role": "user", "content": PROMPTS[7]}]
    )
    assert raw.retries_taken == 1
    assert time.monotonic() - started < 0.5  # slept 5 ms, not the SDK's 0.5 s default


def test_random_faults_follow_the_attempt_draws(sim: SimulatorHandle) -> None:
    client = _openai(sim)
    model = "sim-0.5-half"
    for prompt in PROMPTS[10:20]:
        sha = prompt_sha256(prompt)
        outcomes = []
        for _ in range(6):
            try:
                _chat(client, model, prompt)
                outcomes.append("ok")
            except openai.InternalServerError:
                outcomes.append("http_500")
        expected = [
            "http_500" if fault_draw(0, model, sha, None, n) < 0.5 else "ok" for n in range(6)
        ]
        assert outcomes == expected
    assert {x["outcome"] for x in _log_for(sim, model)} == {"ok", "http_500"}


def _assert_go_duration_near_60s(value: str) -> None:
    assert re.fullmatch(r"(59\.\d{1,3}s|1m0s)", value), value


def test_openai_rpm_limit(sim: SimulatorHandle) -> None:
    client = _openai(sim)
    remaining = []
    for prompt in PROMPTS[20:23]:
        raw = client.chat.completions.with_raw_response.create(
            model="sim-0.5-rpm3-oa", messages=[{"role": "user", "content": prompt}]
        )
        remaining.append(raw.headers["x-ratelimit-remaining-requests"])
        assert raw.headers["x-ratelimit-limit-requests"] == "3"
    assert remaining == ["2", "1", "0"]
    with pytest.raises(openai.RateLimitError) as info:
        _chat(client, "sim-0.5-rpm3-oa", PROMPTS[23])
    headers = info.value.response.headers
    assert headers["x-ratelimit-limit-requests"] == "3"
    assert headers["x-ratelimit-remaining-requests"] == "0"
    _assert_go_duration_near_60s(headers["x-ratelimit-reset-requests"])
    assert headers["retry-after"] == "60"
    assert 59000 < int(headers["retry-after-ms"]) <= 60000
    assert info.value.body["type"] == "requests"
    assert info.value.body["code"] == "rate_limit_exceeded"
    assert info.value.body["message"].startswith("Rate limit reached for sim-0.5-rpm3-oa")
    assert _log_for(sim, "sim-0.5-rpm3-oa")[-1]["outcome"] == "rate_limited"


def test_openai_tpm_limit(sim: SimulatorHandle) -> None:
    client = _openai(sim)
    first = client.chat.completions.with_raw_response.create(
        model="sim-0.5-tpm60", messages=[{"role": "user", "content": PROMPTS[24]}]
    )
    used = first.parse().usage.total_tokens
    assert 30 < used <= 60  # a second request of this size does not fit
    assert first.headers["x-ratelimit-remaining-tokens"] == str(60 - used)
    with pytest.raises(openai.RateLimitError) as info:
        _chat(client, "sim-0.5-tpm60", PROMPTS[25])
    assert info.value.body["type"] == "tokens"
    assert info.value.response.headers["x-ratelimit-limit-tokens"] == "60"


def test_anthropic_rpm_limit(sim: SimulatorHandle) -> None:
    client = _claude(sim)
    for prompt in PROMPTS[26:29]:
        _message(client, "sim-0.5-rpm3-an", prompt)
    with pytest.raises(anthropic.RateLimitError) as info:
        _message(client, "sim-0.5-rpm3-an", PROMPTS[29])
    headers = info.value.response.headers
    assert headers["anthropic-ratelimit-requests-limit"] == "3"
    assert headers["anthropic-ratelimit-requests-remaining"] == "0"
    reset = datetime.strptime(headers["anthropic-ratelimit-requests-reset"], "%Y-%m-%dT%H:%M:%SZ")
    assert 55 < reset.replace(tzinfo=UTC).timestamp() - time.time() < 62
    assert headers["retry-after"] == "60"
    assert info.value.type == "rate_limit_error"


def test_gemini_rpm_limit(sim: SimulatorHandle) -> None:
    client = _gemini(sim)
    for prompt in PROMPTS[30:33]:
        client.models.generate_content(model="sim-0.5-rpm3-ge", contents=prompt)
    with pytest.raises(genai_errors.ClientError) as info:
        client.models.generate_content(model="sim-0.5-rpm3-ge", contents=PROMPTS[33])
    assert (info.value.code, info.value.status) == (429, "RESOURCE_EXHAUSTED")
    retry = [d for d in info.value.details["error"]["details"] if d["@type"].endswith("RetryInfo")]
    assert retry == [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "60s"}]


def test_reset_clears_windows_and_attempts(sim: SimulatorHandle) -> None:
    client = _openai(sim)
    for prompt in PROMPTS[34:37]:
        _chat(client, "sim-0.5-rpm3-reset", prompt)
    with pytest.raises(openai.RateLimitError):
        _chat(client, "sim-0.5-rpm3-reset", PROMPTS[37])
    sim.reset()
    assert _chat(client, "sim-0.5-rpm3-reset", PROMPTS[37]).choices[0].finish_reason == "stop"


def test_stop_ends_a_hang_at_once(key_path: Any) -> None:
    rules = [{"match": "*-hang", "faults": {"hang": 1.0, "hang_s": 60}}]
    handle = start_simulator_in_thread(key_path, {"rules": rules})
    client = _openai(handle, timeout=30)
    _chat(client, "sim-0.5", PROMPTS[0])  # warm up: the hanging call below is sent at once
    errors: list[Exception] = []

    def call() -> None:
        try:
            _chat(client, "sim-0.5-hang", PROMPTS[0])
        except Exception as err:  # noqa: BLE001 - recorded for the assertion below
            errors.append(err)

    worker = threading.Thread(target=call)
    worker.start()
    time.sleep(0.3)
    started = time.monotonic()
    handle.stop()
    worker.join(timeout=10)
    assert time.monotonic() - started < 3
    assert len(errors) == 1
    assert isinstance(errors[0], openai.InternalServerError)
    assert errors[0].status_code == 504
