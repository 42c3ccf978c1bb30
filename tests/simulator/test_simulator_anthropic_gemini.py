"""The simulator's Anthropic and Gemini protocols through the official SDKs."""

from __future__ import annotations

import base64
import json
import math
import urllib.request
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from evalfleet.simulator import draw_correct, prompt_sha256, start_simulator_in_thread
from evalfleet.simulator.process import SimulatorHandle
from evalfleet.simulator.samples import tiny_jpeg, tiny_png, tiny_wav, write_answer_key

PROMPTS = [f"Item {i}: which shape is shown? Put the answer in braces." for i in range(60)]
TARGETS = ["circle", "square", "triangle"]
MODELS = ["sim-0.5", "sim-0.5-think"]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatorHandle]:
    root = tmp_path_factory.mktemp("sim-ag")
    key = write_answer_key(root / "key.jsonl", [(p, TARGETS[i % 3]) for i, p in enumerate(PROMPTS)])
    config = {"models": MODELS, "reasoning_tokens": 50}
    with start_simulator_in_thread(key, config, log_path=root / "log.jsonl") as handle:
        yield handle


@pytest.fixture
def claude(sim: SimulatorHandle) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=sim.anthropic_base_url,
        api_key="sk-ant-test",
        max_retries=0,
        _strict_response_validation=True,
    )


@pytest.fixture
def gemini(sim: SimulatorHandle) -> genai.Client:
    return genai.Client(
        api_key="gemini-test-key",
        http_options=types.HttpOptions(
            base_url=sim.gemini_base_url, api_version="v1beta", timeout=5000
        ),
    )


def _image_block(media_type: str, data: bytes) -> dict[str, Any]:
    source = {"type": "base64", "media_type": media_type, "data": base64.b64encode(data).decode()}
    return {"type": "image", "source": source}


def test_anthropic_answers_match_the_answering_model(claude: anthropic.Anthropic) -> None:
    for i, prompt in enumerate(PROMPTS):
        message = claude.messages.create(
            model="sim-0.5",
            max_tokens=1000,
            messages=[{"role": "user", "content": prompt}],
            extra_body={"seed": 8},
        )
        expected = draw_correct("sim-0.5", prompt_sha256(prompt), 8, 0.5)
        assert message.content[0].text.endswith("{" + TARGETS[i % 3] + "}") is expected
        assert message.stop_reason == "end_turn"


def test_anthropic_thinking_block_and_headers(claude: anthropic.Anthropic) -> None:
    raw = claude.messages.with_raw_response.create(
        model="sim-0.5-think",
        max_tokens=2000,
        system="You are careful.",
        messages=[
            {
                "role": "user",
                "content": [
                    _image_block("image/png", tiny_png()),
                    {"type": "text", "text": PROMPTS[0]},
                ],
            }
        ],
    )
    message = raw.parse()
    assert raw.headers["request-id"] == message._request_id
    assert [block.type for block in message.content] == ["thinking", "text"]
    assert message.content[0].thinking.startswith("The user asks")
    assert "{" not in message.content[0].thinking
    assert message.usage.output_tokens_details.thinking_tokens == 50
    assert message.usage.output_tokens == 50 + math.ceil(len(message.content[1].text) / 4)
    chars = len("You are careful.") + len(PROMPTS[0])
    assert message.usage.input_tokens == math.ceil(chars / 4) + 258


