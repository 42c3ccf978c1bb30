"""`evalfleet down`: stop the processes `evalfleet up` started, and no other.

What to stop comes from `stack.json`; if it is damaged or lost, from the pid file each
process got when it started (`evalfleet.stack.pidfiles`), checked against its start time either way.
Then what those processes started outside their groups (a pool worker's flow runs, each in a
session of its own) is stopped too: every process `up` starts carries the stack's mark in its
environment (`pidfiles.MEMBER`), and what it starts inherits the mark; one leading a group
is stopped with its group.
Then the state folder's logs are checked: a live process still writing to one was started by
`up` and not stopped (its pid file lost too, or it outlived its group); `down` names it with
the command that stops it and fails (exit 1) instead of saying all is well.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from evalfleet.stack import pidfiles, ray_cluster, runner_folder, runners
from evalfleet.stack.state import Daemon, load_checked, stack_dir, stop

SETTLE_S = 10.0  # what a stopped group takes to be gone from /proc
GRACE_S = 10.0  # what a flow run gets to end on SIGTERM before SIGKILL
RUNNERS = ("deployments (serve)", "Prefect worker")  # the daemons whose children run flows


@dataclass
class Stopped:
    """What `down` did: the lines to print, and whether the stack is fully down."""

    lines: list[str] = field(default_factory=list)
    complete: bool = True


def down(folder: str | None = None) -> Stopped:
    path = stack_dir(folder)
    stack, problem = load_checked(path)
    result = Stopped([f"evalfleet stack in {path}:"])
    if stack is not None:
        daemons, launcher = stack.daemons(), stack.launcher
        known = {(d.pid, d.started) for d in daemons}  # and any started but never recorded
        unrecorded = [d for d in pidfiles.recorded(path)[0] if (d.pid, d.started) not in known]
        daemons = pidfiles.in_stop_order([*daemons, *(d for d in unrecorded if d.alive())])
    else:
        daemons, unreadable = pidfiles.recorded(path)
        launcher = next((d for d in daemons if d.name == "launcher"), None)
        if problem:
            _set_aside(path)
            result.lines.append(
                f"  stack.json is damaged ({problem}; kept as stack.json.damaged): stopping "
                "what the pid files in pids/ record"
            )
        for name in unreadable:
            result.lines.append(f"  pid file pids/{name} cannot be read")
        if not daemons and not problem:
            stopped_any = _Members(path, result).stop()
            if not _still_running(path, result) and not stopped_any:
                return Stopped([f"no stack recorded in {path}: nothing to stop"])
            return result
        if not problem:
            result.lines.append("  no stack.json: stopping what the pid files in pids/ record")
    members = _Members(path, result)
    members.stop_flow_runs(daemons)  # while the Prefect server can still record how they end
    for daemon in daemons:  # what runs flows first, then Ray, then Prefect
        if stop(daemon):
            members.groups.add(daemon.pid)  # SIGKILLed with its group: none of it is left
            result.lines.append(f"  {daemon.name:<22} stopped (pid {daemon.pid})")
        else:
            result.lines.append(f"  {daemon.name:<22} was not running")
    members.stop()  # what they started out of their groups, and what started meanwhile
    _clean(path, daemons, launcher)
    _still_running(path, result)
    return result


class _Members:
    """The live processes carrying the stack's mark that no stopped group took with it (a pool
    worker's flow runs, each in a session of its own; a process whose pid file was lost):
    each stopped with its group when it leads one, SIGTERM then SIGKILL after GRACE_S. The mark
    names this state folder, so nothing else is stopped."""

    def __init__(self, path: Path, result: Stopped) -> None:
        self.path, self.result = path, result
        self.groups: set[int] = set()  # groups already stopped, with every process in them
        self.handled: set[int] = set()

    def left(self, stopped_too: bool = False) -> dict[int, str]:
        """The marked processes no stopped group holds, not yet stopped here (or also those
        stopped here: `stopped_too`)."""
        return {
            pid: command
            for pid, command in pidfiles.members(self.path).items()
            if (stopped_too and pid in self.handled)
            or (pid not in self.handled and pidfiles.group(pid) not in self.groups)
        }

    def stop_flow_runs(self, daemons: list[Daemon]) -> None:
        """The flow runs of the stack's runners (the serve process, the pool workers): their
        marked descendants outside their groups, stopped first. Stopped after the Prefect
        server, a flow run could not tell it how it ended, and the UI would show it Running."""
        runners = {d.pid for d in daemons if d.name.startswith(RUNNERS) and d.alive()}
        if not runners:
            return
        runs = {
            pid: command
            for pid, command in pidfiles.members(self.path).items()
            if pidfiles.group(pid) not in runners and pidfiles.lineage(pid) & runners
        }
        if runs:
            self._end(runs, "flow run stopped")

    def stop(self) -> bool:
        """Whether anything was found to stop."""
        for _ in range(3):  # again for what a stopped one started meanwhile
            left = self.left()
            if not left:
                break
            self._end(left)
        deadline = time.monotonic() + SETTLE_S
        while (alive := self.left(stopped_too=True)) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid, command in sorted(alive.items()):
            self.result.complete = False
            self.result.lines.append(f"  still running: pid {pid} ({command})")
        return bool(self.handled or alive)

    def _end(self, left: dict[int, str], said: str = "also stopped") -> None:
        leaders = {pid for pid in left if pidfiles.group(pid) == pid}
        for pid in left:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_S
        while (alive := left.keys() & pidfiles.members(self.path).keys()) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.2)
        for pid in alive:
            _signal(pid, signal.SIGKILL)
        for pid, command in sorted(left.items()):
            self.result.lines.append(f"  {said:<22} pid {pid} ({command})")
        self.handled |= left.keys()
        self.groups |= leaders


def _signal(pid: int, signum: int) -> None:
    """The process's whole group when it leads one (what `spawn` starts does), else itself."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if pidfiles.group(pid) == pid:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)


def _still_running(path: Path, result: Stopped) -> bool:
    """Name each live process still writing to a log here, with how to stop it."""
    deadline = time.monotonic() + SETTLE_S
    left = pidfiles.writing_logs(path)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = pidfiles.writing_logs(path)
    for process in left:
        result.lines.append(
            f"  still running: pid {process.pid} ({process.command}), writing to "
            f"{process.log}: stop it with `{process.stop_hint()}`"
        )
    if left:
        result.complete = False
        result.lines.append(
            "  the stack is not fully stopped: `up` started these but nothing `down` can trust "
            "records them; stop them as shown"
        )
    return bool(left)


def _clean(path: Path, daemons: list[Daemon], launcher: Daemon | None) -> None:
    if any(d.name == "Ray head" for d in daemons):
        ray_cluster.remove_sessions(path)
    socket = Path(launcher.address) if launcher and launcher.address else None
    (socket or runners.launcher_path(path)).unlink(missing_ok=True)
    runner_folder.remove_all(path)  # Prefect's runner storage, the flow runs' workspaces
    pidfiles.forget(path)
    (path / "stack.json").unlink(missing_ok=True)


def _set_aside(path: Path) -> None:
    (path / "stack.json").replace(path / "stack.json.damaged")
