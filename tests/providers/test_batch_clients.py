"""The batch clients (providers/batch*.py) against the simulator's batch APIs, through the
official SDKs: OpenAI chat and Responses (Files + Batches), Anthropic Message Batches, Gemini
inline batches. Each line must be answered exactly as the online client answers the same
request; failures, expiry and cancels give the errors the interface promises; `find` recovers
a job whose id was lost.

The simulator's batch clock is moved with `advance_batches`; with `completion_s: 100` and five
lines, line i is due 20 * (i + 1) s after the create.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from evalfleet.core.types import ConfigError, Decoding, Part
from evalfleet.providers.batch import (
    BatchClient,
    BatchInputError,
    BatchLine,
    BatchNotEnded,
    LineResult,
    custom_id,
    custom_id_matches,
    make_batch_client,
)
from evalfleet.providers.batch_anthropic import AnthropicBatchClient
from evalfleet.providers.batch_google import GoogleBatchClient
from evalfleet.providers.batch_openai import OpenAIBatchClient
from evalfleet.providers.clients import make_client
from evalfleet.providers.registry import ModelConfig, resolve_model
from evalfleet.providers.types import ErrorKind, ProviderError, ProviderResponse
from evalfleet.simulator import prompt_sha256, start_simulator_in_thread
from evalfleet.simulator.faults import batch_line_draw
from evalfleet.simulator.process import SimulatorHandle
from evalfleet.simulator.samples import tiny_png, write_answer_key

PROMPTS = [f"Batch client item {i}: how many dots? Answer in braces." for i in range(30)]
MODELS = {
    "chat": "openai/sim-0.5",
    "responses": "openai/sim-0.5-resp",
    "messages": "anthropic/sim-0.7",
    "generate_content": "google/sim-0.5",
}
APIS = list(MODELS)
SLOW = {"completion_s": 100, "finalize_s": 10}  # 5 lines: due at 20..100 s; ends at 110 s
Factory = Callable[..., SimulatorHandle]


@pytest.fixture(scope="module")
def key_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("batch-clients")
    return write_answer_key(root / "key.jsonl", [(p, str(3 * i)) for i, p in enumerate(PROMPTS)])


@pytest.fixture
def make_sim(key_path: Path, tmp_path: Path) -> Iterator[Factory]:
    started: list[SimulatorHandle] = []

    def make(batch: dict[str, Any] | None = None, **config: Any) -> SimulatorHandle:
        config = {"reasoning_tokens": 40, "image_tokens": 100, "batch": batch or {}, **config}
        log = tmp_path / f"log{len(started)}.jsonl"
        handle = start_simulator_in_thread(key_path, config, log_path=log)
        started.append(handle)
        return handle

    yield make
    for handle in started:
        handle.stop()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, bytes]]:
    """(method, URL, body) of every JSON request the SDKs send (all three use httpx2)."""
    calls: list[tuple[str, str, bytes]] = []
    send = httpx2.AsyncClient.send

    async def recording(self: httpx2.AsyncClient, request: httpx2.Request, **kw: Any) -> Any:
        content_type = request.headers.get("content-type", "")
        body = request.content if content_type.startswith("application/json") else b""
        calls.append((request.method, str(request.url), body))
        return await send(self, request, **kw)

    monkeypatch.setattr(httpx2.AsyncClient, "send", recording)
    return calls


def model(sim: SimulatorHandle, api: str) -> ModelConfig:
    config = resolve_model(MODELS[api], simulator_url=sim.url)
    assert config.api == api
    return config


def lines_for(tag: str, n: int = 5, *, image: bool = True) -> list[BatchLine]:
    """n lines: line 1 truncated (max_tokens 5), line 2 with an image, seeds per line."""
    out = []
    for i in range(n):
        parts = [Part.of_text(PROMPTS[i])]
        if image and i == 2:
            parts.append(Part(kind="image", data=tiny_png(), media_type="image/png"))
        decoding = Decoding(max_tokens=5 if i == 1 else 2000, seed=100 + i, temperature=0.3)
        out.append(BatchLine(custom_id(tag, i), parts, decoding))
    return out


async def online(config: ModelConfig, line: BatchLine) -> ProviderResponse:
    client = make_client(config, "sim-key")
    try:
        return await client.complete(line.parts, line.decoding)
    finally:
        await client.aclose()


def same_answer(batch: ProviderResponse, direct: ProviderResponse) -> None:
    assert batch.text == direct.text
    assert batch.finish_reason == direct.finish_reason
    assert batch.usage == direct.usage
    assert batch.reasoning_text == direct.reasoning_text
    assert batch.model_reported == direct.model_reported


def by_id(results: list[LineResult]) -> dict[str, LineResult]:
    out = {r.custom_id: r for r in results}
    assert len(out) == len(results)
    return out


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def _openai_sync(sim: SimulatorHandle) -> openai.OpenAI:
    return openai.OpenAI(base_url=sim.openai_base_url, api_key="k", max_retries=0)


def _sent_body(sim: SimulatorHandle, api: str, provider_id: str, sent: list) -> bytes:
    """What the provider received as the job's input."""
    if api in ("chat", "responses"):  # the uploaded input file, read back
        raw = _openai_sync(sim)
        return raw.files.content(raw.batches.retrieve(provider_id).input_file_id).content
    suffix = "/messages/batches" if api == "messages" else ":batchGenerateContent"
    [body] = [b for method, url, b in sent if method == "POST" and url.endswith(suffix)]
    return body


