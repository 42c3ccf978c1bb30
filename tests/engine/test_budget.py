"""`--max-cost-usd`: a run capped at half its estimated cost stops near the cap, within one
in-flight window, ends "budget reached" (exit 3), and a rerun with a higher cap finishes it
without asking anything twice.

The estimate is `evalfleet run --estimate`'s, measured from a small earlier run of the same
model in the same store (the simulator's answers are short: the a-priori 1,000 output tokens
per answer would put half the estimate above the whole run's cost).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from cli.main import build_parser as cli_parser
from cli.run import request_from_args
from engine.estimate import estimate_run
from engine.heartbeat import liveness
from engine.resolve import resolve
from simulator.process import start_simulator

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

REPO = Path(__file__).resolve().parents[2]
MODEL = "openai/sim-0.5"
ITEMS = (4 + 11) * 6
IN_FLIGHT = 4


def spent(runs: Path, run_id: str) -> tuple[float, int]:
    paths = list((runs / run_id / "completions").rglob("*.json"))
    return sum(json.loads(p.read_text())["cost_usd"] for p in paths), len(paths)


def test_a_capped_run_stops_near_the_cap_and_resumes_with_a_higher_one(
    ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):

    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    env = {**os.environ, "RAY_ADDRESS": ray_address, "PREFECT_API_URL": prefect_api_url}
    with start_simulator(answer_key, {"latency": {"ms": 30}}, log) as sim:
        base = ["run", "-m", MODEL, "--dataset-path", demo_dataset, "--store", str(runs)]
        base += ["--simulator-url", sim.url, "--max-in-flight", str(IN_FLIGHT)]

        def run(*extra: str) -> subprocess.CompletedProcess:
            command = [sys.executable, "-m", "cli.main", *base, *extra]
            return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)

        # other seeds: none of its requests is one the capped run makes
        seed = run("--run-id", "seed", "-b", "zerobench", "--limit", "2", "--seed", "1000")
        assert seed.returncode == 0, seed.stderr
        capped = [*base, "--run-id", "capped"]
        rows = estimate_run(resolve(request_from_args(cli_parser().parse_args(capped))))
        assert {r["output_source"] for r in rows} == {"measured"}
        estimate = sum(r["cost_usd"] for r in rows)
        cap = estimate / 2

        first = run("--run-id", "capped", "--max-cost-usd", f"{cap:.9f}")
        assert first.returncode == 3, first.stderr
        assert "budget reached: spent " in first.stderr
        assert "to finish, rerun with a higher --max-cost-usd: evalfleet run" in first.stderr
        cost, stored = spent(runs, "capped")
        per_item = cost / stored
        assert 0 < stored < ITEMS
        assert cost <= cap  # never past the cap
        assert cap - cost <= IN_FLIGHT * per_item * 1.5  # stopped within one in-flight window
        manifest = json.loads((runs / "capped" / "manifest.json").read_text())
        assert liveness(manifest) == "budget reached"

        second = run("--run-id", "capped", "--max-cost-usd", f"{estimate * 2:.9f}")
        assert second.returncode == 0, second.stderr
        sim.flush_log()
    assert spent(runs, "capped")[1] == ITEMS
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    asked = Counter((e["prompt_sha256"], e["seed"]) for e in entries if e["status"] == 200)
    assert sum(asked.values()) == ITEMS + 2 * 6  # the capped run's items and the seed run's
    assert max(asked.values()) == 1  # nothing asked twice
