"""What a test or benchmark removes when it ends (`tests/support/leftovers.py`): a Ray session
it left, never one a live process still names (another test's Ray, started meanwhile)."""

from __future__ import annotations

import subprocess
import sys
import tempfile

from tests.support.leftovers import left_behind, remove_left_behind


def test_a_live_session_is_kept_and_a_dead_one_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = left_behind()
    dead = tmp_path / "ray" / "session_2026-11-29_07-00-00_000001_1"
    live = tmp_path / "ray" / "session_2026-11-29_07-00-01_000002_2"
    for session in (dead, live):
        (session / "sockets").mkdir(parents=True)
    workspace = tmp_path / "prefect-workspace-attempt-1"
    workspace.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", f"--session-dir={live}"]
    )
    try:
        remove_left_behind(before)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["ray"]
        assert sorted(p.name for p in (tmp_path / "ray").iterdir()) == [live.name]
    finally:
        holder.kill()
        holder.wait()
    remove_left_behind(before)
    assert list(tmp_path.iterdir()) == []
