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


def remove_left_behind(before: set[Path], live: str | None = None) -> None:
    """Remove what appeared since `before` was taken (a folder inside one removed already: no
    error), except a Ray session a live process still names: under `make test` another test's
    Ray may have started its session in the same temporary directory meanwhile, and removing
    its sockets kills that Ray ("Failed to connect to socket .../sockets/raylet")."""
    if live is None:
        live = named_by_live_processes()
    for path in sorted(left_behind() - before, key=lambda p: len(p.parts), reverse=True):
        if not path.is_dir() or path.is_symlink() or _in_use(path, live):
            continue
        shutil.rmtree(path, ignore_errors=True)


def named_by_live_processes() -> str:
    """Every live process's command line, joined (Ray's processes name their session folder)."""
    lines = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            lines.append(cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
    return "\n".join(lines)


def _in_use(path: Path, live: str) -> bool:
    """A Ray session folder (or the `ray` folder holding one) that a live process names."""
    if path.name == "ray":
        return any(_in_use(session, live) for session in path.glob("session_*"))
    return path.name.startswith("session_") and str(path) in live


@contextlib.contextmanager
def removed_afterwards() -> Iterator[None]:
    before = left_behind()
    try:
        yield
    finally:
        remove_left_behind(before)
