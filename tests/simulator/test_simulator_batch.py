"""The simulator's batch APIs through the official SDKs: OpenAI Files + Batches, Anthropic
Message Batches, Gemini batchGenerateContent; create, poll, results, cancel, expiry, partial
failures, lists, the request log, and a restart (a killed process) that keeps its batches.

The batch clock is moved with ``SimulatorHandle.advance_batches`` so nothing here waits. With
``completion_s: 100`` and four lines, line ``i`` is due 25 * (i + 1) s after the create.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from evalfleet.simulator import (
    ConfigError,
    prompt_sha256,
    start_simulator,
    start_simulator_in_thread,
)
from evalfleet.simulator.cli import add_arguments, build_config
from evalfleet.simulator.config import config_from_dict
from evalfleet.simulator.faults import batch_line_draw
from evalfleet.simulator.process import SimulatorHandle
from evalfleet.simulator.samples import write_answer_key

PROMPTS = [f"Batch item {i}: how many dots? Answer in braces." for i in range(40)]
MODELS = ["sim-0.5", "sim-0.7", "sim-0.5-think"]
SLOW = {"completion_s": 100, "finalize_s": 10}  # 4 lines: due at 25, 50, 75, 100; ends at 110

Factory = Callable[..., SimulatorHandle]


@pytest.fixture(scope="module")
def key_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sim-batch")
    return write_answer_key(root / "key.jsonl", [(p, str(7 * i)) for i, p in enumerate(PROMPTS)])


@pytest.fixture
def make_sim(key_path: Path, tmp_path: Path) -> Iterator[Factory]:
    """Start in-thread simulators with a ``batch`` config; all stopped at the end."""
    started: list[SimulatorHandle] = []

    def make(batch: dict[str, Any] | None = None, **config: Any) -> SimulatorHandle:
        config = {"models": MODELS, "reasoning_tokens": 40, "batch": batch or {}, **config}
        log = tmp_path / f"log{len(started)}.jsonl"
        handle = start_simulator_in_thread(key_path, config, log_path=log)
        started.append(handle)
        return handle

    yield make
    for handle in started:
        handle.stop()


def _openai(sim: SimulatorHandle) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=sim.openai_base_url,
        api_key="sk-batch-secret",
        max_retries=0,
        _strict_response_validation=True,
    )


def _claude(sim: SimulatorHandle) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=sim.anthropic_base_url,
        api_key="sk-ant-batch-secret",
        max_retries=0,
        _strict_response_validation=True,
    )


def _gemini(sim: SimulatorHandle) -> genai.Client:
    options = types.HttpOptions(base_url=sim.gemini_base_url, api_version="v1beta", timeout=5000)
    return genai.Client(api_key="gemini-batch-secret", http_options=options)


def _same(body: dict[str, Any], rid: str, other: dict[str, Any], other_rid: str) -> None:
    """Equal bodies but for the request ids in them and the creation time."""

    def norm(b: dict[str, Any], r: str) -> dict[str, Any]:
        out = json.loads(json.dumps(b).replace(r, "RID"))
        out.pop("created", None)
        out.pop("created_at", None)
        return out

    assert norm(body, rid) == norm(other, other_rid)


def _lines(sim: SimulatorHandle, route: str, batch_id: str) -> list[dict[str, Any]]:
    return [e for e in sim.read_log() if e["route"] == route and e.get("batch_id") == batch_id]


# -- OpenAI ----------------------------------------------------------------------------------
def _chat_line(i: int, model: str = "sim-0.5", **body: Any) -> dict[str, Any]:
    request = {"model": model, "messages": [{"role": "user", "content": PROMPTS[i]}], "seed": i}
    return {
        "custom_id": f"item-{i}",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {**request, **body},
    }


def _upload(client: openai.OpenAI, records: list[dict[str, Any]]) -> str:
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    return client.files.create(file=("batch.jsonl", data), purpose="batch").id


def _jsonl(client: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    assert file_id is not None
    return [json.loads(x) for x in client.files.content(file_id).text.splitlines()]


def test_openai_batch_lifecycle_answers_like_the_online_route(make_sim: Factory) -> None:
    sim = make_sim(SLOW)
    client = _openai(sim)
    records = [_chat_line(0), _chat_line(1, max_tokens=5), _chat_line(2), _chat_line(3)]
    file_id = _upload(client, records)
    uploaded = client.files.retrieve(file_id)
    assert (uploaded.purpose, uploaded.filename, uploaded.status) == (
        "batch",
        "batch.jsonl",
        "processed",
    )
    assert uploaded.bytes == len("".join(json.dumps(r) + "\n" for r in records))

    batch = client.batches.create(
        input_file_id=file_id,
        endpoint="/v1/chat/completions",
        completion_window="24h",
        metadata={"run": "r-1", "shard": "0"},
    )
    assert batch.status == "validating"
    assert (batch.model, batch.metadata) == ("sim-0.5", {"run": "r-1", "shard": "0"})
    assert batch.request_counts.model_dump() == {"completed": 0, "failed": 0, "total": 4}
    assert batch.in_progress_at is None and batch.expires_at == batch.created_at + 86400

    sim.advance_batches(50)
    half = client.batches.retrieve(batch.id)
    assert half.status == "in_progress" and half.in_progress_at == batch.created_at
    assert half.request_counts.model_dump() == {"completed": 2, "failed": 0, "total": 4}
    sim.advance_batches(55)
    assert client.batches.retrieve(batch.id).status == "finalizing"
    sim.advance_batches(10)
    done = client.batches.retrieve(batch.id)
    assert done.status == "completed"
    assert done.request_counts.model_dump() == {"completed": 4, "failed": 0, "total": 4}
    assert (done.finalizing_at, done.completed_at) == (
        batch.created_at + 100,
        batch.created_at + 110,
    )
    assert done.error_file_id is None and done.cancelled_at is None

    output = _jsonl(client, done.output_file_id)
    assert client.files.retrieve(done.output_file_id).purpose == "batch_output"
    assert sorted(x["custom_id"] for x in output) == [f"item-{i}" for i in range(4)]
    usage = [0, 0]
    for line in output:
        assert set(line) == {"id", "custom_id", "response", "error"} and line["error"] is None
        assert line["id"].startswith("batch_req_")
        response = line["response"]
        assert set(response) == {"status_code", "request_id", "body"}
        assert response["status_code"] == 200
        body = records[int(line["custom_id"].split("-")[1])]["body"]
        online = client.chat.completions.with_raw_response.create(**body)
        online_body = json.loads(online.text)
        _same(response["body"], response["request_id"], online_body, online.headers["x-request-id"])
        usage[0] += response["body"]["usage"]["prompt_tokens"]
        usage[1] += response["body"]["usage"]["completion_tokens"]
    assert [done.usage.input_tokens, done.usage.output_tokens] == usage
    truncated = next(x for x in output if x["custom_id"] == "item-1")["response"]["body"]
    assert truncated["choices"][0]["finish_reason"] == "length"

    log = sim.read_log()
    mine = [e for e in log if e.get("batch_id") == batch.id]
    assert Counter(e["route"] for e in mine) == {
        "openai.batches.create": 1,
        "openai.batches.retrieve": 3,
        "openai.batch": 4,
    }
    lines = [e for e in mine if e["route"] == "openai.batch"]
    assert [e["custom_id"] for e in lines] == [f"item-{i}" for i in range(4)]
    assert [(e["status"], e["outcome"], e["n"]) for e in lines] == [
        (200, "ok", 0),
        (200, "length", 0),
        (200, "ok", 0),
        (200, "ok", 0),
    ]
    assert [e["prompt_sha256"] for e in lines] == [prompt_sha256(PROMPTS[i]) for i in range(4)]
    assert [e["seed"] for e in lines] == [0, 1, 2, 3]
    assert {e["model"] for e in lines} == {"sim-0.5"}
    uploads = [e for e in log if e["route"] == "openai.files.create"]
    assert [e["file_id"] for e in uploads] == [file_id]
    assert "sk-batch-secret" not in sim.log_path.read_text()


def test_openai_responses_endpoint_bad_line_and_thinking(make_sim: Factory) -> None:
    sim = make_sim()
    client = _openai(sim)
    records = [
        {
            "custom_id": "good",
            "method": "POST",
            "url": "/v1/responses",
            "body": {"model": "sim-0.5-think", "input": PROMPTS[4], "max_output_tokens": 400},
        },
        {
            "custom_id": "bad",
            "method": "POST",
            "url": "/v1/responses",
            "body": {"model": "sim-0.5-think", "input": 5},
        },
    ]
    batch = client.batches.create(
        input_file_id=_upload(client, records),
        endpoint="/v1/responses",
        completion_window="24h",
    )
    assert batch.metadata is None
    done = client.batches.retrieve(batch.id)  # completion_s 0: done at the first retrieve
    assert done.status == "completed"
    assert done.request_counts.model_dump() == {"completed": 1, "failed": 1, "total": 2}
    (good,) = _jsonl(client, done.output_file_id)
    online = client.responses.with_raw_response.create(**records[0]["body"])
    response = good["response"]
    online_body = json.loads(online.text)
    _same(response["body"], response["request_id"], online_body, online.headers["x-request-id"])
    assert good["response"]["body"]["usage"]["output_tokens_details"]["reasoning_tokens"] == 40
    (bad,) = _jsonl(client, done.error_file_id)
    assert bad["custom_id"] == "bad" and bad["error"] is None
    assert bad["response"]["status_code"] == 400
    assert bad["response"]["body"]["error"]["type"] == "invalid_request_error"
    assert "input" in bad["response"]["body"]["error"]["message"]
    lines = _lines(sim, "openai.batch", batch.id)
    assert [(e["custom_id"], e["status"], e["outcome"]) for e in lines] == [
        ("good", 200, "ok"),
        ("bad", 400, "bad_request"),
    ]


def test_openai_cancel_keeps_the_lines_done(make_sim: Factory) -> None:
    sim = make_sim(SLOW)
    client = _openai(sim)
    batch = client.batches.create(
        input_file_id=_upload(client, [_chat_line(i) for i in range(4)]),
        endpoint="/v1/chat/completions",
        completion_window="24h",
    )
    sim.advance_batches(50)
    cancelling = client.batches.cancel(batch.id)
    assert cancelling.status == "cancelling" and cancelling.cancelling_at is not None
    assert cancelling.output_file_id is not None  # the lines done before the cancel
    cancelled = client.batches.retrieve(batch.id)
    assert cancelled.status == "cancelled"
    assert cancelled.cancelled_at == cancelled.cancelling_at
    assert cancelled.request_counts.model_dump() == {"completed": 2, "failed": 0, "total": 4}
    assert sorted(x["custom_id"] for x in _jsonl(client, cancelled.output_file_id)) == [
        "item-0",
        "item-1",
    ]
    errors = sorted(_jsonl(client, cancelled.error_file_id), key=lambda x: x["custom_id"])
    assert [(x["custom_id"], x["response"], x["error"]["code"]) for x in errors] == [
        ("item-2", None, "batch_cancelled"),
        ("item-3", None, "batch_cancelled"),
    ]
    again = client.batches.cancel(batch.id)  # an ended batch: unchanged
    assert again.status == "cancelled"
    lines = _lines(sim, "openai.batch", batch.id)
    assert [(e["custom_id"], e["status"], e["outcome"]) for e in lines] == [
        ("item-0", 200, "ok"),
        ("item-1", 200, "ok"),
        ("item-2", None, "cancelled"),
        ("item-3", None, "cancelled"),
    ]
    cancels = _lines(sim, "openai.batches.cancel", batch.id)
    assert [e["outcome"] for e in cancels] == ["ok", "already_ended"]


def test_openai_expiry(make_sim: Factory) -> None:
    sim = make_sim({"completion_s": 100, "expire_after_s": 50})
    client = _openai(sim)
    batch = client.batches.create(
        input_file_id=_upload(client, [_chat_line(i) for i in range(4)]),
        endpoint="/v1/chat/completions",
        completion_window="24h",
    )
    sim.advance_batches(49)
    assert client.batches.retrieve(batch.id).status == "in_progress"
    sim.advance_batches(20)
    expired = client.batches.retrieve(batch.id)
    assert expired.status == "expired" and expired.expired_at == batch.created_at + 50
    assert expired.request_counts.model_dump() == {"completed": 2, "failed": 0, "total": 4}
    assert len(_jsonl(client, expired.output_file_id)) == 2
    errors = _jsonl(client, expired.error_file_id)
    assert sorted(x["custom_id"] for x in errors) == ["item-2", "item-3"]
    assert {x["error"]["code"] for x in errors} == {"batch_expired"}
    outcomes = [e["outcome"] for e in _lines(sim, "openai.batch", batch.id)]
    assert outcomes == ["ok", "ok", "expired", "expired"]


def test_openai_list_pages_newest_first_with_metadata(make_sim: Factory) -> None:
    sim = make_sim(SLOW)
    client = _openai(sim)
    file_id = _upload(client, [_chat_line(0)])
    ids = []
    for k in range(5):
        b = client.batches.create(
            input_file_id=file_id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata={"k": str(k)},
        )
        ids.append(b.id)
    newest = ids[::-1]
    page = client.batches.list(limit=2)
    assert [b.id for b in page.data] == newest[:2] and page.has_more is True
    assert [b.metadata for b in page.data] == [{"k": "4"}, {"k": "3"}]
    assert [b.id for b in page.data] == [b.id for b in client.batches.list(limit=2).data]
    assert [b.id for b in client.batches.list(limit=2, after=newest[1]).data] == newest[2:4]
    last = client.batches.list(limit=2, after=newest[3])
    assert [b.id for b in last.data] == newest[4:] and last.has_more is False
    assert [b.id for b in client.batches.list(limit=2)] == newest  # the SDK's auto-paging
    assert {b.status for b in client.batches.list()} == {"in_progress"}
    assert len([e for e in sim.read_log() if e["route"] == "openai.batches.create"]) == 5


def test_openai_rejected_input_file_fails_the_batch(make_sim: Factory) -> None:
    sim = make_sim()
    client = _openai(sim)
    records = [_chat_line(0), _chat_line(0), {**_chat_line(1), "url": "/v1/responses"}]
    records.append(_chat_line(2, model="sim-0.7"))
    batch = client.batches.create(
        input_file_id=_upload(client, records),
        endpoint="/v1/chat/completions",
        completion_window="24h",
    )
    assert batch.status == "failed" and batch.failed_at == batch.created_at
    assert batch.request_counts.model_dump() == {"completed": 0, "failed": 0, "total": 0}
    assert [(e.code, e.line, e.param) for e in batch.errors.data] == [
        ("duplicate_custom_id", 2, "custom_id"),
        ("mismatched_endpoint", 3, "url"),
        ("model_mismatch", 4, "body.model"),
    ]
    assert client.batches.retrieve(batch.id).status == "failed"
    with pytest.raises(openai.NotFoundError):
        client.batches.create(
            input_file_id="file-nope", endpoint="/v1/chat/completions", completion_window="24h"
        )
    with pytest.raises(openai.NotFoundError):
        client.batches.retrieve("batch_nope")
    with pytest.raises(openai.BadRequestError):
        client.batches.create(
            input_file_id=batch.input_file_id, endpoint="/v1/embeddings", completion_window="24h"
        )
    assert _lines(sim, "openai.batch", batch.id) == []


# -- Anthropic -------------------------------------------------------------------------------
def _params(i: int, model: str = "sim-0.7", **extra: Any) -> dict[str, Any]:
    params = {
        "model": model,
        "max_tokens": 500,
        "messages": [{"role": "user", "content": PROMPTS[i]}],
    }
    return {**params, **extra}


def test_anthropic_batch_lifecycle_and_results(make_sim: Factory) -> None:
    sim = make_sim(SLOW)
    claude = _claude(sim)
    requests = [{"custom_id": f"q{i}", "params": _params(i, seed=i)} for i in range(3)]
    requests.append({"custom_id": "q3", "params": _params(3, model="sim-0.5-think")})
    batch = claude.messages.batches.create(requests=requests)
    assert batch.id.startswith("msgbatch_") and batch.processing_status == "in_progress"
    processing = {"processing": 4, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
    assert batch.request_counts.model_dump() == processing
    assert batch.results_url is None and batch.ended_at is None
    assert (batch.expires_at - batch.created_at).total_seconds() == pytest.approx(86400, abs=1e-3)

    sim.advance_batches(105)
    assert claude.messages.batches.retrieve(batch.id).request_counts.model_dump() == processing
    sim.advance_batches(10)
    ended = claude.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended"
    assert (ended.ended_at - batch.created_at).total_seconds() == pytest.approx(110, abs=1e-3)
    assert ended.request_counts.model_dump() == {**processing, "processing": 0, "succeeded": 4}
    assert ended.results_url == f"{sim.url}/v1/messages/batches/{batch.id}/results"

    results = list(claude.messages.batches.results(batch.id))
    assert sorted(r.custom_id for r in results) == ["q0", "q1", "q2", "q3"]
    for r in results:
        assert r.result.type == "succeeded"
        message = r.result.message.model_dump(mode="json", exclude_none=True)
        assert message["usage"]["service_tier"] == "batch"
        message["usage"]["service_tier"] = "standard"
        params = dict(requests[int(r.custom_id[1:])]["params"])
        seed = params.pop("seed", None)
        extra = {} if seed is None else {"extra_body": {"seed": seed}}
        online = claude.messages.with_raw_response.create(**params, **extra)
        online_message = online.parse().model_dump(mode="json", exclude_none=True)
        _same(message, r.result.message.id[4:], online_message, online.headers["request-id"])
    think = next(r for r in results if r.custom_id == "q3").result.message
    assert [b.type for b in think.content] == ["thinking", "text"]

    lines = _lines(sim, "anthropic.batch", batch.id)
    assert [(e["custom_id"], e["status"], e["model"]) for e in lines] == [
        ("q0", 200, "sim-0.7"),
        ("q1", 200, "sim-0.7"),
        ("q2", 200, "sim-0.7"),
        ("q3", 200, "sim-0.5-think"),
    ]
    assert [e["seed"] for e in lines] == [0, 1, 2, None]
    routes = Counter(e["route"] for e in sim.read_log() if e.get("batch_id") == batch.id)
    assert routes == {
        "anthropic.batches.create": 1,
        "anthropic.batches.retrieve": 3,  # two polls and the one inside results()
        "anthropic.batches.results": 1,
        "anthropic.batch": 4,
    }


def test_anthropic_cancel_expiry_and_bad_params(make_sim: Factory) -> None:
    sim = make_sim(SLOW)
    claude = _claude(sim)
    requests = [{"custom_id": f"c{i}", "params": _params(i)} for i in range(4)]
    requests[0]["params"] = {"model": "sim-0.7", "messages": requests[0]["params"]["messages"]}
    batch = claude.messages.batches.create(requests=requests)
    sim.advance_batches(50)
    canceling = claude.messages.batches.cancel(batch.id)
    assert canceling.processing_status == "canceling"
    assert canceling.cancel_initiated_at is not None and canceling.results_url is None
    ended = claude.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended"
    assert ended.ended_at == canceling.cancel_initiated_at
    assert ended.request_counts.model_dump() == {
        "processing": 0,
        "succeeded": 1,
        "errored": 1,
        "canceled": 2,
        "expired": 0,
    }
    results = {r.custom_id: r.result for r in claude.messages.batches.results(batch.id)}
    assert {k: v.type for k, v in results.items()} == {
        "c0": "errored",
        "c1": "succeeded",
        "c2": "canceled",
        "c3": "canceled",
    }
    assert results["c0"].error.error.type == "invalid_request_error"
    assert "max_tokens" in results["c0"].error.error.message
    assert claude.messages.batches.cancel(batch.id).processing_status == "ended"

    expiring = make_sim({"completion_s": 100, "expire_after_s": 60})
    claude2 = _claude(expiring)
    batch2 = claude2.messages.batches.create(requests=requests[1:])  # due at 33, 67, 100
    expiring.advance_batches(1000)
    counts = claude2.messages.batches.retrieve(batch2.id).request_counts.model_dump()
    assert counts == {"processing": 0, "succeeded": 1, "errored": 0, "canceled": 0, "expired": 2}
    kinds = {r.custom_id: r.result.type for r in claude2.messages.batches.results(batch2.id)}
    assert kinds == {"c1": "succeeded", "c2": "expired", "c3": "expired"}
    outcomes = [
        (e["custom_id"], e["outcome"]) for e in _lines(expiring, "anthropic.batch", batch2.id)
    ]
    assert outcomes == [("c1", "ok"), ("c2", "expired"), ("c3", "expired")]

    with pytest.raises(anthropic.BadRequestError):
        claude.messages.batches.create(requests=[requests[1], requests[1]])  # duplicate ids
    with pytest.raises(anthropic.NotFoundError):
        claude.messages.batches.retrieve("msgbatch_nope")


def test_anthropic_list_pagination_and_finding_a_lost_submission(make_sim: Factory) -> None:
    sim = make_sim(SLOW)
    claude = _claude(sim)
    ids = []
    for k in range(5):
        requests = [{"custom_id": f"run7-{k}-{i}", "params": _params(i)} for i in range(k + 1)]
        ids.append(claude.messages.batches.create(requests=requests).id)
    newest = ids[::-1]
    page = claude.messages.batches.list(limit=2)
    assert [b.id for b in page.data] == newest[:2]
    assert (page.has_more, page.first_id, page.last_id) == (True, newest[0], newest[1])
    after = claude.messages.batches.list(limit=2, after_id=newest[1])
    assert [b.id for b in after.data] == newest[2:4] and after.has_more is True
    before = claude.messages.batches.list(limit=2, before_id=newest[4])
    assert [b.id for b in before.data] == newest[2:4] and before.has_more is True
    assert [b.id for b in claude.messages.batches.list(limit=2, before_id=newest[2])] == newest[:2]
    assert [b.id for b in claude.messages.batches.list(limit=2)] == newest  # auto-paging

    # A create whose answer was lost: the submission had 3 requests with known custom ids.
    # Candidates are the batches created in the window of the call with that many requests;
    # once one has ended, its results' custom_id set identifies it.
    listed = list(claude.messages.batches.list(limit=100))
    window_start = min(b.created_at for b in listed)
    candidates = [
        b
        for b in listed
        if b.created_at >= window_start and sum(b.request_counts.model_dump().values()) == 3
    ]
    assert [b.id for b in candidates] == [ids[2]]
    sim.advance_batches(200)
    found = {r.custom_id for r in claude.messages.batches.results(candidates[0].id)}
    assert found == {"run7-2-0", "run7-2-1", "run7-2-2"}


# -- Gemini ----------------------------------------------------------------------------------
def _inline(i: int, **config: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "contents": [{"role": "user", "parts": [{"text": PROMPTS[i]}]}],
        "metadata": {"key": f"g{i}"},
    }
    if config:
        request["config"] = config
    return request


def test_gemini_batch_lifecycle_answers_like_the_online_route(make_sim: Factory) -> None:
    sim = make_sim(SLOW)
    gemini = _gemini(sim)
    src = [_inline(0, seed=3), _inline(1, max_output_tokens=4), _inline(2), _inline(3, seed=9)]
    job = gemini.batches.create(model="sim-0.5", src=src, config={"display_name": "run-42/s0"})
    assert job.name.startswith("batches/") and job.display_name == "run-42/s0"
    assert job.state == types.JobState.JOB_STATE_PENDING and job.model == "models/sim-0.5"
    assert job.dest is None and not job.done

    sim.advance_batches(50)
    running = gemini.batches.get(name=job.name)
    assert running.state == types.JobState.JOB_STATE_RUNNING and running.dest is None
    sim.advance_batches(70)
    done = gemini.batches.get(name=job.name)
    assert done.state == types.JobState.JOB_STATE_SUCCEEDED and done.done
    assert (done.end_time - done.create_time).total_seconds() == pytest.approx(110, abs=1e-3)
    responses = done.dest.inlined_responses
    assert [r.metadata for r in responses] == [{"key": f"g{i}"} for i in range(4)]  # in order
    for item, r in zip(src, responses, strict=True):
        assert r.error is None
        online = gemini.models.generate_content(
            model="sim-0.5", contents=item["contents"], config=item.get("config")
        )
        assert r.response.text == online.text
        assert r.response.candidates == online.candidates
        assert r.response.usage_metadata == online.usage_metadata
    assert responses[1].response.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS

    batch_log = [e for e in sim.read_log() if e.get("batch_id") == job.name]
    assert Counter(e["route"] for e in batch_log) == {
        "gemini.batches.create": 1,
        "gemini.batches.retrieve": 2,
        "gemini.batch": 4,
    }
    lines = [e for e in batch_log if e["route"] == "gemini.batch"]
    assert [(e["custom_id"], e["seed"], e["max_tokens"]) for e in lines] == [
        ("g0", 3, None),
        ("g1", None, 4),
        ("g2", None, None),
        ("g3", 9, None),
    ]


def test_gemini_cancel_expiry_and_list(make_sim: Factory) -> None:
    sim = make_sim(SLOW)
    gemini = _gemini(sim)
    names = [
        gemini.batches.create(model="sim-0.7", src=[_inline(i) for i in range(4)]).name
        for _ in range(3)
    ]
    sim.advance_batches(50)
    assert gemini.batches.cancel(name=names[1]) is None
    cancelled = gemini.batches.get(name=names[1])
    assert cancelled.state == types.JobState.JOB_STATE_CANCELLED
    errors = [r.error.code if r.error else None for r in cancelled.dest.inlined_responses]
    assert errors == [None, None, 1, 1]
    assert cancelled.dest.inlined_responses[0].response.text.endswith("}")

    listed = list(gemini.batches.list(config={"page_size": 2}))
    assert [j.name for j in listed] == names[::-1]
    assert [j.state.name for j in listed] == [
        "JOB_STATE_RUNNING",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_RUNNING",
    ]
    list_calls = [e for e in sim.read_log() if e["route"] == "gemini.batches.list"]
    assert len(list_calls) == 2

    expiring = make_sim({"completion_s": 100, "expire_after_s": 30})
    client = _gemini(expiring)
    job = client.batches.create(model="sim-0.7", src=[_inline(i) for i in range(4)])
    expiring.advance_batches(3600)
    expired = client.batches.get(name=job.name)
    assert expired.state == types.JobState.JOB_STATE_EXPIRED
    codes = [r.error.code if r.error else None for r in expired.dest.inlined_responses]
    assert codes == [None, 4, 4, 4]
    with pytest.raises(genai_errors.ClientError) as info:
        client.batches.get(name="batches/nope")
    assert info.value.code == 404


# -- Failures, restarts, configuration -------------------------------------------------------
def test_line_failures_are_seeded_and_exact(make_sim: Factory) -> None:
    rate = 0.4
    sim = make_sim({"line_failure_rate": rate}, seed=5)
    n = 20
    fails = [
        batch_line_draw(5, "sim-0.7", prompt_sha256(PROMPTS[i]), None, 0) < rate for i in range(n)
    ]
    assert 0 < sum(fails) < n

    client = _openai(sim)
    records = [_chat_line(i, model="sim-0.7") for i in range(n)]
    for r in records:
        r["body"].pop("seed")
    batch = client.batches.retrieve(
        client.batches.create(
            input_file_id=_upload(client, records),
            endpoint="/v1/chat/completions",
            completion_window="24h",
        ).id
    )
    assert batch.request_counts.model_dump() == {
        "completed": n - sum(fails),
        "failed": sum(fails),
        "total": n,
    }
    failed = _jsonl(client, batch.error_file_id)
    assert sorted(int(x["custom_id"][5:]) for x in failed) == [i for i in range(n) if fails[i]]
    assert {x["response"]["status_code"] for x in failed} == {500}
    assert {x["response"]["body"]["error"]["type"] for x in failed} == {"server_error"}

    claude = _claude(sim)
    mb = claude.messages.batches.create(
        requests=[{"custom_id": f"a{i}", "params": _params(i)} for i in range(n)]
    )
    kinds = {r.custom_id: r.result for r in claude.messages.batches.results(mb.id)}
    assert [kinds[f"a{i}"].type == "errored" for i in range(n)] == fails
    assert {r.error.error.type for r in kinds.values() if r.type == "errored"} == {"api_error"}

    gemini = _gemini(sim)
    job = gemini.batches.create(model="sim-0.7", src=[_inline(i) for i in range(n)])
    inline = gemini.batches.get(name=job.name).dest.inlined_responses
    assert [r.error is not None for r in inline] == fails
    assert {r.error.code for r in inline if r.error} == {13}

    # the same requests again: the next attempt gets a new draw
    again = [
        batch_line_draw(5, "sim-0.7", prompt_sha256(PROMPTS[i]), None, 1) < rate for i in range(n)
    ]
    mb2 = claude.messages.batches.create(
        requests=[{"custom_id": f"a{i}", "params": _params(i)} for i in range(n)]
    )
    kinds2 = {r.custom_id: r.result.type for r in claude.messages.batches.results(mb2.id)}
    assert [kinds2[f"a{i}"] == "errored" for i in range(n)] == again
    lines = _lines(sim, "anthropic.batch", mb2.id)
    assert {e["n"] for e in lines} == {1}
    assert [e["outcome"] for e in lines] == ["server_error" if f else "ok" for f in again]


def test_a_killed_simulator_keeps_its_batches(key_path: Path, tmp_path: Path) -> None:
    state = tmp_path / "state" / "batches.json"
    config = {"models": MODELS, "batch": {**SLOW, "state_path": str(state)}}
    first_log, second_log = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    sim = start_simulator(key_path, config, log_path=first_log)
    try:
        client, claude, gemini = _openai(sim), _claude(sim), _gemini(sim)
        ob = client.batches.create(
            input_file_id=_upload(client, [_chat_line(i) for i in range(4)]),
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata={"run": "crash"},
        )
        ab = claude.messages.batches.create(
            requests=[{"custom_id": f"k{i}", "params": _params(i)} for i in range(4)]
        )
        job = gemini.batches.create(model="sim-0.5", src=[_inline(i) for i in range(4)])
        sim.advance_batches(50)
        assert client.batches.retrieve(ob.id).request_counts.completed == 2
        claude.messages.batches.retrieve(ab.id)
        gemini.batches.get(name=job.name)
        sim.flush_log()
        os.kill(sim.pid, signal.SIGKILL)
    finally:
        sim.stop()
    before = [json.loads(x) for x in first_log.read_text().splitlines()]
    answered = Counter(e["route"] for e in before if e["route"].endswith(".batch"))
    assert answered == {"openai.batch": 2, "anthropic.batch": 2, "gemini.batch": 2}

    with start_simulator(key_path, config, log_path=second_log) as again:
        client, claude, gemini = _openai(again), _claude(again), _gemini(again)
        assert client.batches.retrieve(ob.id).request_counts.completed == 2  # the clock too
        assert [b.metadata for b in client.batches.list()] == [{"run": "crash"}]
        again.advance_batches(100)
        done = client.batches.retrieve(ob.id)
        assert done.status == "completed"
        assert sorted(x["custom_id"] for x in _jsonl(client, done.output_file_id)) == [
            f"item-{i}" for i in range(4)
        ]
        results = list(claude.messages.batches.results(ab.id))
        assert sorted((r.custom_id, r.result.type) for r in results) == [
            (f"k{i}", "succeeded") for i in range(4)
        ]
        finished = gemini.batches.get(name=job.name)
        assert finished.state == types.JobState.JOB_STATE_SUCCEEDED
        assert len(finished.dest.inlined_responses) == 4
        after = again.read_log()
    lines = [e for e in after if e["route"].endswith(".batch")]
    assert sorted((e["route"], e["custom_id"]) for e in lines) == sorted(
        [("openai.batch", "item-2"), ("openai.batch", "item-3")]
        + [("anthropic.batch", "k2"), ("anthropic.batch", "k3")]
        + [("gemini.batch", "g2"), ("gemini.batch", "g3")]
    )
    creates = [e for e in before + after if e["route"].endswith(".create")]
    assert len(creates) == 4  # one upload and three batches, all before the kill


def test_provider_prefixed_batch_routes(make_sim: Factory) -> None:
    sim = make_sim()
    client = openai.OpenAI(base_url=sim.url + "/openai/v1", api_key="k", max_retries=0)
    batch = client.batches.create(
        input_file_id=_upload(client, [_chat_line(0)]),
        endpoint="/v1/chat/completions",
        completion_window="24h",
    )
    assert client.batches.retrieve(batch.id).status == "completed"
    claude = anthropic.Anthropic(base_url=sim.url + "/anthropic", api_key="k", max_retries=0)
    message_batch = claude.messages.batches.create(
        requests=[{"custom_id": "a", "params": _params(0)}]
    )
    ended = claude.messages.batches.retrieve(message_batch.id)
    assert ended.results_url == f"{sim.url}/anthropic/v1/messages/batches/{ended.id}/results"
    assert [r.result.type for r in claude.messages.batches.results(ended.id)] == ["succeeded"]
    options = types.HttpOptions(base_url=sim.url + "/gemini/", api_version="v1", timeout=5000)
    gemini = genai.Client(api_key="k", http_options=options)
    job = gemini.batches.create(model="sim-0.5", src=[_inline(0)])
    assert gemini.batches.get(name=job.name).state == types.JobState.JOB_STATE_SUCCEEDED
    assert job.display_name is None


def test_batch_config_is_strict_and_has_flags() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = ["--batch-completion-s", "30", "--batch-line-failure-rate", "0.1"]
    args = parser.parse_args([*flags, "--batch-state", "/tmp/sim-batches.json"])
    batch = build_config(args).batch
    assert (batch.completion_s, batch.line_failure_rate) == (30, 0.1)
    assert batch.state_path == "/tmp/sim-batches.json"
    config = config_from_dict({"batch": {"completion_s": 5, "line_failure_rate": 0.1}})
    assert config.batch.completion_s == 5 and config.batch.expire_after_s == 86400
    assert config_from_dict({}).batch.state_path is None
    with pytest.raises(ConfigError, match="batch.completion_window"):
        config_from_dict({"batch": {"completion_window": 5}})
    with pytest.raises(ConfigError, match="batch.line_failure_rate"):
        config_from_dict({"batch": {"line_failure_rate": 2}})


def test_unauthenticated_batch_calls_are_refused(make_sim: Factory) -> None:
    sim = make_sim()
    for path in ("/v1/batches", "/v1/messages/batches", "/v1beta/batches"):
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(sim.url + path, timeout=5)
        assert info.value.code == 401
    log = sim.read_log()
    assert [(e["route"], e["status"], e["auth"]) for e in log] == [
        ("openai.batches.list", 401, False),
        ("anthropic.batches.list", 401, False),
        ("gemini.batches.list", 401, False),
    ]
