"""The Prefect server and Ray head one command starts for itself when none is configured.

Each runs in its own process group (a terminal's Ctrl-C reaches only the command, which then
stops them in order) and is bound to the command's life (`core.fate`), so neither outlives
it, even after a SIGKILL. Both start at once, while the command plans the run.

The Prefect server keeps its database under the evalfleet state directory (`EVALFLEET_HOME`,
default ~/.evalfleet), apart from the user's own Prefect profile. The first server of a Prefect
version migrates it and registers Prefect's block types; once it has answered, a marker names
that version, and later servers of the same version skip both (about 2.5 s of CPU each). If
it dies mid-run it is started again on the same port: the run never waits for it, and
Prefect's client retries carry its calls over the gap.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from core.places import evalfleet_home
from stack.scratch import Scratch

READY_TIMEOUT_S = 180.0


def state_dir() -> Path:
    """Where evalfleet keeps what outlives one command (the temporary server's database)."""
    path = evalfleet_home()
    path.mkdir(parents=True, exist_ok=True)
    return path


def _prefect_version() -> str:
    from importlib.metadata import version

    return version("prefect")


def _marker(database: Path) -> Path:
    return database.with_name(database.name + ".prepared")


def _prepared_for(database: Path) -> str | None:
    """The Prefect version that last migrated `database`, if it still exists."""
    try:
        return _marker(database).read_text().strip() if database.exists() else None
    except OSError:
        return None


def _mark_prepared(database: Path, version: str) -> None:
    with contextlib.suppress(OSError):
        _marker(database).write_text(version)


class ServiceError(RuntimeError):
    """A service this command started did not come up."""


def ray_head_command(port: int, temp_dir: Path) -> list[str]:
    """`ray start --head` on loopback, in the foreground (its process is the head's life),
    no dashboard, no usage stats."""
    return [
        str(Path(sys.executable).with_name("ray")),
        "start",
        "--head",
        "--block",
        f"--port={port}",
        "--node-ip-address=127.0.0.1",
        f"--dashboard-agent-listen-port={free_port()}",
        "--include-dashboard=false",
        "--disable-usage-stats",
        f"--temp-dir={temp_dir}",
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Child:
    """A fate-shared child process in its own process group, its output in a log file."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], log_path: Path):
        self.name = name
        self.log_path = log_path
        self._log = log_path.open("ab")
        wrapped = [sys.executable, "-m", "core.fate", str(os.getpid()), "--", *command]
        self.process = subprocess.Popen(
            wrapped,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=Path(__file__).resolve().parent.parent,
        )

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(text[-lines:])

    def stop(self, grace_s: float) -> None:
        """SIGTERM the group, then SIGKILL what is left after `grace_s`."""
        self._signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=grace_s)
        self._signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        self._log.close()

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)


class LocalStack:
    """Starts what is missing: a temporary Prefect server unless PREFECT_API_URL is set, a
    private Ray head unless RAY_ADDRESS is set. `stop()` (or `kill()`) ends both."""

    def __init__(self) -> None:
        self.scratch = Scratch()
        self.workdir = self.scratch.path
        self.prefect: Child | None = None
        self.ray: Child | None = None
        self.prefect_url: str | None = None
        self.ray_address: str | None = None
        self._prefect_port = 0
        self._prefect_prepared = False
        self._stopping = threading.Event()
        self._watchdog: threading.Thread | None = None
        self.ray_env = {
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(32),  # this head's own, never written down
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
            "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
        }

    def use_private_ray(self) -> None:
        """Point this process at the Ray head `start` will launch. Ray reads its auth settings
        when it is imported, so this runs first (or refreshes Ray's config if it is loaded)."""
        os.environ.update(self.ray_env)
        if "ray" in sys.modules:
            from ray._raylet import Config

            Config.initialize("")

    def start(self, *, prefect: bool, ray: bool, ray_cpus: int | None = None) -> None:
        if prefect:
            self._start_prefect()
        if ray:
            self._start_ray(ray_cpus)

    def _start_prefect(self) -> None:
        # Found, not imported: importing Prefect here would hold the server's start a second.
        spec = importlib.util.find_spec("prefect")
        assert spec is not None and spec.origin is not None, "prefect is a dependency"
        port = self._prefect_port = self._prefect_port or free_port()
        database = state_dir() / "prefect-runs.db"
        self._prefect_prepared = _prepared_for(database) == _prefect_version()
        env = {
            **os.environ,
            "PREFECT_UI_ENABLED": "0",
            "PREFECT__SERVER_EPHEMERAL": "1",
            "PREFECT__SERVER_FINAL": "1",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{database}",
        }
        if self._prefect_prepared:
            env["PREFECT_API_DATABASE_MIGRATE_ON_START"] = "false"
            env["PREFECT_API_BLOCKS_REGISTER_ON_START"] = "false"
        env.pop("PREFECT_API_URL", None)
        command = [
            sys.executable,
            "-m",
            "uvicorn",
            "--app-dir",
            str(Path(spec.origin).resolve().parent.parent),
            "--factory",
            "prefect.server.api.server:create_app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "error",
            "--lifespan",
            "on",
        ]
        self.prefect = Child("prefect server", command, env, self.workdir / "prefect.log")
        self.prefect_url = f"http://127.0.0.1:{port}/api"

    def _start_ray(self, cpus: int | None) -> None:
        port = free_port()
        env = {**os.environ, **self.ray_env}
        env.pop("RAY_ADDRESS", None)
        # No autoscaler monitor: a head of one command's life never scales (0.6 s of CPU).
        command = [*ray_head_command(port, self.workdir / "ray"), "--no-monitor"]
        if cpus:
            command.append(f"--num-cpus={cpus}")
        self.ray = Child("ray head", command, env, self.workdir / "ray.log")
        self.ray_address = f"127.0.0.1:{port}"

    def wait(self, stop_requested: Callable[[], bool] = lambda: False) -> None:
        """Block until every started service answers; then point this process at them."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        pending = [c for c in (self.prefect, self.ray) if c is not None]
        while pending:
            for child in list(pending):
                if not child.alive():
                    raise ServiceError(
                        f"the {child.name} this run started exited ({child.log_tail()}); its "
                        "log is kept when the command ends"
                    )
                if self._ready(child):
                    pending.remove(child)
            if pending and (stop_requested() or time.monotonic() > deadline):
                what = ", ".join(c.name for c in pending)
                raise ServiceError(f"{what} did not start within {READY_TIMEOUT_S:.0f} s")
            if pending:
                time.sleep(0.1)
        if self.prefect_url:
            if not self._prefect_prepared:
                _mark_prepared(state_dir() / "prefect-runs.db", _prefect_version())
            os.environ["PREFECT_API_URL"] = self.prefect_url
            self._watchdog = threading.Thread(
                target=self._keep_prefect_up, name="prefect-watchdog", daemon=True
            )
            self._watchdog.start()
        if self.ray_address:
            os.environ["RAY_ADDRESS"] = self.ray_address

    def _keep_prefect_up(self) -> None:
        """Start the Prefect server again if it dies before the command ends (reported once)."""
        reported = False
        while not self._stopping.wait(0.5):
            if self.prefect is None or self.prefect.alive():
                continue
            if not reported:
                print(
                    "the temporary Prefect server stopped: starting it again; the run goes on",
                    file=sys.stderr,
                    flush=True,
                )
                reported = True
            self._start_prefect()

    def _ready(self, child: Child) -> bool:
        if child is self.prefect:
            try:
                with urllib.request.urlopen(f"{self.prefect_url}/health", timeout=2) as reply:
                    return reply.status == 200
            except OSError:
                return False
        try:
            return "Ray runtime started" in child.log_path.read_text(errors="replace")
        except OSError:
            return False

    def stop(self, *, keep_logs: bool = False) -> Path | None:
        """Ray first (its workers hold connections), then Prefect; then their folder goes,
        its logs kept first when `keep_logs` (the command failed). Returns where."""
        self._stopping.set()
        if self._watchdog is not None:
            self._watchdog.join(timeout=5)
        if self.ray is not None:
            # A throwaway head holds nothing to save (every record is in the store), and its
            # orderly shutdown takes seconds: its process group is killed outright.
            self.ray.stop(grace_s=0)
        if self.prefect is not None:
            self.prefect.stop(grace_s=5)
        kept = self.scratch.keep_logs() if keep_logs and (self.ray or self.prefect) else None
        self.scratch.remove()
        return kept

    def kill(self) -> None:
        self._stopping.set()
        for child in (self.ray, self.prefect):
            if child is not None:
                child.kill()
        self.scratch.remove()
