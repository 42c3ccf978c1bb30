"""The simulator's OpenAI protocols (chat completions, responses, models) through the openai SDK."""

from __future__ import annotations

import base64
import json
import math
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from evalfleet.simulator import draw_correct, prompt_sha256, start_simulator_in_thread
from evalfleet.simulator.process import SimulatorHandle
from evalfleet.simulator.samples import tiny_jpeg, tiny_png, tiny_wav, write_answer_key

PROMPTS = [f"Problem {i}: count the dots and give the number in braces." for i in range(120)]
LETTER_PROMPT = "Which colour is the sky? A) green B) blue C) red. Reply with ANSWER: <letter>."
API_KEY = "sk-test-openai-secret-0123"
MODELS = ["sim-0.3", "sim-0.5-think", "sim-0.9"]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatorHandle]:
    root = tmp_path_factory.mktemp("sim-openai")
    items: list = [(p, str(i * 3)) for i, p in enumerate(PROMPTS)]
    items.append((LETTER_PROMPT, "B", "ANSWER: {answer}", ["A", "B", "C"]))
    key = write_answer_key(root / "key.jsonl", items)
    config = {"models": MODELS, "reasoning_tokens": 100, "latency": {"ms": 1}}
    with start_simulator_in_thread(key, config, log_path=root / "log.jsonl") as handle:
        yield handle


@pytest.fixture
def client(sim: SimulatorHandle) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=sim.openai_base_url,
        api_key=API_KEY,
        max_retries=0,
        _strict_response_validation=True,
    )


def _chat(client: openai.OpenAI, model: str, prompt: str, **kwargs: Any) -> Any:
    content = [{"type": "text", "text": prompt}]
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": content}], **kwargs
    )


def _data_url(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def test_chat_correctness_matches_the_answering_model_exactly(client: openai.OpenAI) -> None:
    correct = 0
    for i, prompt in enumerate(PROMPTS):
        result = _chat(client, "sim-0.3", prompt, seed=11)
        expected = draw_correct("sim-0.3", prompt_sha256(prompt), 11, 0.3)
        text = result.choices[0].message.content
        assert text.endswith("{" + str(i * 3) + "}") is expected, (i, text)
        if not expected:
            assert text.rstrip("}").rsplit("{", 1)[1] != str(i * 3)
        correct += expected
    assert 0.3 * 120 - 4 * 5.0 < correct < 0.3 * 120 + 4 * 5.0  # binomial sd ~5.0


def test_chat_same_seed_same_text_and_seed_changes_draw(client: openai.OpenAI) -> None:
    def texts(seed: int | None, prompts: list[str]) -> list[str]:
        return [
            _chat(client, "sim-0.5-think", p, seed=seed).choices[0].message.content for p in prompts
        ]

    assert texts(1, PROMPTS[:30]) == texts(1, PROMPTS[:30])
    assert texts(1, PROMPTS[:30]) != texts(2, PROMPTS[:30])
    assert len(set(texts(None, PROMPTS[:1] * 3))) == 1


def test_chat_body_and_headers(client: openai.OpenAI) -> None:
    raw = client.chat.completions.with_raw_response.create(
        model="sim-0.5-think", messages=[{"role": "user", "content": PROMPTS[0]}], seed=3
    )
    completion = raw.parse()
    assert raw.headers["x-request-id"].startswith("req_")
    assert completion._request_id == raw.headers["x-request-id"]
    assert completion.object == "chat.completion"
    assert completion.model == "sim-0.5-think"
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    usage = completion.usage
    assert usage.completion_tokens_details.reasoning_tokens == 100
    visible = math.ceil(len(choice.message.content) / 4)
    assert usage.completion_tokens == 100 + visible
    assert usage.prompt_tokens == math.ceil(len(PROMPTS[0]) / 4)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert choice.message.model_extra["reasoning_content"].startswith("The user asks")


def test_chat_multimodal_usage_and_letter_format(client: openai.OpenAI) -> None:
    png = _data_url("image/png", tiny_png())
    jpeg = _data_url("image/jpeg", tiny_jpeg())
    wav = base64.b64encode(tiny_wav()).decode()
    completion = client.chat.completions.create(
        model="sim-0.9",
        seed=4,
        messages=[
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": LETTER_PROMPT},
                    {"type": "image_url", "image_url": {"url": png}},
                    {"type": "image_url", "image_url": {"url": jpeg}},
                    {"type": "input_audio", "input_audio": {"data": wav, "format": "wav"}},
                ],
            },
        ],
    )
    text_chars = len("Be brief.") + len(LETTER_PROMPT)
    assert completion.usage.prompt_tokens == math.ceil(text_chars / 4) + 3 * 258
    expected = draw_correct("sim-0.9", prompt_sha256(LETTER_PROMPT), 4, 0.9)
    last_line = completion.choices[0].message.content.splitlines()[-1]
    assert (last_line == "ANSWER: B") is expected
    assert last_line in ("ANSWER: A", "ANSWER: B", "ANSWER: C")


