"""`evalfleet up` / `evalfleet down`: the long-lived local stack a team runs evalfleet on.

`up` starts, each in its own session and detached from the terminal:

1. `prefect server start` on 127.0.0.1 (4200 if free, else a free port), its SQLite database,
   home and UI files under the state folder, the UI told its own API address (without
   PREFECT_SERVER_UI_API_URL the UI of a server on another port calls port 4200 and shows
   "Oops"); plus an automation that marks a flow run Crashed once its heartbeats stop;
2. `deployments/serve.py`: the deployments, served by one process that starts every flow run
   in a subprocess of its own (`serve` rather than a work pool and a worker: one process to
   supervise, no pool to create, and a killed flow run is marked Crashed by it at once);
3. with `--ray`, a Ray head, so every run and judge shares one cluster and its cluster-wide
   rate limiters.

It waits until each answers, records what it started (pid, process start time, ports) in
`stack.json`, and prints where everything is. A second `up` reports what is running and
starts only what is not. `down` stops exactly the processes recorded (a pid reused by another
program since is left alone). `evalfleet run` attaches to a running stack instead of starting
its own server and Ray head.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from stack.services import ServiceError, free_port, ray_head_command, state_dir
from storage import store_url

REPO = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 180.0
HEARTBEAT_S = 30  # Prefect's own flow-run heartbeat (its minimum)
CRASH_AFTER_S = 90  # no heartbeat for this long: the automation marks the run Crashed
AUTOMATION = "evalfleet: crash flow runs whose heartbeats stopped"
DEPLOYMENT_NAMES = (  # what deployments/serve.py serves
    "evaluate-and-aggregate/on-demand",
    "aggregate/on-demand",
    "judge/on-demand",
    "leaderboard/on-demand",
    "reevaluate/nightly",
    "poll-batches/every-few-minutes",
)


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


@dataclass
class Stack:
    folder: str
    store: str
    prefect: Daemon | None = None
    serve: Daemon | None = None
    ray: Daemon | None = None
    ray_token: str = ""  # the Ray head's auth token (the state file is private: 0600)
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def api_url(self) -> str:
        return f"{self.prefect.address}/api" if self.prefect else ""

    def daemons(self) -> list[Daemon]:
        return [d for d in (self.serve, self.ray, self.prefect) if d is not None]


def stack_dir(folder: str | None = None) -> Path:
    """--state-dir, else $EVALFLEET_STACK, else $EVALFLEET_HOME/stack (~/.evalfleet/stack)."""
    folder = folder or os.environ.get("EVALFLEET_STACK")
    path = Path(folder).expanduser() if folder else state_dir() / "stack"
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


def process_start_ticks(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie is gone for our purposes
        return None
    return int(fields[19])


def load(folder: Path) -> Stack | None:
    path = folder / "stack.json"
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    daemons = {k: Daemon(**raw[k]) if raw.get(k) else None for k in ("prefect", "serve", "ray")}
    return Stack(
        folder=raw["folder"],
        store=raw["store"],
        ray_token=raw.get("ray_token", ""),
        extras=raw.get("extras", {}),
        **daemons,
    )


def save(stack: Stack) -> None:
    path = Path(stack.folder) / "stack.json"
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(asdict(stack), out, indent=1)
    tmp.replace(path)


def _spawn(name: str, command: list[str], env: dict[str, str], log: Path) -> Daemon:
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
    return Daemon(name, process.pid, started, str(log))


def _wait(daemon: Daemon, ready, what: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not ready():
        if not daemon.alive():
            raise ServiceError(f"the {what} exited while starting: {_tail(daemon.log)}")
        if time.monotonic() > deadline:
            _stop(daemon)
            raise ServiceError(
                f"the {what} did not answer within {READY_TIMEOUT_S:.0f} s (stopped): see "
                f"{daemon.log}"
            )
        time.sleep(0.2)


def _tail(path: str, lines: int = 4) -> str:
    try:
        text = Path(path).read_text(errors="replace").strip().splitlines()
    except OSError:
        return f"no log at {path}"
    return " | ".join(text[-lines:]) + f" (log {path})"


def _get(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return json.loads(reply.read() or b"null")


def _post(url: str, body: Any, timeout: float = 5.0) -> Any:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return json.loads(reply.read() or b"null")


def prefect_healthy(api_url: str) -> bool:
    try:
        return _get(f"{api_url}/health") is True
    except (OSError, ValueError):
        return False


# --- the three services ----------------------------------------------------------------------


def _prefect_env(folder: Path, port: int) -> dict[str, str]:
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        PREFECT_HOME=str(folder / "prefect-home"),
        PREFECT_SERVER_DATABASE_CONNECTION_URL=f"sqlite+aiosqlite:///{folder / 'prefect.db'}",
        PREFECT_SERVER_API_HOST="127.0.0.1",
        PREFECT_SERVER_API_PORT=str(port),
        PREFECT_API_URL=api,
        PREFECT_SERVER_UI_API_URL=api,  # or the UI calls port 4200
        PREFECT_SERVER_UI_STATIC_DIRECTORY=str(folder / "ui"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_SERVER_UI_SHOW_PROMOTIONAL_CONTENT="false",
        # SQLite on a busy machine: wait for the lock rather than answer 503
        PREFECT_SERVER_DATABASE_TIMEOUT="30",
        PREFECT_SERVER_DATABASE_CONNECTION_TIMEOUT="30",
        PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS=os.environ.get(
            "EVALFLEET_SCHEDULER_LOOP_S", "60"
        ),
        DO_NOT_TRACK="1",
    )
    return env


def start_prefect(folder: Path, port: int | None) -> Daemon:
    if port is None:
        port = 4200 if _port_free(4200) else free_port()
    elif not _port_free(port):
        raise ServiceError(f"port {port} is taken: choose another with --port, or leave it out")
    prefect_cli = str(Path(sys.executable).with_name("prefect"))
    command = [prefect_cli, "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    daemon = _spawn("Prefect server", command, _prefect_env(folder, port), folder / "prefect.log")
    daemon.address = f"http://127.0.0.1:{port}"
    _wait(daemon, lambda: prefect_healthy(f"{daemon.address}/api"), "Prefect server")
    return daemon


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def ensure_crash_automation(api_url: str) -> str:
    """The automation that marks a flow run Crashed when its heartbeats stop (a process
    SIGKILLed, a node lost): created once, found by name afterwards."""
    found = _post(f"{api_url}/automations/filter", {"limit": 200})
    for automation in found or []:
        if automation.get("name") == AUTOMATION:
            return automation["id"]
    ended = ["Completed", "Failed", "Cancelled", "Crashed"]
    body = {
        "name": AUTOMATION,
        "description": "evalfleet up: a flow run with no heartbeat for "
        f"{CRASH_AFTER_S} s has lost its process",
        "enabled": True,
        "trigger": {
            "type": "event",
            "match": {"prefect.resource.id": ["prefect.flow-run.*"]},
            "after": ["prefect.flow-run.heartbeat"],
            "expect": ["prefect.flow-run.heartbeat", *(f"prefect.flow-run.{s}" for s in ended)],
            "for_each": ["prefect.resource.id"],
            "posture": "Proactive",
            "threshold": 1,
            "within": float(CRASH_AFTER_S),
        },
        "actions": [
            {
                "type": "change-flow-run-state",
                "state": "CRASHED",
                "message": f"no heartbeat for {CRASH_AFTER_S} s: the process running it is "
                "gone; retry the run to resume it from the store",
            }
        ],
    }
    return _post(f"{api_url}/automations/", body)["id"]


def start_serve(
    folder: Path,
    api_url: str,
    store: str,
    ray: Daemon | None,
    token: str,
    settings: dict[str, str],
) -> Daemon:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env.update(settings)
    env.update(
        PREFECT_API_URL=api_url,
        PREFECT_RUNNER_POLL_FREQUENCY=os.environ.get("EVALFLEET_RUNNER_POLL_S", "2"),
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY=str(HEARTBEAT_S),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        DO_NOT_TRACK="1",
        EVALFLEET_STORE=store,
        PYTHONUNBUFFERED="1",
    )
    if ray is not None:
        env.update(_ray_client_env(ray.address, token))
    command = [sys.executable, str(REPO / "deployments" / "serve.py")]
    daemon = _spawn("deployments (serve)", command, env, folder / "serve.log")
    daemon.address = api_url
    log = Path(daemon.log)
    offset = log.stat().st_size if log.exists() else 0

    def served() -> bool:
        with log.open("rb") as text:
            text.seek(offset)
            return b"being served" in text.read()

    _wait(daemon, served, "deployments' serve process")
    return daemon


def _ray_client_env(address: str, token: str) -> dict[str, str]:
    return {
        "RAY_ADDRESS": address,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": token,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
    }


def ray_temp_dir(folder: Path) -> Path:
    """Where the Ray head keeps its sessions: under the state folder when that is short, else
    a short folder of /tmp named after it (Ray's sockets live there, and a Unix socket path
    cannot exceed 107 bytes)."""
    inside = folder / "ray"
    if len(str(inside)) <= 40:
        return inside
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"evalfleet-ray-{digest}"


def start_ray(folder: Path, token: str) -> Daemon:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(_ray_client_env("", token))
    env.pop("RAY_ADDRESS")
    env["RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S"] = "0"
    command = ray_head_command(port, ray_temp_dir(folder))
    daemon = _spawn("Ray head", command, env, folder / "ray.log")
    daemon.address = f"127.0.0.1:{port}"
    log = Path(daemon.log)
    offset = log.stat().st_size

    def started() -> bool:
        with log.open("rb") as text:
            text.seek(offset)
            return b"Ray runtime started" in text.read()

    _wait(daemon, started, "Ray head")
    return daemon


def start_warm_workers(folder: Path, address: str, token: str) -> None:
    """The head's warm worker actors (`stack.warm_workers`), as many as a run uses by
    default; their start-up is logged beside the head's."""
    from engine.request import EvalRequest

    count = EvalRequest.model_fields["workers"].default
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(_ray_client_env(address, token))
    log = folder / "ray.log"
    with log.open("ab") as out:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "stack.warm_workers", str(count)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=Path(__file__).resolve().parent.parent,
                timeout=READY_TIMEOUT_S,
                check=False,
            )
            failed = done.returncode != 0
        except subprocess.TimeoutExpired:
            failed = True
    if failed:
        raise ServiceError(f"the Ray head's warm workers did not start: {_tail(str(log))}")


