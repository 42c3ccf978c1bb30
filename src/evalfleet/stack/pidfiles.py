"""The stack's processes found without `stack.json`: a pid file per process, and the processes
whose output goes to a log of the state folder.

`spawn` writes `pids/<log name>.json` (pid, start time, name, log) the moment a process
starts, before `stack.json` records it, so a damaged or lost `stack.json` still leaves `down`
each process with its start time (a pid since reused by another program is told apart as
`stack.json`'s entries are). What even those miss is found by what `up` gave every process it
started: its output, sent to `<name>.log` in the state folder. `down` names such a process
and the command that stops it rather than guess.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from evalfleet.core.places import process_start_ticks

FOLDER = "pids"
# Set on every process `up` starts (the state folder, resolved); what they start inherits it.
MEMBER = "EVALFLEET_STACK_MEMBER"
# The order `down` stops them in: what runs flows first, then Ray, Prefect last.
ORDER = ("launcher", "deployments", "Prefect worker", "Ray node", "Ray head", "Prefect server")


@dataclass
class Daemon:
    name: str
    pid: int
    started: int  # the process's start time in clock ticks (/proc/<pid>/stat field 22)
    log: str
    address: str = ""

    def alive(self) -> bool:
        """Still the process `up` started (not a later one that got the same pid)."""
        return process_start_ticks(self.pid) == self.started


def write(daemon: Daemon) -> None:
    """Record a process the moment it is started (0600, like `stack.json`)."""
    folder = Path(daemon.log).parent / FOLDER
    folder.mkdir(exist_ok=True)
    path = folder / f"{Path(daemon.log).stem}.json"
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(asdict(daemon), out)
    tmp.replace(path)


def recorded(folder: Path) -> tuple[list[Daemon], list[str]]:
    """The processes the pid files record, in the order to stop them, and the pid files that
    could not be read."""
    daemons, unreadable = [], []
    for path in sorted((folder / FOLDER).glob("*.json")):
        try:
            daemons.append(Daemon(**json.loads(path.read_text())))
        except (OSError, ValueError, TypeError):
            unreadable.append(path.name)
    return in_stop_order(daemons), unreadable


def in_stop_order(daemons: list[Daemon]) -> list[Daemon]:
    """What runs flows first, then Ray, Prefect last (as `Stack.daemons`)."""
    return sorted(daemons, key=_rank)


def alive(folder: Path) -> list[Daemon]:
    """The recorded processes still running; the pid files of the others are removed."""
    daemons, _ = recorded(folder)
    for daemon in daemons:
        if not daemon.alive():
            (folder / FOLDER / f"{Path(daemon.log).stem}.json").unlink(missing_ok=True)
    return [d for d in daemons if d.alive()]


def forget(folder: Path) -> None:
    """Remove the pid files (once what they record is stopped)."""
    for path in (folder / FOLDER).glob("*"):
        path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        (folder / FOLDER).rmdir()


@dataclass(frozen=True)
class Running:
    """A live process whose output goes to a log of the state folder."""

    pid: int
    group: int
    log: str
    command: str

    def stop_hint(self) -> str:
        if self.group == self.pid:
            return f"kill -TERM -- -{self.pid}"  # the group: what it started goes with it
        return f"kill -TERM {self.pid}"


def writing_logs(folder: Path) -> list[Running]:
    """Live processes (this one aside) whose standard output is a `.log` file of `folder`:
    only processes `up` started (and their children) write there."""
    found = []
    folder = folder.resolve()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        pid = int(entry.name)
        try:
            out = Path(os.readlink(entry / "fd" / "1"))
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            group = os.getpgid(pid)
        except OSError:
            continue
        if out.parent != folder or out.suffix != ".log" or process_start_ticks(pid) is None:
            continue
        found.append(Running(pid, group, str(out), " ".join(command.split())[:120]))
    return found


def _rank(daemon: Daemon) -> int:
    return next((i for i, start in enumerate(ORDER) if daemon.name.startswith(start)), 0)


def members(folder: Path) -> dict[int, str]:
    """Live processes carrying this stack's MEMBER mark (pid: command line), this process and
    its parents aside: what `up` started and all they started, flow runs included. Prefect's
    process worker starts each flow run in a session of its own, out of reach of the worker's
    group, so stopping the workers leaves a flow run going; this finds it."""
    mark = f"{MEMBER}={folder.resolve()}".encode()
    spared = _self_and_parents()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in spared:
            continue
        try:
            if mark not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if process_start_ticks(int(entry.name)) is not None:  # a zombie counts as gone
            found[int(entry.name)] = " ".join(command.split())[:120]
    return found


def group(pid: int) -> int | None:
    """The process group of `pid`, None once it is gone."""
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _self_and_parents() -> set[int]:
    return lineage(os.getpid())


def lineage(pid: int) -> set[int]:
    """`pid` and its parents, up to init (fewer if one is gone meanwhile)."""
    pids: set[int] = set()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids
