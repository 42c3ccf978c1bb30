"""The same evaluate + aggregate run on the local store and on S3 gives the same tables.

S3 is a real moto server on 127.0.0.1 (tests/support/s3_server.py), reached over HTTP by boto3.
The S3 run is driven from a child process: the Ray workers of the session cluster were started
before this module set its (fake) AWS credentials, so they only get them as the job's runtime env,
which a driver sets when it connects (the way `ray job submit --runtime-env-json` does).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import boto3
import pandas as pd
import pytest

from evalfleet.engine.prepare.resolve import resolve
from evalfleet.engine.run.items import answer_items
from evalfleet.engine.run.request import EvalRequest
from evalfleet.flows.pipeline import evaluate_and_aggregate
from evalfleet.simulator.process import start_simulator
from evalfleet.storage import LocalStore, layout, open_store
from tests.support.helpers import SPLITS, store_table
from tests.support.s3_server import FAKE_AWS_ENV

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

REPO = Path(__file__).resolve().parents[2]
MODELS = ["openai/sim-0.3", "openai/sim-0.8"]
RUN_ID = "e2e-s3"
PREFIX = "team/evals"
TOTAL = (4 + 11) * 6 * 2  # demo samples x epochs x models
RESULTS = sorted(
    [
        "samples.parquet",
        "metrics.parquet",
        "metrics.csv",
        "units.parquet",  # the headline's per-unit values
        "usage.csv",
        "usage.parquet",
        "version.json",  # what scored it
        "report.html",  # the run report
        *(f"summary_{split}.{ext}" for split in SPLITS for ext in ("parquet", "csv", "md")),
    ]
)

DRIVER = """
import json, sys
from evalfleet.flows.pipeline import evaluate_and_aggregate
from evalfleet.engine.run.request import EvalRequest