def test_anthropic_accepts_x_api_key(sim: SimulatorHandle) -> None:
    request = urllib.request.Request(
        sim.anthropic_base_url + "/v1/messages",
        data=json.dumps(
            {"model": "sim-0.5", "max_tokens": 100, "messages": [{"role": "user", "content": "x"}]}
        ).encode(),
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        body = json.loads(response.read())
    assert body["type"] == "message" and body["content"][0]["text"] == "I do not know. {unknown}"


def test_anthropic_max_tokens_truncation(claude: anthropic.Anthropic) -> None:
    message = claude.messages.create(
        model="sim-0.5", max_tokens=3, messages=[{"role": "user", "content": PROMPTS[1]}]
    )
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens == 3
    assert len(message.content[0].text) == 12


def test_anthropic_media_type_mismatch_is_400(claude: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.BadRequestError) as info:
        claude.messages.create(
            model="sim-0.5",
            max_tokens=100,
            messages=[
                {
                    "role": "user",
                    "content": [
                        _image_block("image/png", tiny_jpeg()),
                        {"type": "text", "text": "what is it"},
                    ],
                }
            ],
        )
    assert info.value.type == "invalid_request_error"
    assert "Image does not match the provided media type image/png" in info.value.api_message


def test_anthropic_models(claude: anthropic.Anthropic) -> None:
    models = list(claude.models.list())
    assert [m.id for m in models] == MODELS
    assert models[0].lifecycle == "active"


def test_gemini_answers_and_usage(gemini: genai.Client) -> None:
    wav = tiny_wav()
    for i, prompt in enumerate(PROMPTS[:20]):
        response = gemini.models.generate_content(
            model="sim-0.5",
            contents=[
                prompt,
                types.Part.from_bytes(data=tiny_png(), mime_type="image/png"),
                types.Part.from_bytes(data=wav, mime_type="audio/wav"),
            ],
            config=types.GenerateContentConfig(seed=5),
        )
        expected = draw_correct("sim-0.5", prompt_sha256(prompt), 5, 0.5)
        assert response.text.endswith("{" + TARGETS[i % 3] + "}") is expected
        usage = response.usage_metadata
        assert usage.prompt_token_count == math.ceil(len(prompt) / 4) + 2 * 258
        assert usage.candidates_token_count == math.ceil(len(response.text) / 4)
        assert usage.thoughts_token_count is None
        assert response.candidates[0].finish_reason == types.FinishReason.STOP
        assert response.response_id.startswith("req_")


def test_gemini_thoughts_are_separate(gemini: genai.Client) -> None:
    plain = gemini.models.generate_content(model="sim-0.5-think", contents=PROMPTS[4])
    shown = gemini.models.generate_content(
        model="sim-0.5-think",
        contents=PROMPTS[4],
        config=types.GenerateContentConfig(
            thinking_config=types.ThinkingConfig(include_thoughts=True)
        ),
    )
    assert plain.text == shown.text
    assert len(plain.candidates[0].content.parts) == 1
    assert shown.candidates[0].content.parts[0].thought is True
    usage = shown.usage_metadata
    assert usage.thoughts_token_count == 50
    assert usage.candidates_token_count == math.ceil(len(shown.text) / 4)
    assert usage.total_token_count == usage.prompt_token_count + usage.candidates_token_count + 50


def test_gemini_snake_case_request_and_truncation(sim: SimulatorHandle) -> None:
    jpeg = base64.b64encode(tiny_jpeg()).decode()
    body = {
        "contents": [
            {
                "parts": [
                    {"text": PROMPTS[6]},
                    {"inline_data": {"mime_type": "image/jpeg", "data": jpeg}},
                ]
            }
        ],
        "generation_config": {"max_output_tokens": 4, "seed": 2},
    }
    request = urllib.request.Request(
        sim.gemini_base_url + "/v1/models/sim-0.5:generateContent",
        data=json.dumps(body).encode(),
        headers={"x-goog-api-key": "k", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200
        result = json.loads(response.read())
    candidate = result["candidates"][0]
    assert candidate["finishReason"] == "MAX_TOKENS"
    assert len(candidate["content"]["parts"][0]["text"]) == 16
    assert result["usageMetadata"]["promptTokenCount"] == math.ceil(len(PROMPTS[6]) / 4) + 258
    assert result["usageMetadata"]["candidatesTokenCount"] == 4


def test_gemini_bad_inline_data_is_400(gemini: genai.Client) -> None:
    with pytest.raises(genai_errors.ClientError) as info:
        gemini.models.generate_content(
            model="sim-0.5",
            contents=[
                types.Content(
                    role="user",
                    parts=[
                        types.Part(text="look"),
                        types.Part(inline_data=types.Blob(data=b"", mime_type="image/png")),
                    ],
                )
            ],
        )
    assert info.value.code == 400
    assert info.value.status == "INVALID_ARGUMENT"


def test_gemini_models_list(gemini: genai.Client) -> None:
    models = list(gemini.models.list())
    assert [m.name for m in models] == ["models/sim-0.5", "models/sim-0.5-think"]
    assert gemini.models.get(model="sim-0.5-think").name == "models/sim-0.5-think"


def test_gemini_prefixed_base_url_and_v1(sim: SimulatorHandle) -> None:
    client = genai.Client(
        api_key="gemini-test-key",
        http_options=types.HttpOptions(base_url=sim.url + "/gemini/", api_version="v1"),
    )
    response = client.models.generate_content(model="sim-0.5", contents=PROMPTS[10])
    expected = draw_correct("sim-0.5", prompt_sha256(PROMPTS[10]), None, 0.5)
    assert response.text.endswith("{" + TARGETS[10 % 3] + "}") is expected


def test_log_covers_both_protocols(
    claude: anthropic.Anthropic, gemini: genai.Client, sim: SimulatorHandle
) -> None:
    before = len(sim.read_log())
    claude.messages.create(
        model="sim-0.5", max_tokens=100, messages=[{"role": "user", "content": PROMPTS[9]}]
    )
    gemini.models.generate_content(model="sim-0.5", contents=PROMPTS[9])
    lines = sim.read_log()[before:]
    assert [(x["route"], x["status"], x["outcome"]) for x in lines] == [
        ("anthropic.messages", 200, "ok"),
        ("gemini.generate", 200, "ok"),
    ]
    assert lines[0]["attempt"] == 0 and lines[1]["attempt"] is None
    assert {x["prompt_sha256"] for x in lines} == {prompt_sha256(PROMPTS[9])}
    text = sim.log_path.read_text()
    assert "sk-ant-test" not in text and "gemini-test-key" not in text
