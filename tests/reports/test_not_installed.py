"""A stored run whose benchmark is not installed here (a plugin package uninstalled since) is
never dropped in silence: the leaderboard and `runs` list it with one line naming the
benchmark and the fix, and `status`, `report` and `aggregate` of it say that line (exit 2)
without a traceback and without changing the store.

The run: the stored ZeroBench demo run (`tests/data/stored_runs`), aggregated, then its
manifest edited so that its second benchmark is 'parity', which no installed package has."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from evalfleet.cli.main import main
from evalfleet.engine.scoring.aggregate import aggregate_run
from evalfleet.reports.board_cache import RunEntry, installed_rows
from evalfleet.storage import open_store

STORED = Path(__file__).resolve().parents[1] / "data" / "stored_runs" / "store"
RUN = "stored-zerobench"
LINE = (
    f"run {RUN} needs benchmark 'parity', not installed: install its package "
    "(see docs/extending.md)"
)


def rename_benchmark(run: Path, old: str, new: str) -> None:
    path = run / "manifest.json"
    manifest = json.loads(path.read_text())
    for names in (manifest["datasets"], manifest["identity"]["benchmarks"]):
        names[new] = names.pop(old)
    manifest["request"]["benchmarks"] = [
        new if b == old else b for b in manifest["request"]["benchmarks"]
    ]
    path.write_text(json.dumps(manifest, indent=2))
    (run / "plan" / f"{old}.parquet").rename(run / "plan" / f"{new}.parquet")


@pytest.fixture(scope="module")
def parity_store(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("not-installed") / "runs"
    shutil.copytree(STORED / RUN, runs / RUN)
    aggregate_run(open_store(str(runs)), RUN)
    rename_benchmark(runs / RUN, "zerobench_subquestions", "parity")
    return runs


@pytest.fixture
def store(parity_store, tmp_path) -> Path:
    copy = tmp_path / "runs"
    shutil.copytree(parity_store, copy)
    return copy


def digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("command", ["status", "report", "aggregate"])
def test_a_command_on_the_run_says_what_it_needs(store, capsys, command):
    before = digests(store)
    assert main([command, RUN, "--store", str(store)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: {LINE}\n"
    assert digests(store) == before


def test_the_leaderboard_lists_the_run_with_its_line(store, capsys):
    assert main(["leaderboard", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"- {LINE}" in out.splitlines()
    assert "## zerobench — upstream" in out  # its installed benchmark is still ranked
    latest = json.loads((store / "leaderboard" / "latest.json").read_text())
    assert latest["damaged"] == [LINE]
    assert latest["models"] == ["openai/sim-0.3", "openai/sim-0.7"]
    kept = json.loads((store / "leaderboard" / "rows.json").read_text())["runs"][RUN]
    assert kept["needs"] == [LINE]


def test_runs_lists_the_run_and_ends_with_its_line(store, capsys):
    assert main(["runs", "--store", str(store)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[2].startswith(f"| {RUN} | ")
    assert lines[-1] == LINE


def test_rows_kept_from_before_the_package_went_are_left_out_with_the_line():
    """The leaderboard's kept rows (rows.json) of a benchmark uninstalled since."""
    rows = [{"benchmark": "zerobench", "model": "m"}, {"benchmark": "parity", "model": "m"}]
    assert installed_rows(RUN, RunEntry(rows=rows)) == (rows[:1], [LINE])
    # read with the run: its line is there once
    assert installed_rows(RUN, RunEntry(rows=rows, needs=[LINE])) == (rows[:1], [LINE])
