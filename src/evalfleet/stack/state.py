"""What `evalfleet up` started, and how a service of it is started, awaited and stopped.

`stack.json` (0600: it holds the Ray head's token) records each process with its start time
in clock ticks, so that `down` stops exactly what `up` started and never a later process that
got the same pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evalfleet.core.places import process_start_ticks, stack_folder
from evalfleet.stack import pidfiles
from evalfleet.stack.pidfiles import Daemon
from evalfleet.stack.services import ServiceError

REPO = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 180.0


@dataclass
class Stack:
    folder: str
    store: str
    prefect: Daemon | None = None
    serve: Daemon | None = None  # the deployments served by one process, or
    pool: str = ""  # the work pool whose workers run them (`up --pool`)
    workers: list[Daemon] = field(default_factory=list)  # `prefect worker start` processes
    ray: Daemon | None = None
    ray_nodes: list[Daemon] = field(default_factory=list)  # `ray start --address` processes
    launcher: Daemon | None = (
        None  # the warm launcher of `evalfleet` commands (`evalfleet.cli.launcher`)
    )
    ray_token: str = ""  # the Ray head's auth token (the state file is private: 0600)
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def api_url(self) -> str:
        return f"{self.prefect.address}/api" if self.prefect else ""

    def daemons(self) -> list[Daemon]:
        """In the order `down` stops them: what runs flows first, Prefect last."""
        first = [self.launcher, self.serve, *self.workers, *self.ray_nodes, self.ray]
        return [d for d in (*first, self.prefect) if d is not None]


def stack_dir(folder: str | None = None) -> Path:
    """The state folder (`evalfleet.core.places.stack_folder`), made if missing."""
    path = stack_folder(folder)
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


def load(folder: Path) -> Stack | None:
    """What `stack.json` records; None if it is missing or damaged (`load_checked` tells)."""
    return load_checked(folder)[0]


def load_checked(folder: Path) -> tuple[Stack | None, str | None]:
    """(the stack, None), (None, None) when there is no `stack.json`, or (None, what is wrong
    with it) when it cannot be read: then the pid files (`stack.pidfiles`) know the processes."""
    path = folder / "stack.json"
    try:
        return _from_raw(json.loads(path.read_text())), None
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        return None, f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:200]


def _from_raw(raw: dict[str, Any]) -> Stack:
    single = ("prefect", "serve", "ray", "launcher")
    daemons = {k: Daemon(**raw[k]) if raw.get(k) else None for k in single}
    lists = {k: [Daemon(**d) for d in raw.get(k) or []] for k in ("workers", "ray_nodes")}
    return Stack(
        folder=raw["folder"],
        store=raw["store"],
        pool=raw.get("pool", ""),
        ray_token=raw.get("ray_token", ""),
        extras=raw.get("extras", {}),
        **daemons,  # type: ignore[arg-type]  # prefect, serve, ray, launcher: Daemon | None
        **lists,  # type: ignore[arg-type]  # workers, ray_nodes: list[Daemon]
    )


def save(stack: Stack) -> None:
    path = Path(stack.folder) / "stack.json"
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(asdict(stack), out, indent=1)
    tmp.replace(path)


def spawn(name: str, command: list[str], env: dict[str, str], log: Path) -> Daemon:
    """Start `command` in a session of its own (detached from the terminal), its output
    appended to `log`."""
    env = {**env, pidfiles.MEMBER: str(log.parent.resolve())}
    with log.open("ab") as out:
        process = subprocess.Popen(
            command,
            env=env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    started = None
    for _ in range(100):
        started = process_start_ticks(process.pid)
        if started is not None:
            break
        time.sleep(0.01)
    if started is None:
        raise ServiceError(f"the {name} exited at once: see {log}")
    daemon = Daemon(name, process.pid, started, str(log))
    pidfiles.write(daemon)  # before anything else can fail: `down` finds it even then
    return daemon


def wait_ready(daemon: Daemon, ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not ready():
        if not daemon.alive():
            raise ServiceError(f"the {what} exited while starting: {tail(daemon.log)}")
        if time.monotonic() > deadline:
            stop(daemon)
            raise ServiceError(
                f"the {what} did not answer within {READY_TIMEOUT_S:.0f} s (stopped): see "
                f"{daemon.log}"
            )
        time.sleep(0.1)


def logged_since(log: Path, text: bytes) -> Callable[[], bool]:
    """Whether `log` has shown `text` since now (call it before starting what writes it)."""
    offset = log.stat().st_size if log.exists() else 0

    def shown() -> bool:
        with log.open("rb") as lines:
            lines.seek(offset)
            return text in lines.read()

    return shown


def tail(path: str, lines: int = 4) -> str:
    try:
        text = Path(path).read_text(errors="replace").strip().splitlines()
    except OSError:
        return f"no log at {path}"
    return " | ".join(text[-lines:]) + f" (log {path})"


def stop(daemon: Daemon, grace_s: float = 20.0) -> bool:
    """SIGTERM the daemon's process group, SIGKILL it after `grace_s`; only if it is still
    the process `up` started."""
    if not daemon.alive():
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(daemon.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while daemon.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(daemon.pid, signal.SIGKILL)
    return True


def stop_stale(daemon: Daemon | None) -> None:
    if daemon is not None and daemon.alive():
        stop(daemon)


def get_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return json.loads(reply.read() or b"null")


def post_json(url: str, body: Any, timeout: float = 30.0) -> Any:
    """The server's JSON reply; a ServiceError in one line when it does not answer (a
    timeout on a busy machine, a refused connection): never a traceback."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return json.loads(reply.read() or b"null")
    except (OSError, ValueError) as exc:  # URLError, socket timeouts, a reply not JSON
        raise ServiceError(f"{url} did not answer: {' '.join(str(exc).split())}") from None
