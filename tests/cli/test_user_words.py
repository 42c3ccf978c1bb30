"""Messages in the user's words (issue 29, item 8): a bad run id, option value or number is
named as the user typed it, in one line, exit 2, before anything is written or sent."""

from __future__ import annotations

import pytest

from cli.main import main

RULE = "a run id is 1-128 letters, digits, '.', '_' or '-', the first a letter or a digit"


@pytest.fixture
def store(tmp_path):
    """A store holding one file, to show that a refused command changes nothing."""
    runs = tmp_path / "runs"
    (runs / "kept").mkdir(parents=True)
    (runs / "manifest.json").write_text("{}")
    return runs


def files(root) -> dict:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("command", "run_id"),
    [
        (["aggregate", ".."], ".."),
        (["status", ".."], ".."),
        (["report", "../manifest.json"], "../manifest.json"),
        (["compare", "..", "kept"], ".."),
        (["compare", "kept", "../x@v-1:openai/sim-0.5"], "../x"),
        (["judge", "..", "--judge", "openai/sim-0.5"], ".."),
        (["status", "leaderboard"], None),
        (["datbench", "delta", "kept", "a b"], "a b"),
        (["run", "-m", "openai/sim-0.5", "--run-id", ".x"], ".x"),
    ],
)
def test_a_bad_run_id_is_named_as_a_run_id(command, run_id, store, capsys):
    before = files(store)
    assert main([*command, "--store", str(store)]) == 2
    err = capsys.readouterr().err
    if run_id is None:
        expected = "run id 'leaderboard' is not valid: it is where the store keeps the leaderboard"
    else:
        expected = f"run id {run_id!r} is not valid: {RULE}"
    assert err == f"error: {expected}\n"
    assert files(store) == before


def test_demo_checks_its_run_id_before_it_writes_the_dataset(tmp_path, capsys, monkeypatch):
    from cli.demo import run_demo
    from core.types import ConfigError

    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--run-id", "../x", "--store", str(tmp_path / "runs")]) == 2
    assert capsys.readouterr().err == f"error: run id '../x' is not valid: {RULE}\n"
    with pytest.raises(ConfigError, match="run id 'a/b' is not valid"):
        run_demo(run_id="a/b", workdir=str(tmp_path / "demo-data"))
    assert list(tmp_path.iterdir()) == []