# --- up / down / attach ----------------------------------------------------------------------


def up(
    *,
    folder: str | None = None,
    port: int | None = None,
    ray: bool = False,
    store: str | None = None,
    serve_settings: dict[str, str] | None = None,
) -> tuple[Stack, list[str]]:
    """Start what is not running; return the stack and a line per service (started or
    already running). `store` and `serve_settings` (environment for the deployments: the
    reevaluation's schedule and request) default to what the stack was started with; given
    and different, the deployments are restarted with them."""
    path = stack_dir(folder)
    stack = load(path) or Stack(folder=str(path), store="")
    notes: dict[str, str] = {}
    try:
        return _bring_up(stack, path, port, ray, store, serve_settings, notes)
    except BaseException:
        # Nothing this `up` started outlives its failure; what was running before stays.
        for name in ("serve", "ray", "prefect"):
            daemon = getattr(stack, name)
            if daemon is not None and notes.get(name) != "already running":
                _stop(daemon)
                setattr(stack, name, None)
        save(stack)
        raise


def _bring_up(
    stack: Stack,
    path: Path,
    port: int | None,
    ray: bool,
    store: str | None,
    serve_settings: dict[str, str] | None,
    notes: dict[str, str],
) -> tuple[Stack, list[str]]:
    if stack.prefect and stack.prefect.alive() and prefect_healthy(stack.api_url):
        notes["prefect"] = "already running"
    else:
        notes["prefect"] = "started"
        stack.prefect = start_prefect(path, port)
        stack.serve = _stop_stale(stack.serve)
        save(stack)
    stack.extras["crash_automation"] = ensure_crash_automation(stack.api_url)
    if ray and not (stack.ray and stack.ray.alive()):
        notes["ray"] = "started"
        stack.ray_token = secrets.token_hex(32)
        stack.ray = start_ray(path, stack.ray_token)
        start_warm_workers(path, stack.ray.address, stack.ray_token)
        stack.serve = _stop_stale(stack.serve)  # it must be started with RAY_ADDRESS
        save(stack)
    elif stack.ray and stack.ray.alive():
        notes["ray"] = "already running"
    # What the deployments are served with: what was given now, else what was recorded.
    store = store_url(store or stack.store or None)
    settings = serve_settings or stack.extras.get("serve_settings") or {}
    unchanged = store == stack.store and settings == stack.extras.get("serve_settings", {})
    serving = stack.serve and stack.serve.alive() and stack.serve.address == stack.api_url
    if serving and unchanged:
        notes["serve"] = "already running"
    else:
        notes["serve"] = "restarted with the new settings" if serving else "started"
        stack.serve = _stop_stale(stack.serve)
        stack.store = store
        stack.extras["serve_settings"] = settings
        save(stack)  # what is up so far, should serve fail to start
        stack.serve = start_serve(path, stack.api_url, store, stack.ray, stack.ray_token, settings)
    save(stack)
    return stack, describe(stack, notes)