# -- the whole life of a job -------------------------------------------------------------------
@pytest.mark.parametrize("api", APIS)
def test_a_job_is_answered_as_the_online_client_answers(
    api: str, make_sim: Factory, sent: list
) -> None:
    sim = make_sim(SLOW)
    config = model(sim, api)
    tag = f"run-1/{api}"
    lines = lines_for(tag)

    async def scenario() -> None:
        client = make_batch_client(config, "sim-key")
        try:
            data = client.payload(lines, tag)
            assert client.payload(lines, tag) == data  # deterministic
            provider_id = await client.submit(lines, tag)
            received = _sent_body(sim, api, provider_id, sent)
            assert hashlib.sha256(received).hexdigest() == hashlib.sha256(data).hexdigest()

            first = await client.status(provider_id)
            assert (first.provider_id, first.state) == (provider_id, "in_progress")
            assert first.detail == {"generate_content": "running"}.get(api, "in_progress")
            assert first.counts == {
                "total": 5,
                "processing": 5,
                "succeeded": 0,
                "errored": 0,
                "cancelled": 0,
                "expired": 0,
            }
            with pytest.raises(BatchNotEnded):
                await client.results(provider_id)

            sim.advance_batches(60)  # lines 0-2 answered
            middle = await client.status(provider_id)
            assert middle.state == "in_progress"
            if api == "messages":  # Anthropic counts every line as processing until the end
                assert (middle.counts["processing"], middle.counts["succeeded"]) == (5, 0)
            else:
                assert (middle.counts["processing"], middle.counts["succeeded"]) == (2, 3)

            sim.advance_batches(60)
            ended = await client.status(provider_id)
            assert (ended.state, ended.detail, ended.message) == ("ended", "completed", "")
            assert ended.counts == {
                "total": 5,
                "processing": 0,
                "succeeded": 5,
                "errored": 0,
                "cancelled": 0,
                "expired": 0,
            }
            results = by_id(await client.results(provider_id))
            assert sorted(results) == sorted(line.custom_id for line in lines)
            for line in lines:
                result = results[line.custom_id]
                assert result.ok and result.error is None
                assert result.response.extra["batch_id"] == provider_id
                same_answer(result.response, await online(config, line))
            truncated = results[lines[1].custom_id].response
            assert truncated.finish_reason == "length"
            with_image = results[lines[2].custom_id].response.usage.input_tokens
            assert with_image == math.ceil(len(PROMPTS[2]) / 4) + 100  # text + one image
        finally:
            await client.aclose()

    run(scenario())


def test_lines_carry_exactly_the_online_body(make_sim: Factory, sent: list) -> None:
    """The body of each line is byte for byte the JSON the online client sends."""
    sim = make_sim()
    line = lines_for("body", 3)[2]  # text and image

    async def scenario() -> None:
        for api in APIS:
            config = model(sim, api)
            sent.clear()
            await online(config, line)
            [(_, _, wire)] = [c for c in sent if c[0] == "POST"]
            client = make_batch_client(config, "k")
            if api in ("chat", "responses"):
                record = json.loads(client.payload([line], "t").decode())
                inside = record["body"]
            elif api == "messages":
                inside = json.loads(client.payload([line], "t"))["requests"][0]["params"]
            else:
                batch = json.loads(client.payload([line], "t"))["batch"]
                inside = batch["inputConfig"]["requests"]["requests"][0]["request"]
            assert inside == json.loads(wire), api
            await client.aclose()

    run(scenario())