result = evaluate_and_aggregate(EvalRequest.model_validate_json(sys.argv[1]))
print("RESULT " + json.dumps(result.tables))
"""


def job_env(ray_address: str, prefect_api_url: str) -> dict[str, str]:
    """A driver's environment: join the session's Ray and Prefect, give workers the AWS env."""
    job_config = {"runtime_env": {"env_vars": dict(FAKE_AWS_ENV)}}
    return {
        **os.environ,
        **FAKE_AWS_ENV,
        "RAY_ADDRESS": ray_address,
        "PREFECT_API_URL": prefect_api_url,
        "RAY_JOB_CONFIG_JSON_ENV_VAR": json.dumps(job_config),
    }


def drive(request: EvalRequest, env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, request.model_dump_json()],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(lines) == 1, done.stdout + done.stderr
    return json.loads(lines[0][len("RESULT ") :])


@pytest.fixture(scope="module")
def both_runs(
    moto_server, ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path_factory
):
    work = tmp_path_factory.mktemp("s3e2e")
    bucket = f"evalfleet-e2e-{uuid.uuid4().hex[:8]}"
    moto_server.create_bucket(bucket)
    with start_simulator(answer_key, {"latency": {"ms": 5}}, work / "sim.jsonl") as sim:
        common = dict(
            models=MODELS,
            dataset_path=demo_dataset,
            run_id=RUN_ID,
            simulator_url=sim.url,
            workers=1,  # a worker actor takes ~6 s to start on 2 cores; one is plenty here
        )
        local_request = EvalRequest(**common, store=str(work / "runs"))
        s3_request = EvalRequest(
            **common, store=f"s3://{bucket}/{PREFIX}", s3_endpoint_url=moto_server.endpoint
        )
        local_result = evaluate_and_aggregate(local_request).tables
        s3_result = drive(s3_request, job_env(ray_address, prefect_api_url))
    return {
        "work": work,
        "bucket": bucket,
        "local": (local_request, local_result),
        "s3": (s3_request, s3_result),
    }


def expected_completion_keys(request: EvalRequest) -> list[str]:
    prepared = resolve(request)
    items = answer_items(prepared)
    return sorted(item.store_key for item in items)


def table(store, name: str) -> pd.DataFrame:
    return store_table(store, RUN_ID, name)


def version(store) -> str:
    return json.loads(store.get(layout.latest_results_key(RUN_ID)))["version"]


def test_tables_are_identical(both_runs, moto_server):
    local = LocalStore(both_runs["local"][0].store)
    s3_request = both_runs["s3"][0]
    s3 = open_store(s3_request.store, s3_endpoint_url=moto_server.endpoint)

    assert version(local) == version(s3)  # the same records scored: the same version
    for split in SPLITS:
        name = f"summary_{split}.parquet"
        summary_local, summary_s3 = table(local, name), table(s3, name)
        assert len(summary_local) == 2 * 2  # models x scoring modes
        order = ["model", "scoring"]
        pd.testing.assert_frame_equal(
            summary_local.sort_values(order).reset_index(drop=True),
            summary_s3.sort_values(order).reset_index(drop=True),
            check_exact=True,
        )
    samples_local, samples_s3 = table(local, "samples.parquet"), table(s3, "samples.parquet")
    assert len(samples_local) == TOTAL * 2  # one row per scoring mode
    order = ["model", "benchmark", "sample_id", "epoch", "scoring"]
    pd.testing.assert_frame_equal(
        samples_local.sort_values(order).reset_index(drop=True),
        samples_s3.sort_values(order).reset_index(drop=True),
        check_exact=True,
    )
    # The text tables are byte for byte the same too, and the flows returned the same summary.
    for name in RESULTS:  # (what scored them says when; the report, where the store is)
        if not name.endswith((".parquet", "version.json", "report.html")):
            key = layout.results_key(RUN_ID, version(local), name)
            assert local.get(key) == s3.get(key)
    local_result, s3_result = both_runs["local"][1], both_runs["s3"][1]
    assert s3_result["summaries"] == local_result["summaries"]
    assert s3_result["markdown"] == local_result["markdown"]
    assert (s3_result["missing"], s3_result["stale"], s3_result["unreadable"]) == (0, 0, 0)
    assert s3_result["store"] == s3_request.store


def test_bucket_holds_exactly_the_expected_keys(both_runs, moto_server):
    local_request, _ = both_runs["local"]
    expected = expected_completion_keys(local_request)
    assert len(expected) == TOTAL
    local = LocalStore(local_request.store)
    local_keys = local.list(RUN_ID)
    assert local_keys == sorted(
        [
            *expected,
            f"{RUN_ID}/manifest.json",
            layout.counts_key(RUN_ID),  # the answer counts of the aggregation, for `runs`
            *(layout.plan_key(RUN_ID, split) for split in SPLITS),
            layout.latest_results_key(RUN_ID),
            *(layout.results_key(RUN_ID, version(local), n) for n in RESULTS),
        ]
    )
    # The raw bucket listing (boto3, paginated, no store code): the same relative keys under
    # the prefix, the store's leaderboard, and nothing else in the bucket.
    client = boto3.client("s3", endpoint_url=moto_server.endpoint)
    raw = [
        obj["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=both_runs["bucket"])
        for obj in page.get("Contents", ())
    ]
    board = pd.read_csv(io.BytesIO(local.get("leaderboard/leaderboard.csv")))
    item_sets = dict(zip(board.benchmark, board.item_set, strict=False))
    plots = [
        f"{stem}--{split}--{item_sets[split]}.png"
        for stem in ("accuracy_ci", "accuracy_vs_tokens", "cost_per_correct")
        for split in SPLITS
    ]
    history = [f"history--{split}.png" for split in SPLITS]  # each benchmark over time
    names = [*plots, *history, "index.html", "latest.json", "leaderboard.csv", "leaderboard.md"]
    names.append("runs.html")  # the store's index of runs (reports.store_index)
    # rows.json: each run's rows and unit values, so the next run redraws only what changed
    extra = ["leaderboard.parquet", "rows.json"]
    leaderboard = sorted(f"leaderboard/{name}" for name in [*names, *extra])
    assert local.list("leaderboard") == leaderboard
    assert sorted(raw) == sorted(f"{PREFIX}/{key}" for key in [*local_keys, *leaderboard])


def test_every_s3_record_is_complete_and_matches_its_key(both_runs, moto_server):
    s3_request, _ = both_runs["s3"]
    s3 = open_store(s3_request.store, s3_endpoint_url=moto_server.endpoint)
    keys = s3.list(f"{RUN_ID}/completions")
    blobs = s3.get_many(keys)
    idents = Counter()
    for key in keys:
        record = json.loads(blobs[key])
        name = layout.parse_record_key(RUN_ID, key)
        assert name is not None and not name.failed
        item = name.item
        assert (record["model"], record["benchmark"], record["sample_id"], record["epoch"]) == (
            item.model,
            item.benchmark,
            item.sample_id,
            item.epoch,
        )
        assert record["stage"] == "answer" and record["judge_model"] is None
        assert record["request_hash"].startswith(name.hash_prefix)
        assert record["error"] is None and record["attempts"] == 1
        idents[item] += 1
    assert len(idents) == TOTAL and set(idents.values()) == {1}


def test_simulator_answered_the_same_requests_for_both_stores(both_runs):
    lines = [json.loads(x) for x in (both_runs["work"] / "sim.jsonl").read_text().splitlines()]
    assert len(lines) == 2 * TOTAL
    assert {line["status"] for line in lines} == {200}
    per_request = Counter((line["model"], line["prompt_sha256"], line["seed"]) for line in lines)
    assert len(per_request) == TOTAL
    assert set(per_request.values()) == {2}  # once for the local run, once for the S3 run
