"""Where evalfleet keeps what outlives one command, and how a recorded process is told apart
from a later one with the same pid. Standard library only: the `evalfleet` executable reads
these before it decides where a command runs (`evalfleet.cli.launcher_client`)."""

from __future__ import annotations

from pathlib import Path

from evalfleet.core.settings import HOME, STACK


def evalfleet_home() -> Path:
    """$EVALFLEET_HOME, else ~/.evalfleet (not made here)."""
    return Path(HOME.get()).expanduser()


def stack_folder(folder: str | None = None) -> Path:
    """The stack's state folder: --state-dir, else $EVALFLEET_STACK, else
    $EVALFLEET_HOME/stack (not made here)."""
    folder = folder or STACK.get()
    return Path(folder).expanduser() if folder else evalfleet_home() / "stack"


def process_start_ticks(pid: int) -> int | None:
    """When the process started, in clock ticks since boot (/proc/<pid>/stat field 22); None
    if it is gone (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])
