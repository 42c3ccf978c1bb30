"""What Ray and Prefect leave in the temporary directory when a test or a benchmark kills them as
it means to (a worker node's Ray session, a flow run's workspace, a runner's storage), removed
when the session or the benchmark ends, where it was not there before it began."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

LEFT_BEHIND = ("ray", "ray/session_*", "runner_storage", "runner_storage/*")
LEFT_BEHIND += ("prefect-workspace-attempt-*", "tmp*prefect")


def left_behind() -> set[Path]:
    temp = Path(tempfile.gettempdir())
    return {path for pattern in LEFT_BEHIND for path in temp.glob(pattern)}


def remove_left_behind(before: set[Path]) -> None:
    """Remove what appeared since `before` was taken (a folder inside one removed already: no
    error)."""
    for path in left_behind() - before:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def removed_afterwards() -> Iterator[None]:
    before = left_behind()
    try:
        yield
    finally:
        remove_left_behind(before)