def test_chat_rejects_broken_media(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="sim-0.3",
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "look"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}},
                    ],
                }
            ],
        )
    assert info.value.status_code == 400
    assert info.value.body["type"] == "invalid_request_error"
    assert info.value.body["param"] is None
    assert "messages[0].content[1].image_url.url" in info.value.body["message"]


def test_chat_truncates_at_max_completion_tokens(client: openai.OpenAI) -> None:
    full = _chat(client, "sim-0.3", PROMPTS[5], seed=9).choices[0].message.content
    cut = _chat(client, "sim-0.3", PROMPTS[5], seed=9, max_completion_tokens=5)
    assert cut.choices[0].finish_reason == "length"
    assert cut.choices[0].message.content == full[:20]
    assert cut.usage.completion_tokens == 5


def test_unknown_prompt_answer(client: openai.OpenAI) -> None:
    text = _chat(client, "sim-0.9", "not in the key").choices[0].message.content
    assert text == "I do not know. {unknown}"


def test_lax_client_parses_too(sim: SimulatorHandle) -> None:
    lax = openai.OpenAI(base_url=sim.openai_base_url, api_key=API_KEY, max_retries=0)
    completion = lax.chat.completions.create(
        model="sim-0.3", messages=[{"role": "user", "content": PROMPTS[1]}], seed=11
    )
    assert completion.choices[0].message.content.endswith("}")


def test_responses_think_model(client: openai.OpenAI) -> None:
    response = client.responses.create(
        model="sim-0.5-think",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": PROMPTS[2]},
                    {
                        "type": "input_image",
                        "image_url": _data_url("image/png", tiny_png()),
                        "detail": "auto",
                    },
                ],
            }
        ],
    )
    assert response.status == "completed"
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.output[0].summary[0].text.startswith("The user asks")
    assert response.usage.output_tokens_details.reasoning_tokens == 100
    assert response.usage.input_tokens_details.cache_write_tokens == 0
    assert response.usage.input_tokens == math.ceil(len(PROMPTS[2]) / 4) + 258
    expected = draw_correct("sim-0.5-think", prompt_sha256(PROMPTS[2]), None, 0.5)
    assert response.output_text.endswith("{6}") is expected


def test_responses_truncation_is_incomplete(client: openai.OpenAI) -> None:
    response = client.responses.create(model="sim-0.3", input=PROMPTS[3], max_output_tokens=16)
    assert response.status == "incomplete"
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.usage.output_tokens == 16
    assert len(response.output_text) == 64


def test_models_list_and_retrieve(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == MODELS
    assert client.models.retrieve("sim-0.9").owned_by == "evalfleet-sim"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("nope")


def test_missing_key_is_401(sim: SimulatorHandle) -> None:
    request = urllib.request.Request(
        sim.openai_base_url + "/chat/completions",
        data=json.dumps(
            {"model": "sim-0.3", "messages": [{"role": "user", "content": "x"}]}
        ).encode(),
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=5)
    assert info.value.code == 401
    body = json.loads(info.value.read())
    assert body["error"]["code"] == "invalid_api_key"


def test_log_lines_have_the_fields_and_no_key(client: openai.OpenAI, sim: SimulatorHandle) -> None:
    before = len(sim.read_log())
    _chat(client, "sim-0.3", PROMPTS[7], seed=42)
    client.responses.create(model="sim-0.3", input=PROMPTS[7])
    lines = sim.read_log()
    assert len(lines) == before + 2
    chat, responses = lines[-2:]
    assert chat["route"] == "openai.chat" and responses["route"] == "openai.responses"
    assert chat["model"] == "sim-0.3"
    assert chat["prompt_sha256"] == prompt_sha256(PROMPTS[7])
    assert (chat["seed"], responses["seed"]) == (42, None)
    assert (chat["status"], chat["outcome"], chat["attempt"], chat["auth"]) == (200, "ok", 0, True)
    assert chat["correct"] == draw_correct("sim-0.3", prompt_sha256(PROMPTS[7]), 42, 0.3)
    assert isinstance(chat["t"], float) and chat["latency_ms"] >= 1.0
    text = Path(sim.log_path).read_text()
    assert API_KEY not in text and "sk-test" not in text


def test_provider_prefixed_routes(sim: SimulatorHandle) -> None:
    client = openai.OpenAI(
        base_url=sim.url + "/openai/v1",
        api_key=API_KEY,
        max_retries=0,
        _strict_response_validation=True,
    )
    assert [m.id for m in client.models.list()] == MODELS
    completion = _chat(client, "sim-0.9", PROMPTS[8], seed=1)
    assert (
        completion.choices[0].message.content
        == _chat(
            openai.OpenAI(base_url=sim.openai_base_url, api_key=API_KEY, max_retries=0),
            "sim-0.9",
            PROMPTS[8],
            seed=1,
        )
        .choices[0]
        .message.content
    )
