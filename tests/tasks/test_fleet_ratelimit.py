"""Two runs on one Ray cluster share one rate budget for the same model and key.

The simulator refuses more than 300 requests a minute for the model. The first run asks for
300 rpm, the second (started while the first is running) for 600: if the second replaced
the first's limit, the simulator would answer 429s. The stricter limit applies to both, the
second run's log says so, and no request is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalfleet.simulator.process import start_simulator

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

REPO = Path(__file__).resolve().parents[2]
MODEL = "openai/sim-0.5-fleet"
SIMULATOR = {
    "latency": {"ms": 50},
    "rules": [{"match": "sim-0.5-fleet", "requests_per_minute": 300}],
}


def run_command(sim_url: str, dataset: str, runs: Path, run_id: str, rpm: int, *benchmarks):
    args = ["run", "-m", MODEL, "--dataset-path", dataset, "--run-id", run_id]
    args += ["--store", str(runs), "--simulator-url", sim_url, "--rpm", f"{MODEL}={rpm}"]
    for name in benchmarks:
        args += ["-b", name]
    return [sys.executable, "-m", "evalfleet.cli.main", *args]


def stored(runs: Path, run_id: str) -> int:
    root = runs / run_id / "completions"
    return len(list(root.rglob("*.json"))) if root.exists() else 0


def test_two_runs_share_one_budget_and_the_stricter_limit_wins(
    ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):

    runs = tmp_path / "runs"
    log = tmp_path / "sim.jsonl"
    env = {**os.environ, "RAY_ADDRESS": ray_address, "PREFECT_API_URL": prefect_api_url}
    with start_simulator(answer_key, SIMULATOR, log) as sim:
        strict = run_command(sim.url, demo_dataset, runs, "strict", 300)  # 15 x 6 = 90 items
        loose = run_command(sim.url, demo_dataset, runs, "loose", 600, "zerobench")  # 24 items
        first = subprocess.Popen(
            strict, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        deadline = time.monotonic() + 180
        while stored(runs, "strict") < 5:
            assert first.poll() is None, first.stdout.read()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        second = subprocess.run(loose, cwd=REPO, env=env, capture_output=True, text=True)
        first_out, _ = first.communicate(timeout=240)
        sim.flush_log()
    assert first.returncode == 0, first_out
    assert second.returncode == 0, second.stdout + second.stderr
    assert (stored(runs, "strict"), stored(runs, "loose")) == (90, 24)
    assert (
        "openai/sim-0.5-fleet: another run on this cluster limits it to rpm=300 tpm=none "
        "(this run asked rpm=600 tpm=none): the stricter limits apply to both"
    ) in second.stderr
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    statuses = [e["status"] for e in entries if e.get("model") == "sim-0.5-fleet"]
    assert len(statuses) == 114 and set(statuses) == {200}  # not one 429