# -- partial failures, expiry, cancel --------------------------------------------------------
@pytest.mark.parametrize("api", APIS)
def test_failed_lines_are_retryable_and_exactly_the_drawn_ones(api: str, make_sim: Factory) -> None:
    rate, n = 0.4, 12
    sim = make_sim({"line_failure_rate": rate}, seed=5)
    config = model(sim, api)
    tag = f"flaky-{api}"
    lines = lines_for(tag, n, image=False)
    predicted = {
        line.custom_id
        for i, line in enumerate(lines)
        if batch_line_draw(5, config.api_model, prompt_sha256(PROMPTS[i]), line.decoding.seed, 0)
        < rate
    }
    assert 0 < len(predicted) < n

    async def scenario() -> None:
        client = make_batch_client(config, "k")
        try:
            provider_id = await client.submit(lines, tag)
            status = await client.status(provider_id)
            assert (status.state, status.detail) == ("ended", "completed")
            assert (status.counts["succeeded"], status.counts["errored"]) == (
                n - len(predicted),
                len(predicted),
            )
            results = by_id(await client.results(provider_id))
            failed = {cid for cid, r in results.items() if not r.ok}
            assert failed == predicted
            for cid in failed:
                error = results[cid].error
                assert (error.kind, error.status, error.retryable) == (
                    ErrorKind.SERVER_ERROR,
                    500,
                    True,
                )
            for line in lines:
                if line.custom_id not in failed:
                    same_answer(results[line.custom_id].response, await online(config, line))
        finally:
            await client.aclose()

    run(scenario())


@pytest.mark.parametrize("api", APIS)
def test_expiry_leaves_the_lines_not_done_retryable(api: str, make_sim: Factory) -> None:
    sim = make_sim({"completion_s": 100, "expire_after_s": 50})  # lines 0, 1 done by then
    config = model(sim, api)
    lines = lines_for(f"late-{api}")

    async def scenario() -> None:
        client = make_batch_client(config, "k")
        try:
            provider_id = await client.submit(lines, f"late-{api}")
            sim.advance_batches(3600)
            status = await client.status(provider_id)
            assert (status.state, status.detail) == ("ended", "expired")
            assert status.counts == {
                "total": 5,
                "processing": 0,
                "succeeded": 2,
                "errored": 0,
                "cancelled": 0,
                "expired": 3,
            }
            results = by_id(await client.results(provider_id))
            assert [results[x.custom_id].ok for x in lines] == [True, True, False, False, False]
            for line in lines[2:]:
                error = results[line.custom_id].error
                assert (error.kind, error.message, error.retryable) == (
                    ErrorKind.TIMEOUT,
                    "batch expired",
                    True,
                )
            same_answer(results[lines[0].custom_id].response, await online(config, lines[0]))
        finally:
            await client.aclose()

    run(scenario())


@pytest.mark.parametrize("api", APIS)
def test_cancel_keeps_the_lines_done(api: str, make_sim: Factory) -> None:
    sim = make_sim(SLOW)
    config = model(sim, api)
    lines = lines_for(f"stop-{api}")

    async def scenario() -> None:
        client = make_batch_client(config, "k")
        try:
            provider_id = await client.submit(lines, f"stop-{api}")
            sim.advance_batches(50)  # lines 0 and 1 done
            await client.cancel(provider_id)
            status = await client.status(provider_id)
            assert (status.state, status.detail) == ("ended", "cancelled")
            assert (status.counts["succeeded"], status.counts["cancelled"]) == (2, 3)
            await client.cancel(provider_id)  # an ended job: nothing happens
            assert (await client.status(provider_id)).detail == "cancelled"
            results = by_id(await client.results(provider_id))
            assert [results[x.custom_id].ok for x in lines] == [True, True, False, False, False]
            for line in lines[2:]:
                error = results[line.custom_id].error
                assert (error.kind, error.message) == (ErrorKind.TIMEOUT, "batch cancelled")
                assert error.retryable
        finally:
            await client.aclose()

    run(scenario())


