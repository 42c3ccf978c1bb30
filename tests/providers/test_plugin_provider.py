"""A package in its own folder adds a benchmark and a provider by entry points; `evalfleet run`
uses both, against the simulator. A package's provider that takes evalfleet's own name is
left out with one warning line; a model of a provider that is not installed is refused in one
line naming the installed ones."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from evalfleet.simulator.process import start_simulator
from tests.support.helpers import result_table
from tests.support.plugin_benchmark import ROWS, with_plugins, write_dataset
from tests.support.plugin_provider import COUNT, PROVIDER, install_both

REPO = Path(__file__).resolve().parents[2]
CLASH = (
    "warning: package plugin-clash 0.1.0 declares the provider 'openai', which evalfleet's "
    "own already is: left out"
)


def evalfleet(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalfleet.cli.main", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow  # builds and installs a package, runs evalfleet in subprocesses
def test_a_plugin_provider_and_benchmark_run_from_the_command_line(
    ray_address, prefect_api_url, tmp_path
):
    site = install_both(tmp_path / "plugins")
    session = {**os.environ, "RAY_ADDRESS": ray_address, "PREFECT_API_URL": prefect_api_url}
    env = with_plugins(session, site)
    data = write_dataset(tmp_path / "count.jsonl")
    key = tmp_path / "answers.jsonl"
    wrote = evalfleet(
        env, "simulate", "--answers-for", str(data), "-b", COUNT, "--answers", str(key)
    )
    assert wrote.returncode == 0, wrote.stderr

    runs = tmp_path / "runs"
    model = f"{PROVIDER}/sim-0.5"
    with start_simulator(key, {"latency": {"ms": 1}}, tmp_path / "sim.jsonl") as sim:
        common = ("--dataset-path", str(data), "--store", str(runs), "--simulator-url", sim.url)
        done = evalfleet(env, "run", "-m", model, "-b", COUNT, "--run-id", "both", *common)
        assert done.returncode == 0, done.stderr[-3000:]
        assert CLASH in done.stderr.splitlines()
        unknown = evalfleet(env, "run", "-m", "nope/sim-0.5", "-b", COUNT, *common)
        plain = {k: v for k, v in session.items() if k != "PYTHONPATH"}
        missing = evalfleet(plain, "run", "-m", model, "-b", "rome", "--store", str(runs))

    assert unknown.returncode == 2
    assert unknown.stderr.splitlines()[-1] == (
        "error: unknown provider 'nope' in model 'nope/sim-0.5': use one of "
        f"openai, openai-compatible, anthropic, google, {PROVIDER}"
    )
    assert missing.returncode == 2
    assert missing.stderr == (
        f"error: unknown provider '{PROVIDER}' in model '{model}': use one of "
        "openai, openai-compatible, anthropic, google\n"
    )

    counts = {uid: str(word.count(letter)) for uid, word, letter, _ in ROWS}
    solved: dict[str, list[float]] = defaultdict(list)
    for path in (runs / "both" / "completions").rglob("*.json"):
        record = json.loads(path.read_text())
        assert record["model"] == model
        found = re.findall(r"Final Answer:\s*(\d+)", record["response"])
        solved[record["sample_id"]].append(float(found[-1:] == [counts[record["sample_id"]]]))
    assert sorted(solved) == sorted(counts) and {len(v) for v in solved.values()} == {1}
    summary = result_table(runs, "both", f"summary_{COUNT}.parquet")
    assert list(summary[["model", "benchmark", "scoring", "n"]].itertuples(index=False)) == [
        (model, COUNT, "exact", 5)
    ]
    everything = [v for values in solved.values() for v in values]
    assert summary.iloc[0]["accuracy"] == pytest.approx(sum(everything) / 5, abs=1e-12)
