"""The estimate holds the bill: the demo's request (its two simulated models on both ZeroBench
splits), estimated in an empty store (`evalfleet run --estimate`: no answer measured yet),
then run against the simulator, online and in batch mode. The real cost lies between the
estimate's low and high figures, the expected figure is within 10 % of it, and batch mode
halves both the estimate and the bill (`perf/estimate_error.py` prints the same figures)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalfleet.cli.main import build_parser
from evalfleet.cli.run import request_from_args
from evalfleet.engine.prepare.estimate import estimate_run
from evalfleet.engine.prepare.resolve import resolve
from evalfleet.simulator.process import start_simulator

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

REPO = Path(__file__).resolve().parents[2]
MODELS = ["openai/sim-0.3", "openai/sim-0.7"]  # the demo's


def real_cost(run: Path) -> float:
    return sum(json.loads(p.read_text())["cost_usd"] for p in run.glob("completions/**/*.json"))


def test_the_cold_estimate_holds_the_real_cost_online_and_in_batch(
    ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):
    env = {**os.environ, "RAY_ADDRESS": ray_address, "PREFECT_API_URL": prefect_api_url}
    figures = {}
    with start_simulator(answer_key, {"latency": {"ms": 5}}, tmp_path / "sim.jsonl") as sim:
        for mode, extra in (("online", []), ("batch", ["--batch", "--batch-poll-s", "0.2"])):
            args = ["run", *(x for m in MODELS for x in ("-m", m)), "--dataset-path", demo_dataset]
            args += ["--store", str(tmp_path / mode), "--simulator-url", sim.url, "--run-id", mode]
            args += extra
            rows = estimate_run(resolve(request_from_args(build_parser().parse_args(args))))
            assert {r["output_source"] for r in rows} == {"typical"}  # nothing measured
            assert {r["batch"] for r in rows} == {"yes" if extra else "no"}
            low, expected, high = (
                sum(r[f] for r in rows) for f in ("low_cost_usd", "cost_usd", "high_cost_usd")
            )
            command = [sys.executable, "-m", "evalfleet.cli.main", *args]
            done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            real = real_cost(tmp_path / mode / mode)
            assert low <= real <= high
            assert abs(expected - real) <= 0.1 * real
            figures[mode] = (expected, real)
    assert figures["batch"][0] == pytest.approx(figures["online"][0] / 2, abs=2e-6)
    assert figures["batch"][1] == pytest.approx(figures["online"][1] / 2, abs=1e-9)
