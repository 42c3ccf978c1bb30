"""`--max-cost-usd`: a cap that caps, and no more.

- A run capped at half its estimated cost stops at the cap, less than a call's cost below
  it, ends "budget reached" (exit 3) saying what it spent and what is left to ask, and the
  cap its hint gives finishes it, without asking anything twice. The estimate is `evalfleet
  run --estimate`'s, measured from a small earlier run of the same model in the same store.
- A run whose whole cost is below its cap finishes (exit 0, every item answered): the demo's
  request with a cap a quarter above its cost, and with one ten times its cost. (The first
  refused reservation used to end the run: the a-priori estimate of the calls in flight
  passed a cap the run's real cost was far below.)
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from evalfleet.cli.main import build_parser as cli_parser
from evalfleet.cli.run import request_from_args
from evalfleet.engine.prepare.capping import round_up
from evalfleet.engine.prepare.estimate import estimate_run
from evalfleet.engine.prepare.resolve import resolve
from evalfleet.engine.store.heartbeat import liveness
from evalfleet.engine.store.manifest_types import Manifest
from evalfleet.simulator.process import start_simulator
from tests.support.cli_here import evalfleet_here

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

MODEL = "openai/sim-0.5"
ITEMS = (4 + 11) * 6
IN_FLIGHT = 4


def spent(runs: Path, run_id: str) -> tuple[float, int]:
    paths = list((runs / run_id / "completions").rglob("*.json"))
    return sum(json.loads(p.read_text())["cost_usd"] for p in paths), len(paths)


def run_command(args: list[str]) -> subprocess.CompletedProcess:
    """`evalfleet ARGS` in this process, on the session's Ray and Prefect server."""
    return evalfleet_here(*args)


def test_a_capped_run_stops_at_the_cap_and_its_hint_finishes_it(
    session_services, demo_dataset, answer_key, tmp_path
):

    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    with start_simulator(answer_key, {"latency": {"ms": 30}}, log) as sim:
        base = ["run", "-m", MODEL, "--dataset-path", demo_dataset, "--store", str(runs)]
        base += ["--simulator-url", sim.url, "--max-in-flight", str(IN_FLIGHT)]

        def run(*extra: str) -> subprocess.CompletedProcess:
            return run_command([*base, *extra])

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
        cost, stored = spent(runs, "capped")
        per_item = cost / stored
        assert 0 < stored < ITEMS
        assert cost <= cap  # never past the cap
        assert cap - cost < 2 * per_item  # stopped when the next call could not fit
        manifest = Manifest.from_bytes((runs / "capped" / "manifest.json").read_bytes())
        assert liveness(manifest) == "budget reached"
        # what was spent, what is left to ask and its expected cost, from the records just
        # stored; the hint's cap: 1.1 x (spent + expected), up to two significant digits
        left = estimate_run(resolve(request_from_args(cli_parser().parse_args(capped))))
        left_usd = sum(r["cost_usd"] for r in left)
        assert sum(r["to_request"] for r in left) == ITEMS - stored
        said = [line for line in first.stderr.splitlines() if line.startswith("budget reached")]
        assert said == [
            f"budget reached: spent ${cost:.4f} of the ${cap:.4f} cap; {ITEMS - stored} requests "
            f"left to ask, expected ${left_usd:.4f} more"
        ]
        finish = round_up((cost + left_usd) * 1.1)
        assert finish > cap
        hint = [line for line in first.stderr.splitlines() if line.startswith("to finish")]
        command = [*base, "--run-id", "capped", "--max-cost-usd", f"{finish:g}"]
        assert hint == [
            f"to finish, rerun with --max-cost-usd {finish:g}: evalfleet {' '.join(command)}"
        ]

        second = run_command(command)  # the hint's command, as given
        assert second.returncode == 0, second.stderr
        assert spent(runs, "capped")[0] <= finish
        sim.flush_log()
    assert spent(runs, "capped")[1] == ITEMS
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    asked = Counter((e["prompt_sha256"], e["seed"]) for e in entries if e["status"] == 200)
    assert sum(asked.values()) == ITEMS + 2 * 6  # the capped run's items and the seed run's
    assert max(asked.values()) == 1  # nothing asked twice


def test_a_run_whose_cost_is_below_its_cap_finishes(
    session_services, demo_dataset, answer_key, tmp_path
):
    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    demo = 2 * ITEMS  # the demo's request: its two models on both ZeroBench splits
    with start_simulator(answer_key, {"latency": {"ms": 5}}, log) as sim:
        base = ["run", "-m", "openai/sim-0.3", "-m", "openai/sim-0.7"]
        base += ["--dataset-path", demo_dataset, "--store", str(runs), "--simulator-url", sim.url]
        uncapped = run_command([*base, "--run-id", "whole"])
        assert uncapped.returncode == 0, uncapped.stderr
        whole, answered = spent(runs, "whole")
        assert answered == demo
        for run_id, cap in (("tight", whole * 1.25), ("tenfold", whole * 10)):
            capped = run_command([*base, "--run-id", run_id, "--max-cost-usd", f"{cap:.9f}"])
            assert capped.returncode == 0, capped.stderr
            assert "budget reached" not in capped.stderr
            # the same requests: the same answers at the same cost, every one of them
            assert spent(runs, run_id) == (pytest.approx(whole, abs=1e-9), demo)
            manifest = Manifest.from_bytes((runs / run_id / "manifest.json").read_bytes())
            assert liveness(manifest) == "finished"
