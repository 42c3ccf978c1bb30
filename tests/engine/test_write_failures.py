"""Checkpoint writes that fail stop the run; records that cannot be decoded leave the item
missing.

* A local store whose sample directory cannot be made (a file is in its place): the first
  answer that cannot be stored stops the run. Nothing more is sent, the call in flight lands,
  the command exits 4 naming the key and the error with the command that resumes it, no table
  is written and the run is marked failed; once the file is gone the resume asks exactly what
  is not stored.
* S3 (a moto server on 127.0.0.1): a completion key refuses every write attempt the store
  makes (409 ConditionalRequestConflict, the one S3 error the store retries itself). The run
  stops sending, stores nothing for it, keeps what was in flight, and a resume asks exactly
  what is not stored.
* Local store: a truncated record and a record of binary garbage are reported by `status` as
  unreadable and counted missing; the tables leave them out exactly as if they were missing;
  the next resume moves them under {run}/quarantine/ and requests exactly those two again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import boto3
import pandas as pd
import pytest

from evalfleet.engine.prepare.resolve import resolve
from evalfleet.engine.run.items import answer_items
from evalfleet.engine.run.request import EvalRequest
from evalfleet.engine.store.heartbeat import liveness
from evalfleet.engine.store.manifest_types import Manifest
from evalfleet.flows.aggregate import aggregate
from evalfleet.flows.evaluate import evaluate
from evalfleet.reports.status import run_status
from evalfleet.simulator.process import start_simulator
from evalfleet.storage import LocalStore, layout, open_store
from evalfleet.storage.s3 import _CONFLICT_ATTEMPTS
from tests.support.cli_here import evalfleet_here
from tests.support.helpers import prompt_hashes, store_table
from tests.support.hostile_places import make_read_only, release
from tests.support.s3_server import FAKE_AWS_ENV

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

REPO = Path(__file__).resolve().parents[2]
MODEL = "openai/sim-0.5"
MAIN, SUB = "zerobench", "zerobench_subquestions"
N_MAIN, N_SUB = 4 * 6, 11 * 6
TOTAL = N_MAIN + N_SUB
PREFIX = "wf"
COLUMNS = ["stage", "model", "benchmark", "done", "failed", "stale", "missing", "unreadable"]

DRIVER = """
import json, sys
from evalfleet.engine.run.outcome import RunFailed
from evalfleet.flows.aggregate import aggregate
from evalfleet.flows.evaluate import evaluate
from evalfleet.engine.run.request import EvalRequest
from evalfleet.reports.tables import print_result

request = EvalRequest.model_validate_json(sys.argv[1])
try:
    evaluated = evaluate(request)
except RunFailed as exc:
    print("FAILED " + json.dumps(str(exc)))
    raise SystemExit(exc.exit_code)
aggregated = aggregate(request.run_id, store=request.store, s3_endpoint_url=request.s3_endpoint_url)
print_result(aggregated)
outcome = {"statuses": dict(evaluated.statuses), "submitted": evaluated.submitted}
print("RESULT " + json.dumps({"evaluate": outcome, "aggregate": aggregated}))
"""


def job_env(ray_address: str, prefect_api_url: str) -> dict[str, str]:
    """Join the session's Ray and Prefect; the Ray workers get the AWS variables as the job's
    runtime env (the session cluster was started without them)."""
    job_config = {"runtime_env": {"env_vars": dict(FAKE_AWS_ENV)}}
    return {
        **os.environ,
        **FAKE_AWS_ENV,
        "RAY_ADDRESS": ray_address,
        "PREFECT_API_URL": prefect_api_url,
        "RAY_JOB_CONFIG_JSON_ENV_VAR": json.dumps(job_config),
    }


def drive(request: EvalRequest, env: dict[str, str], code: int = 0) -> tuple[dict | str, str]:
    """The evaluate and aggregate flows' results (exit 0), or the failed run's message."""
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, request.model_dump_json()],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == code, output
    tag = "RESULT " if code == 0 else "FAILED "
    lines = [line for line in done.stdout.splitlines() if line.startswith(tag)]
    assert len(lines) == 1, output
    return json.loads(lines[0][len(tag) :]), output


def work_items(request: EvalRequest):
    """The run's answer items, planned without writing anything."""
    prepared = resolve(request)
    return answer_items(prepared)


def pick(items, benchmark: str, sample_id: str, epoch: int):
    (item,) = [
        i
        for i in items
        if (i.key.benchmark, i.key.sample_id, i.key.epoch) == (benchmark, sample_id, epoch)
    ]
    return item


def requested_since(log_path: Path, since: float) -> list[tuple[str, int]]:
    lines = [json.loads(x) for x in log_path.read_text().splitlines()]
    return sorted((line["prompt_sha256"], line["seed"]) for line in lines if line["t"] >= since)