# -- finding a job whose id was lost ---------------------------------------------------------
@pytest.mark.parametrize("api", ["chat", "generate_content"])
def test_find_by_metadata_or_display_name(api: str, make_sim: Factory) -> None:
    sim = make_sim(SLOW)
    config = model(sim, api)

    async def scenario() -> None:
        client = make_batch_client(config, "k")
        try:
            before = time.time() - 2
            first = await client.submit(lines_for("job-a", 2), "job-a")
            second = await client.submit(lines_for("job-b", 3), "job-b")
            assert await client.find("job-a", before) == first  # still in progress
            assert await client.find("job-b", before) == second
            assert await client.find("job-c", before) is None
            assert await client.find("job-a", time.time() + 3600) is None  # outside the window
            sim.advance_batches(200)
            assert await client.find("job-a", before) == first  # ended
        finally:
            await client.aclose()

    run(scenario())


def test_find_anthropic_by_custom_ids_once_ended(make_sim: Factory) -> None:
    sim = make_sim(SLOW)
    config = model(sim, "messages")

    async def scenario() -> None:
        client = make_batch_client(config, "k")
        try:
            before = time.time() - 2
            first = await client.submit(lines_for("job-a", 2), "job-a")
            second = await client.submit(lines_for("job-b", 3), "job-b")
            # in progress: only a guess by request count, and only an unambiguous one
            assert await client.find("job-a", before, expected_lines=2) == first
            assert await client.find("job-a", before) is None
            assert await client.find("job-a", before, expected_lines=4) is None
            sim.advance_batches(200)
            assert await client.find("job-a", before) == first  # ended: by custom ids
            assert await client.find("job-b", before) == second
            assert await client.find("job-c", before) is None
            assert await client.find("job-c", before, expected_lines=3) is None
            assert await client.find("job-a", time.time() + 3600) is None
        finally:
            await client.aclose()

    run(scenario())


# -- errors the provider gives for one line or the whole job ---------------------------------
def test_a_line_refused_with_a_4xx_gets_the_online_kind(make_sim: Factory) -> None:
    sim = make_sim()
    config = model(sim, "messages")
    lines = lines_for("refused", 2)
    bad = dataclasses.replace(lines[1], decoding=Decoding(max_tokens=0, seed=1))

    async def scenario() -> None:
        with pytest.raises(ProviderError) as direct:
            await online(config, bad)
        client = make_batch_client(config, "k")
        try:
            provider_id = await client.submit([lines[0], bad], "refused")
            results = by_id(await client.results(provider_id))
            error = results[bad.custom_id].error
            assert (error.kind, error.status) == (direct.value.kind, direct.value.status)
            assert (error.kind, error.status) == (ErrorKind.BAD_REQUEST, 400)
            assert "max_tokens" in error.message and results[lines[0].custom_id].ok
        finally:
            await client.aclose()

    run(scenario())


def test_openai_lines_refused_or_a_batch_failing_validation(make_sim: Factory) -> None:
    sim = make_sim()
    config = model(sim, "responses")
    raw = _openai_sync(sim)

    def upload(records: list[dict[str, Any]]) -> str:
        data = "".join(json.dumps(r) + "\n" for r in records).encode()
        file_id = raw.files.create(file=("in.jsonl", data), purpose="batch").id
        return raw.batches.create(
            input_file_id=file_id, endpoint="/v1/responses", completion_window="24h"
        ).id

    good = {"model": "sim-0.5-resp", "input": PROMPTS[0], "max_output_tokens": 50}
    line = {"method": "POST", "url": "/v1/responses"}
    refused = upload(
        [
            {"custom_id": "good", **line, "body": good},
            {"custom_id": "bad", **line, "body": {**good, "input": 5}},
        ]
    )
    invalid = upload(
        [
            {"custom_id": "a", **line, "body": good},
            {"custom_id": "a", **line, "body": good},
            {"custom_id": "c", **line, "body": good},
        ]
    )

    async def scenario() -> None:
        client = make_batch_client(config, "k")
        try:
            results = by_id(await client.results(refused))
            assert results["good"].ok
            error = results["bad"].error
            assert (error.kind, error.status, error.retryable) == (
                ErrorKind.BAD_REQUEST,
                400,
                False,
            )
            status = await client.status(invalid)
            assert (status.state, status.detail, status.counts["total"]) == ("ended", "failed", 0)
            assert status.message.startswith("line 2: duplicate_custom_id: ")
            failed = await client.results(invalid)
            assert [(r.custom_id, r.error.kind) for r in failed] == [
                ("a", ErrorKind.SERVER_ERROR),  # never run because of another line
                ("a", ErrorKind.BAD_REQUEST),
                ("c", ErrorKind.SERVER_ERROR),
            ]
            assert failed[1].error.message.startswith("batch failed validation: duplicate_")
        finally:
            await client.aclose()

    run(scenario())


