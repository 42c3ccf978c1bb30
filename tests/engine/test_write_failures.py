"""Checkpoint writes that fail, and records that cannot be decoded, leave the item missing.

* S3 (a moto server on 127.0.0.1): two completion keys refuse every write attempt the store
  makes (409 ConditionalRequestConflict, the one S3 error the store retries itself). The run
  goes on, counts them `write_failed`, reports them at the end, stores nothing for them, and a
  resume requests exactly those two.
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
from collections.abc import Iterator
from pathlib import Path

import boto3
import pandas as pd
import pytest

from engine.items import answer_items
from engine.request import EvalRequest
from engine.resolve import resolve
from flows.aggregate import aggregate
from flows.evaluate import evaluate
from reports.status import run_status
from simulator.process import start_simulator
from storage import LocalStore, layout, open_store
from storage.s3 import _CONFLICT_ATTEMPTS
from tests.helpers import prompt_hashes, store_table
from tests.s3_server import FAKE_AWS_ENV, MotoS3Server, apply_fake_aws_env

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
from flows.aggregate import aggregate
from flows.evaluate import evaluate
from engine.request import EvalRequest
from reports.tables import print_result

request = EvalRequest.model_validate_json(sys.argv[1])
evaluated = evaluate(request)
aggregated = aggregate(request.run_id, store=request.store, s3_endpoint_url=request.s3_endpoint_url)
print_result(aggregated)
print("RESULT " + json.dumps({"evaluate": evaluated, "aggregate": aggregated}))
"""


@pytest.fixture(scope="module")
def moto_server() -> Iterator[MotoS3Server]:
    with pytest.MonkeyPatch.context() as mp:
        apply_fake_aws_env(mp)
        server = MotoS3Server()
        server.start()
        try:
            yield server
        finally:
            server.stop()


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


def drive(request: EvalRequest, env: dict[str, str]) -> tuple[dict, str]:
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, request.model_dump_json()],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(lines) == 1, output
    return json.loads(lines[0][len("RESULT ") :]), output


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


def test_s3_write_that_keeps_failing_leaves_the_item_missing_and_the_run_goes_on(
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
        )
        items = work_items(request)
        failing = [pick(items, MAIN, "2", 3), pick(items, SUB, "4_1", 0)]
        for item in failing:
            # Every attempt the store makes is refused; the fault is used up by them.
            moto_server.inject("PUT", f"{PREFIX}/{item.store_key}", "conflict", _CONFLICT_ATTEMPTS)

        result, output = drive(request, env)
        assert result["evaluate"]["submitted"] == TOTAL
        assert result["evaluate"]["statuses"] == {"ok": TOTAL - 2, "write_failed": 2}
        assert result["evaluate"]["errors"] == {}
        assert "2 records could not be checkpointed" in output
        assert "2 items have no record yet: run again with the same run id" in output
        assert result["aggregate"]["missing"] == 2
        # Nothing at all was stored for the two items (no record, no failure record).
        expected = sorted(item.store_key for item in items)
        assert bucket_completions() == sorted(set(expected) - {i.store_key for i in failing})
        assert status_rows("wfail", request.store, s3_endpoint_url=moto_server.endpoint) == (
            [
                ["answer", MODEL, MAIN, N_MAIN - 1, 0, 0, 1, 0],
                ["answer", MODEL, SUB, N_SUB - 1, 0, 0, 1, 0],
            ],
            [],
        )
        # Each of the two was requested exactly once by the first run.
        first = requested_since(tmp_path / "sim.jsonl", 0)
        assert len(first) == len(set(first)) == TOTAL

        resumed_at = time.time()
        result, output = drive(request, env)
        assert result["evaluate"]["submitted"] == 2
        assert result["evaluate"]["statuses"] == {"ok": 2}
        assert result["aggregate"]["missing"] == 0
        assert "could not be checkpointed" not in output

    again = requested_since(tmp_path / "sim.jsonl", resumed_at)
    assert again == sorted(
        (prompts[(i.key.benchmark, i.key.sample_id)], i.decoding.seed) for i in failing
    )
    assert bucket_completions() == expected
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
        assert first["statuses"] == {"ok": TOTAL}
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
        assert (second["submitted"], second["statuses"]) == (2, {"ok": 2})
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
