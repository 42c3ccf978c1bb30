"""What a test or benchmark removes when it ends (`tests/support/leftovers.py`): a Ray session
it left, never one a live process still names (another test's Ray, started meanwhile)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tests.support.leftovers import left_behind, named_by_live_processes, remove_left_behind


def test_a_live_session_is_kept_and_a_dead_one_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = left_behind()
    dead = tmp_path / "ray" / "session_2026-11-29_07-00-00_000001_1"
    live = tmp_path / "ray" / "session_2026-11-29_07-00-01_000002_2"
    for session in (dead, live):
        (session / "sockets").mkdir(parents=True)
    (tmp_path / "prefect-workspace-attempt-1").mkdir()
    raylet = f"/usr/bin/raylet --raylet_socket_name={live}/sockets/raylet"

    remove_left_behind(before, live=raylet)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ray"]
    assert sorted(p.name for p in (tmp_path / "ray").iterdir()) == [live.name]

    remove_left_behind(before, live="")  # that raylet is gone
    assert list(tmp_path.iterdir()) == []


def test_the_live_command_lines_include_this_process():
    own = Path(f"/proc/{os.getpid()}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    assert own in named_by_live_processes()
