"""SIGKILL an `evalfleet run --store s3://…` part-way, run the same run id again.

Shown from the simulator's request log and a raw bucket listing: nothing stored before the
resume is requested again, and every item ends with exactly one complete record.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import boto3
import pytest

from evalfleet.simulator.process import start_simulator
from evalfleet.storage import layout
from tests.support.helpers import SPLITS, prompt_hashes
from tests.support.s3_server import FAKE_AWS_ENV

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack


REPO = Path(__file__).resolve().parents[2]
TOTAL = (4 + 11) * 6  # demo dataset samples x epochs, one model
RUN_ID = "crash"
PREFIX = "evals"


def cli_env(ray_address: str, prefect_api_url: str) -> dict[str, str]:
    """The CLI joins the session's Ray and Prefect. Its Ray workers run in the session cluster,
    which does not see this process's environment: they get the AWS variables as the job's
    runtime env (what `ray job submit --runtime-env-json` does)."""
    job_config = {"runtime_env": {"env_vars": dict(FAKE_AWS_ENV)}}
    return {
        **os.environ,
        **FAKE_AWS_ENV,
        "RAY_ADDRESS": ray_address,
        "PREFECT_API_URL": prefect_api_url,
        "RAY_JOB_CONFIG_JSON_ENV_VAR": json.dumps(job_config),
    }


def cli(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "evalfleet.cli.main", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def bucket_keys(client, bucket: str) -> list[str]:
    """Every object key in the bucket: one paginated list_objects_v2, no store code."""
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return sorted(obj["Key"] for page in pages for obj in page.get("Contents", ()))


def completion_keys(client, bucket: str) -> list[str]:
    prefix = f"{PREFIX}/{layout.stage_prefix(RUN_ID, layout.ANSWER)}"
    return [k for k in bucket_keys(client, bucket) if k.startswith(prefix)]


def read_objects(client, bucket: str, keys: list[str]) -> dict[str, bytes]:
    return {k: client.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys}


def wait_until_stable(client, bucket: str, quiet_s: float = 2.0, limit_s: float = 30.0) -> None:
    """Wait for the killed run's in-flight calls to land (or be dropped with their actors)."""
    deadline = time.monotonic() + limit_s
    last = completion_keys(client, bucket)
    since = time.monotonic()
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline, "the bucket kept changing after the kill"
        time.sleep(0.1)
        now = completion_keys(client, bucket)
        if now != last:
            last, since = now, time.monotonic()


def test_sigkill_then_resume_on_s3_requests_only_missing_items(
    moto_server, ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):
    bucket = f"evalfleet-crash-{uuid.uuid4().hex[:8]}"
    moto_server.create_bucket(bucket)
    client = boto3.client("s3", endpoint_url=moto_server.endpoint)
    env = cli_env(ray_address, prefect_api_url)
    prompt_hash = prompt_hashes(demo_dataset)
    every_request = {(h, 42 + epoch) for h in prompt_hash.values() for epoch in range(6)}
    assert len(every_request) == TOTAL

    with start_simulator(answer_key, {"latency": {"ms": 300}}, tmp_path / "sim.jsonl") as sim:
        args = [
            "run",
            "--model",
            "openai/sim-0.5",
            "--dataset-path",
            demo_dataset,
            "--run-id",
            RUN_ID,
            "--store",
            f"s3://{bucket}/{PREFIX}",
            "--s3-endpoint-url",
            moto_server.endpoint,
            "--simulator-url",
            sim.url,
            "--max-in-flight",
            "4",
            "--workers",
            "1",
        ]
        first = cli(args, env)
        deadline = time.monotonic() + 180
        while len(completion_keys(client, bucket)) < 20:
            assert first.poll() is None, first.stdout.read()
            assert time.monotonic() < deadline, "the first run stored nothing in time"
            time.sleep(0.05)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        first.stdout.close()
        assert first.returncode == -signal.SIGKILL
        wait_until_stable(client, bucket)

        before = read_objects(client, bucket, completion_keys(client, bucket))
        assert 20 <= len(before) < TOTAL
        stored_before = [json.loads(data) for data in before.values()]  # all complete JSON
        done_requests = {
            (prompt_hash[(r["benchmark"], r["sample_id"])], r["request"]["seed"])
            for r in stored_before
        }
        assert len(done_requests) == len(before)
        resumed_at = time.time()
        second = cli(args, env)
        output, _ = second.communicate(timeout=300)
        assert second.returncode == 0, output
        assert "| openai/sim-0.5 | zerobench" in output
        remaining = TOTAL - len(before)
        assert f"{TOTAL - remaining} done, 0 failed, 0 stale, {remaining} missing" in output
        assert f": {{'ok': {remaining}}}" in output  # no "exists": nothing was asked twice

    # The simulator saw, after the resume started, exactly the requests that had no record.
    log = [json.loads(line) for line in (tmp_path / "sim.jsonl").read_text().splitlines()]
    after = [line for line in log if line["t"] >= resumed_at]
    asked = Counter((line["prompt_sha256"], line["seed"]) for line in after)
    assert not set(asked) & done_requests
    assert set(asked) == every_request - done_requests
    assert set(asked.values()) == {1}
    assert {line["status"] for line in after} == {200}

    # The bucket: one complete record per item, the old ones untouched, nothing else stored.
    keys = completion_keys(client, bucket)
    idents = Counter()
    for key in keys:
        name = layout.parse_record_key(RUN_ID, key[len(PREFIX) + 1 :])
        assert name is not None and not name.failed, key
        idents[name.item] += 1
    assert len(keys) == TOTAL
    assert len(idents) == TOTAL
    assert set(idents.values()) == {1}
    assert read_objects(client, bucket, list(before)) == before
    records = [json.loads(data) for data in read_objects(client, bucket, keys).values()]
    assert all(r["error"] is None and r["response"] for r in records)
    others = {k[len(PREFIX) + 1 :] for k in set(bucket_keys(client, bucket)) - set(keys)}
    results = {k for k in others if k.startswith(f"{RUN_ID}/results/v-")}
    leaderboard = {k for k in others if k.startswith("leaderboard/")}
    # the store's leaderboard: 3 tables, 3 plots and a history plot per benchmark (2 splits),
    # page, latest, rows.json (each run's rows, so the next run redraws only what changed) and
    # runs.html (the store's index of runs, reports.store_index)
    assert len(leaderboard) == 3 + 4 * 2 + 2 + 1 + 1
    assert "leaderboard/runs.html" in leaderboard
    assert others - results - leaderboard == {
        layout.manifest_key(RUN_ID),
        layout.counts_key(RUN_ID),  # the answer counts of the aggregation, for `runs`
        layout.latest_results_key(RUN_ID),
        *(layout.plan_key(RUN_ID, split) for split in SPLITS),
    }
    assert len({k.split("/")[2] for k in results}) == 1  # one results version
