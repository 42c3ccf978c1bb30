"""Where a command keeps the files of the services it starts for itself: a private folder of
the temporary directory (short, as Ray's socket paths must be), removed when the command
ends. After a failure their logs are kept under `~/.evalfleet/logs/` (`$EVALFLEET_HOME`), the
last `KEEP` failures only, and the command names the folder. A folder whose command was
killed (SIGKILL leaves no time to clean) is removed by the next command that starts one."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from evalfleet.core.places import evalfleet_home

PREFIX = "evalfleet-"
KEEP = 10  # failures whose logs are kept
MAX_FILE_BYTES = 5 * 2**20  # a log bigger than this is kept as its last part
OWNER = "owner.pid"


def logs_dir() -> Path:
    return evalfleet_home() / "logs"


class Scratch:
    """One command's folder (its pid recorded in it)."""

    def __init__(self) -> None:
        sweep_orphans()
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX))
        (self.path / OWNER).write_text(str(os.getpid()))

    def keep_logs(self) -> Path:
        """Copy the logs here (the services' own, and Ray's session logs) to a folder of
        `logs_dir()`; keep only the newest `KEEP` such folders. Returns the folder."""
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        kept = logs_dir() / f"{stamp}-{os.getpid()}"
        kept.mkdir(parents=True, exist_ok=True)
        for log in self.path.glob("*.log"):
            _copy_tail(log, kept / log.name)
        ray_logs = self.path / "ray" / "session_latest" / "logs"
        for log in sorted(ray_logs.glob("*")) if ray_logs.is_dir() else []:
            if log.is_file():
                _copy_tail(log, kept / "ray" / log.name)
        prune(logs_dir(), KEEP)
        return kept

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _copy_tail(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError), source.open("rb") as reader:
        size = source.stat().st_size
        reader.seek(max(0, size - MAX_FILE_BYTES))
        target.write_bytes(reader.read())


def prune(folder: Path, keep: int) -> None:
    """Remove all but the newest `keep` subfolders."""
    kept = sorted((p for p in folder.iterdir() if p.is_dir()), key=lambda p: p.name)
    for old in kept[:-keep] if keep else kept:
        shutil.rmtree(old, ignore_errors=True)


def sweep_orphans() -> None:
    """Remove the folders of commands that are gone (killed before they could clean)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            pid = int((folder / OWNER).read_text())
        except (OSError, ValueError):
            continue  # not one of ours, or still being set up
        if not _alive(pid):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
