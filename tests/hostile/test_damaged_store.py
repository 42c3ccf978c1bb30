"""A damaged store file is named, isolated and repaired, never a traceback: each of the five
files a run's readers trust (results/latest.json, samples.parquet, the results version
latest.json names, a plan, the manifest), truncated, emptied, replaced by garbage or deleted,
under each command that reads it (`tests/support/hostile.py`)."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.support.hostile import (
    BASE_RUN,
    damaged_store_cases,
    run_case,
)

pytestmark = pytest.mark.slow  # starts Ray and a Prefect server

CASES = damaged_store_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_damaged_file_is_named_with_its_repair(
    case, hostile_store, session_services, tmp_path, demo_dataset
):
    base, sim, sim_log = hostile_store
    outcome = run_case(case, base, tmp_path, sim, sim_log, demo_dataset)
    assert outcome.problems() == [], (outcome.out[-2000:], outcome.err[-2000:])
    if outcome.code == 2:
        lines = [line for line in outcome.err.splitlines() if line.startswith("error: ")]
        assert len(lines) == 1, outcome.err
        line = lines[0]
        # which file, and the command that repairs it (or that nothing can)
        assert re.search(rf"{BASE_RUN}/(manifest\.json|plan/|results/)", line), line
        assert "evalfleet aggregate" in line or "evalfleet run" in line or "restore" in line


def test_aggregate_rebuilds_a_truncated_samples_table(hostile_store, session_services, tmp_path):
    """The repair the message names works: the leaderboard renders the run again."""
    from evalfleet.cli.main import main
    from tests.support.hostile import damage_of, store_file

    base, _, _ = hostile_store
    store = tmp_path / "runs"
    shutil.copytree(base, store)
    samples = store_file(store, "samples.parquet")
    whole = samples.read_bytes()
    damage_of("samples.parquet", "truncated")(store)
    assert main(["aggregate", BASE_RUN, "--store", str(store)]) == 0
    assert samples.read_bytes() == whole  # the same records scored again: the same table
    assert main(["leaderboard", "--store", str(store)]) == 0
    page = (store / "leaderboard" / "leaderboard.md").read_text()
    assert "Runs left out, and why" not in page


def test_run_with_the_same_id_rebuilds_a_truncated_plan(
    hostile_store, session_services, tmp_path, demo_dataset
):
    from evalfleet.cli.main import main
    from tests.support.hostile import MODELS, damage_of, store_file

    base, sim, _ = hostile_store
    store = tmp_path / "runs"
    shutil.copytree(base, store)
    plan = store_file(store, "plan")
    whole = plan.read_bytes()
    damage_of("plan", "truncated")(store)
    argv = ["run", "-m", MODELS[0], "-m", MODELS[1], "-b", "zerobench", "--epochs", "1"]
    argv += ["--dataset-path", demo_dataset, "--run-id", BASE_RUN, "--store", str(store)]
    assert main([*argv, "--simulator-url", sim.url]) == 0
    assert plan.read_bytes() == whole
    assert main(["status", BASE_RUN, "--store", str(store)]) == 0
