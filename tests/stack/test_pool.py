"""The team's topology on one machine: `evalfleet up --pool` applies deployments/prefect.yaml
to a process work pool and starts two `prefect worker` processes; runs started through the
API as the UI starts them are picked up by a worker; a worker lost with its flow run (its
machine gone: the worker and the flow-run process SIGKILLed) is marked Crashed by the crash
automation, and a retry resumes the run on the other worker with nothing asked twice.

The crash automation's window is 40 s here (EVALFLEET_CRASH_AFTER_S; 90 s by default): flow
runs beat every 30 s, Prefect's minimum, so a shorter window would mark healthy runs.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from evalfleet.simulator.process import start_simulator
from evalfleet.stack.services import free_port
from evalfleet.stack.up import DEPLOYMENT_NAMES
from tests.support.helpers import results_dir, wait_for_no_processes
from tests.support.stack import Stack, kill_tree, stack_env, worker_of, worker_running

pytestmark = pytest.mark.slow  # a Prefect server, a work pool, two workers and a Ray head

CRASH_AFTER_S = 40
LATENCY_MS = 400
WRITE_S = 5.0  # after its answer, an item's record may still be being written


@pytest.fixture(scope="module")
def pool(tmp_path_factory, answer_key):
    root = tmp_path_factory.mktemp("pool")
    tag = f"pool-{os.getpid()}-{time.monotonic_ns()}"
    env = stack_env(root, tag, EVALFLEET_CRASH_AFTER_S=str(CRASH_AFTER_S))
    port = free_port()
    sim_log = root / "sim.jsonl"
    latency = {"ms": LATENCY_MS, "distribution": "uniform", "jitter_ms": 100}
    with start_simulator(answer_key, {"latency": latency}, sim_log) as sim:
        found = Stack(env, tag, f"http://127.0.0.1:{port}", root / "runs", sim.url, sim_log, root)
        up = found.cli(
            "up", "--pool", "--workers", "2", "--ray", "--port", str(port), "--store",
            str(found.store),
        )  # fmt: skip
        assert up.returncode == 0, up.stdout + up.stderr
        assert "pool workers   2" in up.stdout
        found.sim = sim
        yield found
        down = found.cli("down")
        assert down.returncode == 0, down.stdout + down.stderr
        assert wait_for_no_processes(tag, timeout_s=30) == []


def worker_logs(stack: Stack) -> list[Path]:
    return sorted((stack.root / "state").glob("worker-*.log"))


def request(stack: Stack, dataset: str, run_id: str, **extra) -> dict:
    return {
        "models": ["openai/sim-0.7", "anthropic/sim-0.5"],
        "benchmarks": ["zerobench"],
        "dataset_path": dataset,
        "run_id": run_id,
        "store": str(stack.store),
        "simulator_url": stack.sim_url,
        **extra,
    }


def test_the_work_pool_runs_what_the_ui_starts(pool, demo_dataset):
    deployments = pool.call("/deployments/filter", {})
    assert {d["work_pool_name"] for d in deployments} == {"evalfleet"}
    assert len(deployments) == len(DEPLOYMENT_NAMES) == 8
    nightly = pool.deployment("reevaluate/reevaluate")
    assert [s["schedule"]["cron"] for s in nightly["schedules"]] == ["0 3 * * *"]

    flow_run = pool.start_run(
        "evaluate-and-aggregate/evaluate", request(pool, demo_dataset, "by-a-worker", epochs=1)
    )
    done = pool.wait(flow_run, timeout=240)
    assert done["state"]["name"] == "Completed", done["state"]
    assert done["work_pool_name"] == "evalfleet"
    took = worker_of(worker_logs(pool), flow_run)
    assert took in {"evalfleet-worker-1", "evalfleet-worker-2"}
    # the run (16 answers: one worker) borrowed a warm worker of the stack (`up --ray`)
    log = pool.root / "state" / f"worker-{took.rsplit('-', 1)[1]}.log"
    assert "1 warm worker(s) of the cluster serve this run" in log.read_text(errors="replace")
    summary = pd.read_csv(results_dir(pool.store, "by-a-worker") / "summary_zerobench.csv")
    assert sorted(summary.model.unique()) == ["anthropic/sim-0.5", "openai/sim-0.7"]
    assert set(summary.n_questions) == {4}  # the demo's ZeroBench main split


def test_a_lost_worker_is_marked_crashed_and_its_run_resumes_on_the_other(pool, demo_dataset):
    run_id = "worker-lost"
    started = time.time()
    flow_run = pool.start_run(
        "evaluate-and-aggregate/evaluate",
        request(pool, demo_dataset, run_id, epochs=6, protocol="sampled-k", max_in_flight=2),
    )
    records = pool.store / run_id / "completions"

    def stored() -> int:
        return sum(1 for _ in records.rglob("*.json")) if records.exists() else 0

    deadline = time.monotonic() + 180
    while stored() < 12:  # of 48 answers (4 questions, 6 epochs, 2 models), 2 at a time
        assert time.monotonic() < deadline, "the run did not start storing records"
        time.sleep(0.2)
    recorded = json.loads((pool.root / "state" / "stack.json").read_text())
    pids = {w["address"]: w["pid"] for w in recorded["workers"]}
    name = worker_running(pids, flow_run)
    assert name == worker_of(worker_logs(pool), flow_run), "the logs name another worker"
    killed_at = time.time()
    kill_tree(pids[name])  # the worker and the flow run it started: its machine is gone
    at_kill = stored()

    crashed = pool.wait(flow_run, timeout=CRASH_AFTER_S + 60)
    marked_s = time.time() - killed_at
    assert crashed["state"]["name"] == "Crashed", crashed["state"]
    # the last beat came at most 30 s before the kill; the automation looks every 5 s
    assert marked_s <= CRASH_AFTER_S + 15, marked_s
    assert at_kill < 48, "the run ended before its worker was lost: nothing was tested"

    pool.retry(flow_run)
    done = pool.wait(flow_run, timeout=240)
    assert done["state"]["name"] == "Completed", done["state"]
    (other,) = {"evalfleet-worker-1", "evalfleet-worker-2"} - {name}
    other_log = pool.root / "state" / f"worker-{other.rsplit('-', 1)[1]}.log"
    assert worker_of([other_log], flow_run) == other, "the other worker did not resume it"
    assert stored() == 48

    pool.sim.flush_log()
    entries = [json.loads(x) for x in pool.sim_log.read_text().splitlines()]
    answers = [e for e in entries if e["status"] == 200 and e["t"] >= started]
    asked = Counter((e["model"], e["prompt_sha256"], e["seed"]) for e in answers)
    repeated = {
        key: count
        for key, count in asked.items()
        if count > 1
        and not any(
            e["t"] <= killed_at <= e["t"] + e["latency_ms"] / 1000 + WRITE_S
            for e in answers
            if (e["model"], e["prompt_sha256"], e["seed"]) == key
        )
    }
    assert repeated == {}


def test_down_with_a_run_in_flight_leaves_its_flow_run_ended_not_running(pool, demo_dataset):
    """`down` stops a pool worker's flow run (SIGTERM: the run stops as on Ctrl-C) before the
    Prefect server, which records how it ended; stopped after it (as before), the UI showed
    the flow run Running. Last in this module: the stack is down after it (the fixture's own
    `down` finds nothing)."""
    run_id = "down-in-flight"
    flow_run = pool.start_run(
        "evaluate-and-aggregate/evaluate",
        request(pool, demo_dataset, run_id, epochs=6, protocol="sampled-k", max_in_flight=2),
    )
    records = pool.store / run_id / "completions"
    deadline = time.monotonic() + 180
    while not records.exists() or sum(1 for _ in records.rglob("*.json")) < 4:
        assert time.monotonic() < deadline, "the run did not start storing records"
        time.sleep(0.2)

    down = pool.cli("down")

    assert down.returncode == 0, down.stdout + down.stderr
    stopped = [line.split() for line in down.stdout.splitlines()]
    assert ["flow", "run", "stopped"] in [w[:3] for w in stopped], down.stdout
    with sqlite3.connect(pool.root / "state" / "prefect.db") as db:
        (state,) = db.execute(
            "SELECT state_type, state_name FROM flow_run WHERE id = ?", (flow_run,)
        ).fetchall()
    assert state == ("CANCELLED", "Cancelled")  # stopped on request: a resume finishes it
