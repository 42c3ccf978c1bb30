"""The folder a command's own services keep their files in: gone when the command ends, its
logs kept (the last ten failures) when it failed, swept by the next command when it was
killed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from evalfleet.stack import scratch
from evalfleet.stack.scratch import Scratch


def test_logs_are_kept_on_failure_and_only_the_last_ten(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALFLEET_HOME", str(tmp_path / "home"))
    logs = tmp_path / "home" / "logs"
    for i in range(12):
        (logs / f"20260101-0000{i:02d}-1").mkdir(parents=True)
    folder = Scratch()
    (folder.path / "prefect.log").write_text("prefect said this\n")
    (folder.path / "ray.log").write_bytes(b"x" * (scratch.MAX_FILE_BYTES + 10) + b"END")
    session = folder.path / "ray" / "session_latest" / "logs"
    session.mkdir(parents=True)
    (session / "raylet.out").write_text("raylet said this\n")
    kept = folder.keep_logs()
    folder.remove()
    assert not folder.path.exists()
    assert kept.parent == logs
    assert (kept / "prefect.log").read_text() == "prefect said this\n"
    assert (kept / "ray" / "raylet.out").read_text() == "raylet said this\n"
    tail = (kept / "ray.log").read_bytes()  # a big log is kept as its last part
    assert len(tail) == scratch.MAX_FILE_BYTES and tail.endswith(b"END")
    remaining = sorted(p.name for p in logs.iterdir())
    assert len(remaining) == scratch.KEEP and remaining[-1] == kept.name
    assert remaining[0] == "20260101-000003-1"  # the three oldest went


def test_a_killed_commands_folder_is_swept_and_a_live_ones_is_not(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                          capture_output=True, check=True)  # fmt: skip
    mine = Scratch()
    orphan = Scratch()
    (orphan.path / scratch.OWNER).write_text(dead.stdout.strip())
    foreign = Path(scratch.tempfile.gettempdir()) / f"{scratch.PREFIX}not-ours-{os.getpid()}"
    foreign.mkdir()
    try:
        Scratch().remove()  # what every command that starts services does first
        assert not orphan.path.exists()
        assert mine.path.exists() and foreign.exists()
    finally:
        mine.remove()
        foreign.rmdir()
