"""A run on a two-node Ray cluster goes on when the worker node dies mid-run.

The cluster is real (`ray.cluster_utils.Cluster`: a head and a second node, each its own
raylet and worker processes); the run is `evalfleet run` in a child process joined to it
through RAY_ADDRESS, its two worker actors on the one node with CPUs (the head hosts none).
A second node joins mid-run, then the first is removed: both workers die with their calls in
flight, which are sent again to replacements on the new node, each first looking for a record
the lost worker may have stored. The run completes, every item has its one record, and
nothing is requested twice beyond the calls the kill cut off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from evalfleet.simulator.process import start_simulator
from evalfleet.tasks.ray_setup import RAY_SYSTEM_CONFIG

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack


REPO = Path(__file__).resolve().parents[2]
ITEMS = (4 + 11) * 6  # the demo's questions and subquestions, six epochs
WRITE_S = 2.0


@pytest.fixture
def cluster():
    """A head that hosts no worker (no CPU, as KubeRay advises) and one worker node."""
    from ray.cluster_utils import Cluster

    fast_death = {"health_check_period_ms": 500, "health_check_failure_threshold": 4}
    cluster = Cluster(
        initialize_head=True,
        connect=False,
        head_node_args={
            "num_cpus": 0,
            "include_dashboard": False,
            "_system_config": {**fast_death, **RAY_SYSTEM_CONFIG},  # as evalfleet's heads
        },
    )
    first = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        yield cluster, first
    finally:
        cluster.shutdown()


def records(runs: Path) -> list[Path]:
    root = runs / "lost" / "completions"
    return sorted(root.rglob("*.json")) if root.exists() else []


def test_a_run_completes_when_its_worker_node_dies(
    cluster, prefect_api_url, demo_dataset, answer_key, tmp_path
):
    cluster, first_node = cluster
    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    env = {**os.environ, "RAY_ADDRESS": cluster.address, "PREFECT_API_URL": prefect_api_url}
    with start_simulator(answer_key, {"latency": {"ms": 400}}, log) as sim:
        command = [sys.executable, "-m", "evalfleet.cli.main", "run", "-m", "openai/sim-0.5"]
        command += ["--dataset-path", demo_dataset, "--run-id", "lost", "--store", str(runs)]
        command += ["--simulator-url", sim.url, "--workers", "2", "--max-in-flight", "8"]
        run = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        deadline = time.monotonic() + 240

        def until_records(count: int) -> None:
            while len(records(runs)) < count:
                assert run.poll() is None, run.stdout.read()
                assert time.monotonic() < deadline
                time.sleep(0.05)

        until_records(10)  # both workers are on the first node: the only one with CPUs
        cluster.add_node(num_cpus=1)  # where their replacements will go
        cluster.wait_for_nodes()
        until_records(20)
        cluster.remove_node(first_node)
        killed_at = time.time()
        output, _ = run.communicate(timeout=300)
        sim.flush_log()
    assert run.returncode == 0, output
    assert "a worker was lost (" in output and "starting a replacement" in output
    assert len(records(runs)) == ITEMS

    # Each request answered once, except those in flight at the kill (at most 8): sent before
    # it, and not yet checkpointed (the worker may still have been reading the answer or
    # writing its record: up to WRITE_S after the answer left the simulator, on a loaded
    # machine).
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    answered = Counter((e["prompt_sha256"], e["seed"]) for e in entries if e["status"] == 200)
    assert len(answered) == ITEMS
    cut_off = {
        (e["prompt_sha256"], e["seed"])
        for e in entries
        if e["t"] <= killed_at <= e["t"] + e["latency_ms"] / 1000 + WRITE_S
    }
    repeated = {k: n for k, n in answered.items() if n > 1}
    assert set(repeated) <= cut_off and all(n == 2 for n in repeated.values())
    assert len(repeated) <= 8