def _stop_stale(daemon: Daemon | None) -> None:
    if daemon is not None and daemon.alive():
        _stop(daemon)
    return None


def describe(stack: Stack, notes: dict[str, str] | None = None) -> list[str]:
    notes = notes or {}
    lines = [f"evalfleet stack (state in {stack.folder})"]
    if stack.prefect:
        lines.append(
            f"  Prefect UI     {stack.prefect.address}   API {stack.api_url}   pid "
            f"{stack.prefect.pid}   {notes.get('prefect', '')}".rstrip()
        )
    if stack.serve:
        lines.append(
            f"  deployments    {', '.join(DEPLOYMENT_NAMES)}   served by pid {stack.serve.pid}"
            f"   {notes.get('serve', '')}".rstrip()
        )
    if stack.ray:
        lines.append(
            f"  Ray head       {stack.ray.address}   pid {stack.ray.pid}   "
            f"{notes.get('ray', '')}".rstrip()
        )
    else:
        lines.append("  Ray            one local instance per flow run (`up --ray` shares one)")
    lines.append(f"  store          {stack.store} (the run form's default)")
    lines.append(f"  logs           {stack.folder}/{{prefect,serve,ray}}.log")
    lines.append("`evalfleet run` uses this stack while it is up; `evalfleet down` stops it.")
    return lines