def status_rows(
    run_id: str, store: str, s3_endpoint_url: str | None = None
) -> tuple[list[list], list[str]]:
    table, bad = run_status(open_store(store, s3_endpoint_url=s3_endpoint_url), run_id)
    assert list(table.columns) == COLUMNS
    return table.values.tolist(), sorted(bad)


def test_local_write_that_fails_stops_the_run_and_the_resume_asks_the_rest(
    session_services, demo_dataset, answer_key, tmp_path
):
    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    prompts = prompt_hashes(demo_dataset)
    with start_simulator(answer_key, {"latency": {"ms": 5}}, log) as sim:
        args = ["run", "-m", MODEL, "--dataset-path", demo_dataset, "--store", str(runs)]
        args += ["--simulator-url", sim.url, "--run-id", "wlocal", "--max-in-flight", "2"]
        args += ["--workers", "1"]
        request = EvalRequest(
            models=[MODEL],
            dataset_path=demo_dataset,
            run_id="wlocal",
            store=str(runs),
            simulator_url=sim.url,
        )
        items = work_items(request)
        first = items[0]  # sample 1 of the main split, epoch 0: asked first
        assert (first.key.benchmark, first.key.sample_id) == (MAIN, "1")
        # Its record's folder refuses new files (what a full or failing disk does to a write;
        # a folder of the wrong type, or a model's folder that refuses files, is refused
        # before any request: tests/hostile/test_damaged_places.py). Read-only for root too.
        blocker = runs / first.store_key.rsplit("/", 1)[0]
        blocker.mkdir(parents=True)
        make_read_only(blocker)

        def run() -> subprocess.CompletedProcess:
            """The command in this process, on the session's Ray and Prefect server."""
            return evalfleet_here(*args)

        failed = run()
        sim.flush_log()
        asked = requested_since(log, 0)
        # The first answer that landed could not be stored: nothing more was sent, the other
        # call in flight (sample 1's epoch 1, whose folder is the same) landed.
        assert failed.returncode == 4, failed.stderr
        assert len(asked) == 2
        lines = [line for line in failed.stderr.splitlines() if line.startswith("error: ")]
        assert len(lines) == 1, failed.stderr
        assert lines[0].startswith(
            "error: run wlocal stopped: a record could not be stored (wlocal/completions/"
            "openai%2Fsim-0.5/zerobench/1/"
        )
        assert "Permission denied" in lines[0] or "Operation not permitted" in lines[0]
        assert (
            "nothing more was sent, the calls in flight landed, 2 answers paid for were "
            in (lines[0])
        )
        resume = [line for line in failed.stderr.splitlines() if line.startswith("resume with: ")]
        assert resume == [f"resume with: evalfleet {' '.join(args)}"]
        # write failures are not finished work: nothing stored, no tables, the run failed
        assert list((runs / "wlocal").rglob("*.json")) == [runs / "wlocal" / "manifest.json"]
        manifest = Manifest.from_bytes((runs / "wlocal" / "manifest.json").read_bytes())
        assert liveness(manifest) == "failed"

        release(blocker)
        resumed_at = time.time()
        done = run()
        assert done.returncode == 0, done.stderr
        sim.flush_log()
    again = requested_since(log, resumed_at)
    assert again == sorted(
        (prompts[(i.key.benchmark, i.key.sample_id)], i.decoding.seed) for i in items
    )
    assert status_rows("wlocal", str(runs)) == (
        [["answer", MODEL, MAIN, N_MAIN, 0, 0, 0, 0], ["answer", MODEL, SUB, N_SUB, 0, 0, 0, 0]],
        [],
    )


