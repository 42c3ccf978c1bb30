"""A run keeps the judge panel it was asked for (`{run}/panel.json`): the same panel again
passes (in any order), another one or a damaged record is one line before any judge is asked,
and nothing stored changes (fast: no judge is called)."""

from __future__ import annotations

import pytest

from evalfleet.cli.main import main
from evalfleet.core.types import ConfigError
from evalfleet.engine.store.panel_record import (
    check_panel_record,
    panel_label,
    read_panel,
    record_panel,
)
from evalfleet.storage import open_store

A, B, C, D = "anthropic/sim-0.9", "openai/sim-0.8", "google/sim-0.7", "openai/sim-0.6"


def test_a_panel_is_recorded_once_and_named(tmp_path):
    store = open_store(str(tmp_path / "runs"))
    assert read_panel(store, "r") is None
    record_panel(store, "r", "majority", [A, B, C])
    record_panel(store, "r", "majority", [A, B, D])  # once: the first record stays
    panel = read_panel(store, "r")
    assert panel == {"rule": "majority", "members": [A, B, C]}
    assert panel_label(panel) == (
        "panel (majority of anthropic/sim-0.9, openai/sim-0.8, google/sim-0.7)"
    )
    check_panel_record(store, "r", "majority", [C, A, B])  # the same panel, another order
    check_panel_record(store, "other-run", "majority", [A, B, D])  # no record: nothing to hold


def test_a_different_panel_is_refused_in_one_line_before_any_judge(tmp_path, capsys):
    runs = tmp_path / "runs"
    record_panel(open_store(str(runs)), "r", "majority", [A, B, C])
    before = (runs / "r/panel.json").read_bytes()
    argv = ["judge", "r", "--judge", A, "--judge", B, "--judge", D, "--panel", "majority"]
    assert main([*argv, "--store", str(runs)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: run r has the panel majority of anthropic/sim-0.9, openai/sim-0.8, "
        "google/sim-0.7, not majority of anthropic/sim-0.9, openai/sim-0.8, openai/sim-0.6: "
        "judge with that panel again, or judge into another run"
    ]
    assert (runs / "r/panel.json").read_bytes() == before
    assert sorted(p.name for p in runs.rglob("*") if p.is_file()) == ["panel.json"]


@pytest.mark.parametrize(
    "content", [b"{not json", b'{"rule": "majority"}', b'{"rule": 1, "members": []}']
)
def test_a_damaged_panel_record_is_one_line(tmp_path, content):
    store = open_store(str(tmp_path / "runs"))
    store.put("r/panel.json", content)
    with pytest.raises(ConfigError) as caught:
        check_panel_record(store, "r", "majority", [A, B, C])
    assert str(caught.value) == (
        f"r/panel.json in {store.describe()} is damaged: restore it from a backup or delete "
        "it to record the panel again"
    )
