"""A run's heartbeat in its manifest, so anyone reading the store can tell a running run from
one whose process died (SIGKILL, a lost node) without asking Prefect.

While a process works on a run, a daemon thread rewrites the manifest's `heartbeat` every
`interval_s` (EVALFLEET_HEARTBEAT_S, default 10): state "running", the time, the host, the pid
and, when a Prefect flow runs it, the flow run id. The end of the work writes its final state
("finished", "evaluated", "interrupted", "failed"). A "running" heartbeat older than
`crash_after(interval_s)` means the process is gone: the run is "crashed", and rerunning its
id (or retrying the flow run) resumes it from the store.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalfleet.core.settings import HEARTBEAT_S
from evalfleet.engine.run import control
from evalfleet.engine.store.manifest_types import Beat, Manifest
from evalfleet.storage import layout
from evalfleet.storage.base import Store

DEFAULT_INTERVAL_S = HEARTBEAT_S.default
# Prefect's own heartbeat of a flow run, beside the manifest's: every 30 s (Prefect's
# minimum) wherever a crash automation watches flow runs (the stack's runners, its deployments,
# a command attached to it). The automation's window must exceed it.
FLOW_RUN_BEAT_S = 30
_current: dict[str, Heartbeat] = {}
_lock = threading.Lock()


def interval_s() -> float:
    every: float = HEARTBEAT_S.get()
    return every


def crash_after(interval: float) -> float:
    """Three missed beats and some slack for a slow store."""
    return 3 * interval + 5.0


def _now() -> datetime:
    return datetime.now(UTC)


class Heartbeat:
    def __init__(self, store: Store, run_id: str, interval: float) -> None:
        self.store = store
        self.run_id = run_id
        self.interval = interval
        # to the microsecond: which command beat is told by it (`identity`), and two commands
        # of one process on a run within a second are told apart
        self.started_at = _now().isoformat()
        self.flow_run_id = control.current().run_label
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="run-heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        self.write("running")
        self._thread.start()
        return self

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            with contextlib.suppress(Exception):  # a store hiccup: the next beat tries again
                self.write("running")

    def write(self, state: str) -> None:
        key = layout.manifest_key(self.run_id)
        with _lock:
            blob = self.store.get(key)
            if blob is None:
                return
            beat = Beat(
                state=state,
                at=_now().isoformat(timespec="seconds"),
                interval_s=self.interval,
                started_at=self.started_at,
                host=socket.gethostname(),
                pid=os.getpid(),
                flow_run_id=self.flow_run_id,
            )
            manifest = replace(Manifest.from_bytes(blob, key), heartbeat=beat)
            self.store.put(key, manifest.to_bytes())

    def finish(self, state: str) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.interval + 5)
        self.write(state)


def start(store: Store, run_id: str) -> Heartbeat:
    """Start beating for a run this process works on (one heartbeat per run id)."""
    with _lock:
        previous = _current.pop(run_id, None)
    if previous is not None:
        previous._stop.set()
    beat = Heartbeat(store, run_id, interval_s()).start()
    with _lock:
        _current[run_id] = beat
    return beat


@contextlib.contextmanager
def beating(final: str) -> Iterator[None]:
    """A flow body: its runs' heartbeats end with `final`, "interrupted" if a stop was asked,
    or "failed" on an exception."""
    from evalfleet.engine.run.interrupts import STOP

    try:
        yield
    except BaseException:
        finish_all("interrupted" if STOP.requested() else "failed")
        raise
    finish_all("interrupted" if STOP.requested() else final)


def finish_all(state: str) -> None:
    """Write the final state of every run this process beats for (none: a no-op)."""
    with _lock:
        beats = list(_current.values())
        _current.clear()
    for beat in beats:
        with contextlib.suppress(Exception):  # store gone: the beat goes stale ("crashed")
            beat.finish(state)


def liveness(manifest: Manifest, now: datetime | None = None) -> str:
    """ "running", "crashed", or the final state the flow wrote ("-" for runs without one).
    A beat from this host whose process is gone is "crashed" at once; from another host,
    once it is older than `crash_after`."""
    beat = manifest.heartbeat
    if beat is None:
        return "-"
    if beat.state != "running":
        return beat.state
    if beat.host == socket.gethostname() and not _pid_alive(beat.pid or 0):
        return "crashed"
    age = ((now or _now()) - beat.at_time).total_seconds()
    return "crashed" if age > crash_after(beat.interval_s or 10.0) else "running"


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (dead, not yet reaped) is gone too
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    except OSError:
        return True


IDENTITY = ("started_at", "host", "pid")  # the fields of a heartbeat that tell its command


def identity(manifest: Manifest) -> list[Any] | None:
    """Which command's heartbeat the manifest holds: [started_at, host, pid] (a list, as JSON
    gives it back, kept in `counts.json`), None without one. A later command on the run has
    another."""
    beat = manifest.heartbeat
    if beat is None:
        return None
    return [getattr(beat, field) for field in IDENTITY]


def held_elsewhere(manifest: Manifest) -> str | None:
    """Why another live process is working on this run, or None."""
    beat = manifest.heartbeat
    if beat is None or liveness(manifest) != "running":
        return None
    if beat.host == socket.gethostname() and beat.pid == os.getpid():
        return None
    age = seconds_since(manifest) or 0.0
    return f"pid {beat.pid} on {beat.host} is working on it (heartbeat {age:.0f} s ago)"


def seconds_since(manifest: Manifest, now: datetime | None = None) -> float | None:
    beat = manifest.heartbeat
    if beat is None:
        return None
    return ((now or _now()) - beat.at_time).total_seconds()
