"""The Prefect server and Ray head one command starts for itself when none is configured.

Each is a `stack.children` process: its own process group, bound to the command's life. The
Ray head (`evalfleet.stack.ray_head`) starts a process of its own; the Prefect server
(`stack.prefect_app`) is forked from the command once it has imported Prefect, or started as
a process of its own where that cannot be (no Prefect loaded, or a thread running). Both
start while the command plans the run; "ready" means answering an API call, not just up.

The Prefect server keeps its database under the evalfleet state directory (`EVALFLEET_HOME`,
default ~/.evalfleet), apart from the user's own Prefect profile. The first server of a Prefect
version migrates it and registers Prefect's block types; once it has answered, a marker names
that version, and later servers of the same version skip both (about 2.5 s of CPU each). Each
server first trims the history there to the newest N flow runs (`stack.prefect_history`). If
it dies mid-run it is started again on the same port: the run never waits for it, and
Prefect's client retries carry its calls over the gap.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from functools import partial
from pathlib import Path

from evalfleet.core.interpreter import module_command
from evalfleet.core.places import evalfleet_home
from evalfleet.stack import prefect_history, prefect_template
from evalfleet.stack.children import Child, ForkedChild
from evalfleet.stack.ray_head import STARTED
from evalfleet.stack.scratch import Scratch

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
    """The Prefect version that last migrated `database`, if it still exists and holds
    Prefect's tables (an emptied file must be migrated again)."""
    try:
        version = _marker(database).read_text().strip() if database.exists() else None
    except OSError:
        return None
    return version if version and prefect_history.has_tables(database) else None


def _history_checked(database: Path) -> None:
    """A history SQLite cannot read is moved aside, said in one line, and a new one begins:
    it holds past flow runs for the UI, nothing a run needs (the store holds every result)."""
    problem = prefect_history.damage(database)
    if problem is None:
        return
    try:
        moved = prefect_history.set_aside(database)
    except OSError as exc:
        raise ServiceError(
            f"the temporary Prefect server's history {database} is damaged ({problem}) and "
            f"could not be moved aside ({exc.strerror}): move or delete it and run again"
        ) from None
    print(
        f"the temporary Prefect server's history {database} was damaged ({problem}): moved "
        f"to {moved.name}; a new history begins (the store holds every result)",
        file=sys.stderr,
        flush=True,
    )


def _mark_prepared(database: Path, version: str) -> None:
    with contextlib.suppress(OSError):
        _marker(database).write_text(version)


class ServiceError(RuntimeError):
    """A service this command started did not come up."""


RAY_STARTS = 3  # a head that exits while starting is started again, with new ports