def _stop(daemon: Daemon, grace_s: float = 20.0) -> bool:
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


def down(folder: str | None = None) -> list[str]:
    path = stack_dir(folder)
    stack = load(path)
    if stack is None:
        return [f"no stack recorded in {path}: nothing to stop"]
    lines = []
    for daemon in stack.daemons():  # serve first (it runs flows), then Ray, then Prefect
        stopped = _stop(daemon)
        state = f"stopped (pid {daemon.pid})" if stopped else "was not running"
        lines.append(f"  {daemon.name:<22} {state}")
    if stack.ray is not None:  # its sessions (sockets, logs) go with it
        shutil.rmtree(ray_temp_dir(path), ignore_errors=True)
    (path / "stack.json").unlink(missing_ok=True)
    return [f"evalfleet stack in {path}:", *lines]


def attach(folder: str | None = None) -> Stack | None:
    """The running stack, if `up` started one that still answers; None otherwise."""
    try:
        path = stack_dir(folder)
    except OSError:
        return None
    stack = load(path)
    if stack is None or not stack.prefect or not stack.prefect.alive():
        return None
    if not prefect_healthy(stack.api_url):
        return None
    if stack.ray is not None and not stack.ray.alive():
        stack.ray = None
    return stack


def ray_client_env(stack: Stack) -> dict[str, str]:
    """What a process sets before importing Ray to join the stack's head."""
    return _ray_client_env(stack.ray.address, stack.ray_token) if stack.ray else {}
