"""Batch mode end to end against the simulator's batch APIs, through the official SDKs.

* One model per provider and a judge, all in batch mode, give the same per-sample scores as
  the online path for the same seeds, at half the cost, and not one online call.
* SIGKILL of the driver right after a submission (before its id is recorded) and again while
  it polls: the resumes find the job at the provider and poll it; each job is submitted once
  and no line is answered twice.
* Failed and expired lines: asked again (in a batch, or online) within the retry policy;
  every item ends done or failed, none lost.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from evalfleet.simulator.process import start_simulator
from tests.support.cli_here import evalfleet_here
from tests.support.helpers import result_table

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

REPO = Path(__file__).resolve().parents[2]
MODELS = ["openai/sim-0.5", "anthropic/sim-0.6", "google/sim-0.7"]
JUDGE = "anthropic/sim-0.9"
ITEMS = (4 + 11) * 6  # demo questions and subquestions, six epochs
SIMULATOR = {
    "latency": {"ms": 5},
    "rules": [{"match": "sim-0.[567]", "unformatted_rate": 0.4}],  # some answers get judged
}


def cli(env, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "evalfleet.cli.main", *args]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)


def log_entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def records(runs: Path, run_id: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in (runs / run_id).glob("[cj]*/**/*.json")]


def test_batch_mode_gives_the_online_tables_at_half_the_price(
    session_services, demo_dataset, answer_key, tmp_path
):

    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    with start_simulator(answer_key, SIMULATOR, log) as sim:
        common = [x for m in MODELS for x in ("-m", m)]
        common += ["--judge-model", JUDGE, "--dataset-path", demo_dataset, "--store", str(runs)]
        common += ["--simulator-url", sim.url]
        online = evalfleet_here("run", *common, "--run-id", "online")
        assert online.returncode == 0, online.stderr
        batched = evalfleet_here(
            "run", *common, "--run-id", "batched", "--batch", "--batch-poll-s", "0.2"
        )
        assert batched.returncode == 0, batched.stderr
        sim.flush_log()

    columns = ["model", "benchmark", "sample_id", "epoch", "scoring", "answer", "correct"]
    key = columns[:5]
    a = result_table(runs, "online", "samples.parquet")[columns].sort_values(key)
    b = result_table(runs, "batched", "samples.parquet")[columns].sort_values(key)
    assert len(a) > 0 and (a["scoring"] == "judge").any()
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))

    online_records = {(r["stage"], r["model"], r["benchmark"], r["sample_id"], r["epoch"]): r
                      for r in records(runs, "online")}  # fmt: skip
    batch_records = records(runs, "batched")
    judged = [r for r in batch_records if r["stage"] == "judge"]
    assert len(batch_records) == len(online_records) == 3 * ITEMS + len(judged) and judged
    for record in batch_records:
        twin = online_records[
            (record["stage"], record["model"], record["benchmark"], record["sample_id"],
             record["epoch"])
        ]  # fmt: skip
        assert record["request_hash"] == twin["request_hash"]
        assert record["response"] == twin["response"]
        assert record["batch"]["job"] and twin["batch"] is None
        assert abs(record["cost_usd"] - twin["cost_usd"] / 2) < 1e-12

    usage_online = result_table(runs, "online", "usage.parquet").set_index(["model", "benchmark"])
    usage_batch = result_table(runs, "batched", "usage.parquet").set_index(["model", "benchmark"])
    assert usage_online["batch_calls"].sum() == 0
    assert usage_batch["batch_calls"].sum() == len(batch_records)
    for column in ("cost_usd", "judge_cost_usd", "total_cost_usd"):
        halved = (usage_online[column] / 2).round(6)
        pd.testing.assert_series_equal(usage_batch[column], halved, atol=2e-6)
    assert (usage_batch["batch_cost_usd"] - usage_batch["total_cost_usd"]).abs().max() < 2e-6

    entries = log_entries(log)
    since = min(e["t"] for e in entries if ".batches.create" in e["route"])
    late = [e for e in entries if e["t"] >= since]
    online_routes = [e for e in late if e["route"].endswith(("chat", "messages", "generate"))]
    assert online_routes == []
    lines = Counter(e["route"] for e in late if e["route"].endswith(".batch"))
    assert lines == {
        "openai.batch": ITEMS,
        "anthropic.batch": ITEMS + len(judged),
        "gemini.batch": ITEMS,
    }


def test_a_killed_driver_resumes_its_jobs_without_submitting_them_again(
    ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):
    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    env = {**os.environ, "RAY_ADDRESS": ray_address, "PREFECT_API_URL": prefect_api_url}
    config = {"latency": {"ms": 5}, "batch": {"completion_s": 600}}
    with start_simulator(answer_key, config, log) as sim:
        args = ["run", "-m", "openai/sim-0.5", "-m", "anthropic/sim-0.6", "--batch"]
        args += ["--dataset-path", demo_dataset, "--store", str(runs), "--run-id", "killed"]
        args += ["--simulator-url", sim.url, "--batch-poll-s", "0.2"]
        command = [sys.executable, "-m", "evalfleet.cli.main", *args]

        def creates() -> list[dict]:
            sim.flush_log()
            return [e for e in log_entries(log) if e["route"].endswith(".batches.create")]

        # 1. Killed between a submission and recording its id.
        paused = {**env, "EVALFLEET_TEST_PAUSE_AFTER_SUBMIT_S": "60"}
        first = subprocess.Popen(command, cwd=REPO, env=paused, start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 120
        while not (log.exists() and creates()):
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        (job,) = [json.loads(p.read_text()) for p in (runs / "killed" / "batches").glob("*.json")]
        assert job["state"] == "intent" and job["provider_id"] is None

        # 2. Resumed: the job is found at the provider, the other submitted; killed polling.
        second = subprocess.Popen(command, cwd=REPO, env=env, start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        while len(creates()) < 2:
            assert second.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(1.0)  # polling now: the jobs take 10 minutes
        os.killpg(second.pid, signal.SIGKILL)
        second.wait()
        jobs = [json.loads(p.read_text()) for p in (runs / "killed" / "batches").glob("*.json")]
        assert sorted(j["state"] for j in jobs) == ["submitted", "submitted"]

        # 3. Ten minutes later (the simulator's batch clock), resumed again: polls the two
        # jobs to their end and writes the tables.
        sim.advance_batches(600)
        third = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
        assert third.returncode == 0, third.stderr
        sim.flush_log()
    entries = log_entries(log)
    created = Counter(e["route"] for e in entries if e["route"].endswith(".batches.create"))
    assert created == {"openai.batches.create": 1, "anthropic.batches.create": 1}
    answered = Counter(
        (e["model"], e["prompt_sha256"], e["seed"])
        for e in entries
        if e["route"].endswith(".batch")
    )
    assert len(answered) == 2 * ITEMS and set(answered.values()) == {1}
    assert len(records(runs, "killed")) == 2 * ITEMS
    jobs = [json.loads(p.read_text()) for p in (runs / "killed" / "batches").glob("*.json")]
    assert sorted(j["state"] for j in jobs) == ["ended", "ended"]
    summary = result_table(runs, "killed", "summary_zerobench.parquet")
    assert set(summary["model"]) == {"openai/sim-0.5", "anthropic/sim-0.6"}


def test_failed_and_expired_lines_are_asked_again_and_none_is_lost(
    session_services, demo_dataset, answer_key, tmp_path
):
    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    config = {"latency": {"ms": 5}, "batch": {"line_failure_rate": 0.3}}
    with start_simulator(answer_key, config, log) as sim:
        args = ["run", "-m", "openai/sim-0.5", "-b", "zerobench", "--batch"]
        args += ["--dataset-path", demo_dataset, "--store", str(runs), "--simulator-url", sim.url]
        args += ["--batch-poll-s", "0.1", "--max-attempts", "3"]
        flaky = evalfleet_here(*args, "--run-id", "flaky")
        assert flaky.returncode == 0, flaky.stderr
        sim.flush_log()
    entries = [e for e in log_entries(log) if e["route"] == "openai.batch"]
    per_request = Counter((e["prompt_sha256"], e["seed"]) for e in entries)
    failed_lines = Counter((e["prompt_sha256"], e["seed"]) for e in entries if e["status"] != 200)
    answered = {k for k in per_request if per_request[k] > failed_lines[k]}
    stored = records(runs, "flaky")
    done = [r for r in stored if r["error"] is None]
    errors = [r for r in stored if r["error"] is not None]
    assert len(per_request) == 4 * 6  # every item asked
    assert len(done) == len(answered) and len(done) + len(errors) == 4 * 6  # none lost
    assert max(per_request.values()) <= 3  # at most max-attempts lines per item
    assert all(per_request[k] == 3 for k in per_request if k not in answered)
    assert failed_lines and sum(failed_lines.values()) == sum(per_request.values()) - len(done)
    jobs = [json.loads(p.read_text()) for p in (runs / "flaky" / "batches").glob("*")]
    assert len(jobs) >= 2 and all(j["state"] == "ended" for j in jobs)


def test_expired_lines_are_asked_online_when_the_request_says_so(
    session_services, demo_dataset, answer_key, tmp_path
):
    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    # Lines are done over 4 s; the job expires after 1 s: about three quarters expire.
    config = {"latency": {"ms": 5}, "batch": {"completion_s": 4, "expire_after_s": 1}}
    with start_simulator(answer_key, config, log) as sim:
        args = ["run", "-m", "openai/sim-0.5", "-b", "zerobench", "--batch", "--run-id", "late"]
        args += ["--dataset-path", demo_dataset, "--store", str(runs), "--simulator-url", sim.url]
        args += ["--batch-poll-s", "0.5", "--batch-retry", "online"]
        late = evalfleet_here(*args)
        assert late.returncode == 0, late.stderr
        sim.flush_log()
    entries = log_entries(log)
    in_batch = [e for e in entries if e["route"] == "openai.batch"]
    expired = {(e["prompt_sha256"], e["seed"]) for e in in_batch if e["outcome"] == "expired"}
    answered = {(e["prompt_sha256"], e["seed"]) for e in in_batch if e["status"] == 200}
    online = Counter(
        (e["prompt_sha256"], e["seed"]) for e in entries if e["route"] == "openai.chat"
    )
    assert expired and answered and not expired & answered
    assert set(online) == expired and set(online.values()) == {1}  # each once, online
    stored = records(runs, "late")
    assert len(stored) == 4 * 6 and all(r["error"] is None for r in stored)
    assert sum(1 for r in stored if r["batch"] is None) == len(expired)
    (job,) = [json.loads(p.read_text()) for p in (runs / "late" / "batches").glob("*")]
    assert job["detail"] == "expired" and job["written"] == {
        "ok": len(answered),
        "failed": 0,
        "retry": len(expired),
    }


def test_no_wait_submits_and_batches_poll_finishes_the_run(
    session_services, demo_dataset, answer_key, tmp_path
):
    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    config = {"latency": {"ms": 5}, "batch": {"completion_s": 600}}
    with start_simulator(answer_key, config, log) as sim:
        args = ["run", "-m", "google/sim-0.7", "-b", "zerobench", "--batch", "--no-wait"]
        args += ["--dataset-path", demo_dataset, "--store", str(runs), "--simulator-url", sim.url]
        submitted = evalfleet_here(*args, "--run-id", "later")
        assert submitted.returncode == 0, submitted.stderr
        assert "run later: 1 batch jobs open; `evalfleet batches poll --store" in submitted.stdout
        assert not (runs / "later" / "results").exists()
        status = evalfleet_here("status", "later", "--store", str(runs))
        assert status.returncode == 0, status.stderr
        assert "batch jobs" in status.stdout
        lines = status.stdout.splitlines()
        rows = [[c.strip() for c in line.split("|")[1:-1]] for line in lines]
        (job,) = [r for r in rows if len(r) == 8 and r[2].startswith("batches/")]
        assert job[3:] == ["submitted", "running", "24", "processing 24, total 24", "-"]

        early = evalfleet_here("batches", "poll", "--store", str(runs))
        assert early.returncode == 0 and "run later: {} — 1 jobs open" in early.stdout
        sim.advance_batches(600)
        done = evalfleet_here("batches", "poll", "--store", str(runs))
        assert done.returncode == 0, done.stderr
        assert "run later: {'ended': 1, 'lines_ok': 24} — aggregated" in done.stdout
        again = evalfleet_here("batches", "poll", "--store", str(runs))
        assert again.stdout.strip() == f"no batch jobs open in {runs}"
        sim.flush_log()
    summary = result_table(runs, "later", "summary_zerobench.parquet")
    assert set(summary["model"]) == {"google/sim-0.7"} and set(summary["n_questions"]) == {4}
    created = [e for e in log_entries(log) if e["route"] == "gemini.batches.create"]
    assert len(created) == 1


def test_an_interrupted_batch_run_says_how_many_lines_wait_and_that_a_resume_collects_them(
    ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):
    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    env = {**os.environ, "RAY_ADDRESS": ray_address, "PREFECT_API_URL": prefect_api_url}
    config = {"latency": {"ms": 5}, "batch": {"completion_s": 600}}
    with start_simulator(answer_key, config, log) as sim:
        args = ["run", "-m", "google/sim-0.7", "-b", "zerobench", "--batch", "--run-id", "cut"]
        args += ["--dataset-path", demo_dataset, "--store", str(runs), "--simulator-url", sim.url]
        args += ["--batch-poll-s", "0.2"]
        output = tmp_path / "out.log"
        with output.open("w") as out:
            first = subprocess.Popen(
                [sys.executable, "-m", "evalfleet.cli.main", *args],
                cwd=REPO,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        jobs = runs / "cut" / "batches"
        deadline = time.monotonic() + 120
        while not any(
            json.loads(p.read_text())["state"] == "submitted" for p in jobs.glob("*.json")
        ):
            assert first.poll() is None and time.monotonic() < deadline, output.read_text()
            time.sleep(0.1)
        os.killpg(first.pid, signal.SIGINT)  # Ctrl-C while it polls a job that takes 10 minutes
        assert first.wait(timeout=60) == 130, output.read_text()
        said = output.read_text()
        assert "Traceback" not in said, said
        assert (
            "run cut interrupted by SIGINT: 0 new records stored, 0 asked and not stored "
            "(possibly paid for; asked again on resume), 0 never sent; 24 lines wait in 1 open "
            "batch job at the provider, which a rerun (or `evalfleet batches poll`) collects "
            "without sending them again; everything stored is kept"
        ) in said
        sim.advance_batches(600)
        resumed = cli(env, *args)
        assert resumed.returncode == 0, resumed.stderr
        sim.flush_log()
    created = [e for e in log_entries(log) if e["route"] == "gemini.batches.create"]
    assert len(created) == 1  # the resume collected the job, it did not send it again
    assert len(records(runs, "cut")) == 24