def test_s3_write_that_keeps_failing_stops_the_run_and_a_resume_finishes_it(
    moto_server, ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):
    bucket = f"evalfleet-wf-{uuid.uuid4().hex[:8]}"
    moto_server.create_bucket(bucket)
    client = boto3.client("s3", endpoint_url=moto_server.endpoint)
    env = job_env(ray_address, prefect_api_url)
    prompts = prompt_hashes(demo_dataset)

    def bucket_completions() -> list[str]:
        prefix = f"{PREFIX}/{layout.stage_prefix('wfail', layout.ANSWER)}"
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sorted(o["Key"][len(PREFIX) + 1 :] for p in pages for o in p.get("Contents", ()))

    with start_simulator(answer_key, {"latency": {"ms": 5}}, tmp_path / "sim.jsonl") as sim:
        request = EvalRequest(
            models=[MODEL],
            dataset_path=demo_dataset,
            run_id="wfail",
            store=f"s3://{bucket}/{PREFIX}",
            s3_endpoint_url=moto_server.endpoint,
            simulator_url=sim.url,
            workers=1,
            max_in_flight=4,
        )
        items = work_items(request)
        failing = pick(items, MAIN, "2", 3)
        # Every attempt the store makes is refused; the fault is used up by them.
        moto_server.inject("PUT", f"{PREFIX}/{failing.store_key}", "conflict", _CONFLICT_ATTEMPTS)

        message, _ = drive(request, env, code=4)
        assert f"a record could not be stored ({failing.store_key}: " in message
        sim.flush_log()
        first = requested_since(tmp_path / "sim.jsonl", 0)
        stored = bucket_completions()
        # Nothing at all was stored for it; what else was asked was stored; the rest was not
        # asked (the store retried the write for a while, and the run went on meanwhile; once
        # the write had failed, nothing more was sent)
        assert failing.store_key not in stored
        assert len(first) == len(set(first)) == len(stored) + 1 < TOTAL

        resumed_at = time.time()
        result, output = drive(request, env)
        assert result["evaluate"]["statuses"] == {"ok": TOTAL - len(stored)}
        assert result["aggregate"]["missing"] == 0
        assert "could not be stored" not in output

    again = requested_since(tmp_path / "sim.jsonl", resumed_at)
    by_key = {(prompts[(i.key.benchmark, i.key.sample_id)], i.decoding.seed): i for i in items}
    assert sorted(by_key[a].store_key for a in again) == sorted(
        i.store_key for i in items if i.store_key not in stored
    )
    assert bucket_completions() == sorted(item.store_key for item in items)
    assert status_rows("wfail", request.store, s3_endpoint_url=moto_server.endpoint) == (
        [["answer", MODEL, MAIN, N_MAIN, 0, 0, 0, 0], ["answer", MODEL, SUB, N_SUB, 0, 0, 0, 0]],
        [],
    )


def tables(store: LocalStore, run_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    return store_table(store, run_id, "samples.parquet"), store_table(
        store, run_id, "summary_zerobench.parquet"
    )


def test_undecodable_records_count_as_missing_and_a_resume_asks_them_again(
    ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):
    runs = tmp_path / "runs"
    store = LocalStore(runs)
    run_id = "garbage"
    prompts = prompt_hashes(demo_dataset)
    with start_simulator(answer_key, {"latency": {"ms": 5}}, tmp_path / "sim.jsonl") as sim:
        request = EvalRequest(
            models=[MODEL],
            dataset_path=demo_dataset,
            run_id=run_id,
            store=str(runs),
            simulator_url=sim.url,
            workers=1,
        )
        first = evaluate(request)
        assert first.statuses == {"ok": TOTAL}
        items = work_items(request)
        broken = [pick(items, MAIN, "1", 0), pick(items, SUB, "3_2", 4)]
        broken_keys = sorted(i.store_key for i in broken)
        truncated = (runs / broken[0].store_key).read_bytes()[:150]  # a torn write's leftovers
        garbage = b"\x00\xff\xfe not a record \x80"
        (runs / broken[0].store_key).write_bytes(truncated)
        (runs / broken[1].store_key).write_bytes(garbage)

        # status: unreadable, and counted missing (not done).
        unreadable = [
            ["answer", MODEL, MAIN, N_MAIN - 1, 0, 0, 1, 1],
            ["answer", MODEL, SUB, N_SUB - 1, 0, 0, 1, 1],
        ]
        assert status_rows(run_id, str(runs)) == (unreadable, broken_keys)

        # aggregate: the two are left out, and nothing else is.
        result = aggregate(run_id, store=str(runs))
        assert result["unreadable"] == 2
        samples_garbage, _ = tables(store, run_id)
        assert len(samples_garbage) == (TOTAL - 2) * 2  # two scoring modes
        scored = {(r.benchmark, r.sample_id, r.epoch) for r in samples_garbage.itertuples()}
        assert {(i.key.benchmark, i.key.sample_id, i.key.epoch) for i in broken} & scored == set()
        assert len(scored) == TOTAL - 2

        # The next resume moves them aside byte for byte and asks exactly those two again.
        resumed_at = time.time()
        second = evaluate(request)
        assert (second.submitted, second.statuses) == (2, {"ok": 2})
        quarantined = {
            layout.quarantine_key(run_id, k): v
            for k, v in ((broken[0].store_key, truncated), (broken[1].store_key, garbage))
        }
        assert store.list(f"{run_id}/quarantine") == sorted(quarantined)
        assert store.get_many(quarantined) == quarantined

    assert requested_since(tmp_path / "sim.jsonl", resumed_at) == sorted(
        (prompts[(i.key.benchmark, i.key.sample_id)], i.decoding.seed) for i in broken
    )
    for item in broken:
        record = json.loads(store.get(item.store_key))
        assert (record["benchmark"], record["sample_id"], record["epoch"]) == (
            item.key.benchmark,
            item.key.sample_id,
            item.key.epoch,
        )
    done = [["answer", MODEL, MAIN, N_MAIN, 0, 0, 0, 0], ["answer", MODEL, SUB, N_SUB, 0, 0, 0, 0]]
    assert status_rows(run_id, str(runs)) == (done, [])
