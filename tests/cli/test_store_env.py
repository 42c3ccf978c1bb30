"""Every command finds the store the same way: --store, else $EVALFLEET_STORE (what `evalfleet
up --store` gives the deployments), else ./runs. A run without --store while the variable is
set writes where the UI's runs go, and the other commands read it from there."""

from __future__ import annotations

import json

import pytest

from evalfleet.cli.main import main
from evalfleet.simulator.process import start_simulator
from tests.support.helpers import results_dir

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack


def test_every_command_uses_evalfleet_store(
    monkeypatch, tmp_path, capsys, ray_address, prefect_api_url, answer_key, demo_dataset
):
    team = tmp_path / "team-store"
    monkeypatch.setenv("EVALFLEET_STORE", str(team))
    monkeypatch.setenv("RAY_ADDRESS", ray_address)
    monkeypatch.setenv("PREFECT_API_URL", prefect_api_url)
    monkeypatch.chdir(tmp_path)
    with start_simulator(answer_key, {"latency": {"ms": 1}}, tmp_path / "sim.jsonl") as sim:
        code = main(
            ["run", "-m", "openai/sim-0.5", "-b", "zerobench", "--limit", "3", "--epochs", "1"]
            + ["--dataset-path", demo_dataset, "--run-id", "env", "--simulator-url", sim.url]
        )
    assert code == 0, capsys.readouterr().err
    assert not (tmp_path / "runs").exists()  # nothing went to ./runs
    manifest = json.loads((team / "env" / "manifest.json").read_text())
    assert manifest["request"]["store"] == str(team)
    assert len(list((team / "env" / "completions").rglob("*.json"))) == 3 * 2
    capsys.readouterr()

    assert main(["runs"]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| env ")]
    assert len(listed) == 1 and "| 100.0% " in listed[0]

    assert main(["status", "env"]) == 0
    status = capsys.readouterr().out
    row = next(line for line in status.splitlines() if line.startswith("| answer "))
    assert row.split("|")[1:5] == [" answer  ", " openai/sim-0.5 ", " zerobench   ", "      6 "]

    versions_before = set(p.name for p in (team / "env" / "results").iterdir())
    assert main(["aggregate", "env"]) == 0
    assert f"results in {team}/env/results/" in capsys.readouterr().out
    assert results_dir(team, "env").name in versions_before  # same records, same version

    assert main(["leaderboard"]) == 0
    assert f"tables and plots in {team}/leaderboard/" in capsys.readouterr().out
    assert (team / "leaderboard" / "leaderboard.parquet").exists()