# -- the interface ---------------------------------------------------------------------------
def test_factory_limits_and_refusals(make_sim: Factory) -> None:
    sim = make_sim()
    clients = {api: make_batch_client(model(sim, api), "k") for api in APIS}
    assert isinstance(clients["chat"], OpenAIBatchClient)
    assert (clients["chat"].endpoint, clients["responses"].endpoint) == (
        "/v1/chat/completions",
        "/v1/responses",
    )
    assert isinstance(clients["messages"], AnthropicBatchClient)
    assert isinstance(clients["generate_content"], GoogleBatchClient)
    limits = {api: (c.max_lines, c.max_bytes) for api, c in clients.items()}
    assert limits == {
        "chat": (50_000, 200_000_000),
        "responses": (50_000, 200_000_000),
        "messages": (100_000, 256_000_000),
        "generate_content": (200_000, 19_999_999),
    }
    assert "sim-key" not in repr(make_batch_client(model(sim, "chat"), "sim-key"))

    compatible = dataclasses.replace(
        model(sim, "chat"), id="openai-compatible/llama", provider="openai-compatible"
    )
    with pytest.raises(ConfigError, match="batch mode is not available for openai-compatible"):
        make_batch_client(compatible, "k")

    client: BatchClient = clients["messages"]
    line = lines_for("x", 1)[0]
    with pytest.raises(BatchInputError, match="used twice"):
        client.payload([line, line], "x")
    with pytest.raises(BatchInputError, match=r"\[A-Za-z0-9_-\]"):
        client.payload([dataclasses.replace(line, custom_id="a/b")], "x")
    with pytest.raises(BatchInputError, match="at least one line"):
        client.payload([], "x")
    small = clients["chat"]
    small.max_lines = 1  # an instance attribute: the class keeps 50,000
    with pytest.raises(BatchInputError, match="at most 1 in one batch"):
        small.payload(lines_for("y", 2), "y")
    clients["generate_content"].max_bytes = 100
    with pytest.raises(BatchInputError, match="at most 100"):
        clients["generate_content"].payload([line], "x")
    audio = Part(kind="audio", data=b"RIFF", media_type="audio/wav")
    with pytest.raises(ProviderError) as info:  # as the online client refuses it
        client.payload([dataclasses.replace(line, parts=[audio])], "x")
    assert info.value.kind == ErrorKind.BAD_REQUEST

    async def close() -> None:
        for c in clients.values():
            await c.aclose()

    run(close())


def test_custom_ids_embed_the_tag() -> None:
    tag = "run 2026-11-21/zerobench:answer#7"
    ids = [custom_id(tag, i) for i in (0, 1, 49_999)]
    digest = hashlib.sha256(tag.encode()).hexdigest()[:12]
    assert ids[0] == f"run_2026_11_21_zerobench_answer__{digest}-0"
    assert all(len(i) <= 64 for i in ids) and len(set(ids)) == 3
    assert all(custom_id_matches(tag, i) for i in ids)
    assert not custom_id_matches("run 2026-11-21/zerobench:answer#8", ids[0])
    assert not custom_id_matches(tag, "item-1")
    long = custom_id("x" * 600, 10**17)
    assert len(long) == 64 and custom_id_matches("x" * 600, long)
    with pytest.raises(BatchInputError):
        custom_id("", 0)
    with pytest.raises(ValueError, match="exactly one"):
        LineResult("a")


def test_sdk_clients_are_built_without_retries(make_sim: Factory) -> None:
    sim = make_sim()
    openai_client = make_batch_client(model(sim, "chat"), "k")
    anthropic_client = make_batch_client(model(sim, "messages"), "k")
    assert openai_client._client.max_retries == 0
    assert isinstance(anthropic_client._client, anthropic.AsyncAnthropic)
    assert anthropic_client._client.max_retries == 0
    google_client = make_batch_client(model(sim, "generate_content"), "k")
    options = google_client._genai._api_client._http_options
    assert (options.api_version, options.retry_options) == ("v1beta", None)

    async def close() -> None:
        for c in (openai_client, anthropic_client, google_client):
            await c.aclose()

    run(close())
