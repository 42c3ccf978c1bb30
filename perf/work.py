"""A perf script's work folder: made in the temp dir and removed when the script exits,
however it exits short of SIGKILL. `keep(path)` (or EVALFLEET_KEEP_WORK=1) keeps it and says
where, for a run worth looking into."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

_kept: set[Path] = set()


def work_folder(name: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=f"evalfleet-{name}-"))
    atexit.register(_remove, path)
    return path


def keep(path: Path) -> None:
    _kept.add(path)


def _remove(path: Path) -> None:
    if path in _kept or os.environ.get("EVALFLEET_KEEP_WORK"):
        print(f"work folder kept: {path}", file=sys.stderr)
        return
    shutil.rmtree(path, ignore_errors=True)