def free_port() -> int:
    """A port free now; another process may take it before it is bound (`reserve_port`)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def reserve_port() -> socket.socket:
    """A port of 127.0.0.1 held by this socket, bound and not listening, with SO_REUSEPORT:
    no other program can bind it, while a server of this user that sets SO_REUSEPORT too
    (`stack.prefect_app.listen`) listens on it. Its number is the socket's; close it to let
    the port go."""
    sock = socket.socket()
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", 0))
    except BaseException:
        sock.close()
        raise
    return sock


# The private heads' token, never written down: one per process, because Ray loads the token
# once per process (a second head with a token of its own refused this process's driver).
_RAY_TOKEN = secrets.token_hex(32)


class LocalStack:
    """Starts what is missing: a temporary Prefect server unless PREFECT_API_URL is set, a
    private Ray head unless RAY_ADDRESS is set. `stop()` (or `kill()`) ends both. The server
    keeps the newest `flow_runs_kept` flow runs (default: `prefect_history.kept_from_env()`)."""

    def __init__(self, flow_runs_kept: int | None = None) -> None:
        if flow_runs_kept is None:
            flow_runs_kept = prefect_history.kept_from_env()
        self.flow_runs_kept = flow_runs_kept
        self.scratch = Scratch()
        self.workdir = self.scratch.path
        self.prefect: Child | None = None
        self.ray: Child | None = None
        self._ray_cpus: int | None = None
        self._ray_starts = 0
        self.prefect_url: str | None = None
        self.ray_address: str | None = None
        self._port_held: socket.socket | None = None  # held from the first start to stop
        self._prefect_prepared = False
        self._stopping = threading.Event()
        self._watchdog: threading.Thread | None = None
        self._env_before: dict[str, str | None] = {}  # what `_point` changed, to put back
        self.ray_env = {
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": _RAY_TOKEN,
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
            "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
        }

    def use_private_ray(self) -> None:
        """Point this process at the Ray head `start` will launch. Ray reads its auth settings
        when it is imported, so this runs first (or refreshes Ray's config if it is loaded)."""
        self._point(self.ray_env)
        _refresh_ray_config()

    def _point(self, values: dict[str, str]) -> None:
        """Set these variables of this process's environment, remembering what they were: a
        second run in the same process (the Python API) must not join the head, or talk to the
        server, that the first one stopped."""
        for name, value in values.items():
            self._env_before.setdefault(name, os.environ.get(name))
            os.environ[name] = value

    def _restore_environment(self) -> None:
        for name, value in self._env_before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if self._env_before:
            _refresh_ray_config()
        self._env_before = {}

    def start(
        self, *, prefect: bool = False, ray: bool = False, ray_cpus: int | None = None
    ) -> None:
        if prefect:
            self._start_prefect()
        if ray:
            self._ray_cpus = ray_cpus
            self._start_ray(ray_cpus)

    def _start_prefect(self) -> None:
        # The port is held here from the start to the end (a restart takes it again): no
        # other program can take it between its choice and the server's bind.
        if self._port_held is None:
            self._port_held = reserve_port()
        port = self._port_held.getsockname()[1]
        database = state_dir() / "prefect-runs.db"
        _history_checked(database)
        prefect_template.seed(database)  # a new home: migrated tables copied, not migrated
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
        log = self.workdir / "prefect.log"
        keep = self.flow_runs_kept - 1  # room for the run this server is started for
        command = module_command("evalfleet.stack.prefect_app", str(port), str(database), str(keep))
        if "prefect" in sys.modules and threading.active_count() == 1:
            from evalfleet.stack.prefect_app import serve

            title = " ".join(command)
            serving = partial(serve, port, database, keep)
            self.prefect = ForkedChild("prefect server", serving, env, log, title)
        else:  # Prefect is not loaded here, or a thread runs (a restart, by the watchdog)
            self.prefect = Child("prefect server", command, env, log)
        self.prefect_url = f"http://127.0.0.1:{port}/api"

    def _start_ray(self, cpus: int | None) -> None:
        self._ray_starts += 1
        port = free_port()
        env = {**os.environ, **self.ray_env}
        env.pop("RAY_ADDRESS", None)
        command = [
            *module_command("evalfleet.stack.ray_head", "--port", str(port)),
            *("--temp-dir", str(self.workdir / "ray")),
            *("--dashboard-agent-listen-port", str(free_port())),
        ]
        if cpus:
            command.extend(("--num-cpus", str(cpus)))
        self.ray = Child("ray head", command, env, self.workdir / "ray.log")
        self.ray_address = f"127.0.0.1:{port}"

    def wait_ray(self, stop_requested: Callable[[], bool] = lambda: False) -> bool:
        """Block until the Ray head started here answers, then point this process at it
        (the run's workers can start while the Prefect server is still starting). False
        when a stop was requested first."""
        if not self._await([self.ray], stop_requested):
            return False
        if self.ray_address:
            self._point({"RAY_ADDRESS": self.ray_address})
        return True

    def wait(self, stop_requested: Callable[[], bool] = lambda: False) -> bool:
        """Block until every service started here answers, then point this process at them.
        False when a stop was requested first."""
        if not self.wait_ray(stop_requested) or not self._await([self.prefect], stop_requested):
            return False
        if self.prefect_url and self._watchdog is None:
            if not self._prefect_prepared:
                _mark_prepared(state_dir() / "prefect-runs.db", _prefect_version())
            # No "View at" link: this server has no UI and ends with the command (Prefect
            # prints no flow-run URL when its UI URL is empty).
            self._point({"PREFECT_API_URL": self.prefect_url, "PREFECT_UI_URL": ""})
            self._watchdog = threading.Thread(
                target=self._keep_prefect_up, name="prefect-watchdog", daemon=True
            )
            self._watchdog.start()
        return True

    def prefect_ready(self) -> bool:
        """Whether the Prefect server started here answers now (True when none was started),
        asked once without waiting."""
        child = self.prefect
        if child is not None and not child.ready and child.alive() and self._ready(child):
            child.ready = True
        return child is None or child.ready

    def _await(self, children: list[Child | None], stop_requested: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + READY_TIMEOUT_S
        pending = [c for c in children if c is not None and not c.ready]
        while pending:
            for child in list(pending):
                restart = child is self.ray and self._ray_starts < RAY_STARTS
                if not child.alive() and restart and not stop_requested():
                    # its ports were free when chosen; another program may have bound one
                    # before the head did: new ports, and start it again
                    self._start_ray(self._ray_cpus)
                    if self.ray is not None:  # set by _start_ray
                        pending[pending.index(child)] = self.ray
                    continue
                if not child.alive():
                    raise ServiceError(
                        f"the {child.name} this run started exited ({child.log_tail()}); its "
                        "log is kept when the command ends"
                    )
                if self._ready(child):
                    child.ready = True
                    pending.remove(child)
            if pending and stop_requested():
                return False
            if pending and time.monotonic() > deadline:
                what = ", ".join(c.name for c in pending)
                raise ServiceError(f"{what} did not start within {READY_TIMEOUT_S:.0f} s")
            if pending:
                time.sleep(0.05)
        return True

    def _keep_prefect_up(self) -> None:
        """Start the Prefect server again if it dies before the command ends (reported once)."""
        reported = False
        while not self._stopping.wait(0.5):
            if self.prefect is None or self.prefect.alive() or self._stopping.is_set():
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
            # /ready, not /health: its first API request costs the server half a second
            # more, paid here while the command has other things to do.
            try:
                with urllib.request.urlopen(f"{self.prefect_url}/ready", timeout=2) as reply:
                    return reply.status == 200
            except OSError:
                return False
        try:
            return STARTED in child.log_path.read_text(errors="replace")
        except OSError:
            return False

    def begin_stop(self) -> None:
        """Ask the Prefect server to stop now (its shutdown takes the longest; the flow run has
        reported its end), while this process leaves Ray."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self.prefect is not None:
            self.prefect.terminate()

    def stop(self, *, keep_logs: bool = False) -> Path | None:
        """Stop both; then their folder goes, its logs kept first when `keep_logs` (the command
        failed). Returns where."""
        self.begin_stop()
        if self._watchdog is not None:
            self._watchdog.join(timeout=5)
        if self.ray is not None:
            # A throwaway head holds nothing to save (every record is in the store), and its
            # orderly shutdown takes seconds: its process group is killed outright.
            self.ray.stop(grace_s=0)
        if self.prefect is not None:
            self.prefect.stop(grace_s=5)
        self._release_port()
        self._restore_environment()
        kept = self.scratch.keep_logs() if keep_logs and (self.ray or self.prefect) else None
        self.scratch.remove()
        return kept

    def kill(self) -> None:
        self._stopping.set()
        for child in (self.ray, self.prefect):
            if child is not None:
                child.kill()
        self._release_port()
        self._restore_environment()
        self.scratch.remove()

    def _release_port(self) -> None:
        if self._port_held is not None:
            self._port_held.close()
            self._port_held = None


def _refresh_ray_config() -> None:
    """Ray reads its auth settings when it is imported: read them again if it is loaded, but
    never under a connection this process holds (its cluster's settings are the ones that
    count until it leaves)."""
    if "ray" in sys.modules:
        import ray
        from ray._raylet import Config  # type: ignore[attr-defined]  # not in Ray's stub

        if not ray.is_initialized():
            Config.initialize("")
