"""One Ray head and one Prefect server for the whole test session, shared by every xdist worker.

Each of `make test`'s three workers used to start its own (`ray.init` of a local instance with
warm workers, a Prefect server): idle most of the run, they were the largest row of the CPU
table that ends the suite (274-316 CPU-seconds in CI). Now the first test that needs one starts
it, under a lock in a folder the controller makes before the workers start (named by
EVALFLEET_TEST_SHARED, which they inherit); the others read its address; the controller stops
both once every worker has ended (`stop_shared_services`).

The Ray head is evalfleet's own (`evalfleet.stack.ray_head`: no API server, no autoscaler
monitor, no idle workers started ahead) with the CPUs of the three heads it replaces, and the
warm workers `evalfleet up --ray` keeps; the Prefect server is evalfleet's
(`evalfleet.stack.prefect_app`) on a copy of the migrated empty database.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

SHARED_VARIABLE = "EVALFLEET_TEST_SHARED"
RAY_CPUS = 6  # as the three heads of two CPUs each it replaces
START_TIMEOUT_S = 240
# Nothing of a test's own may reach the services' environment (a test's tag would make them
# look like its leftovers) and nothing may point them at another service.
NOT_PASSED = ("EVALFLEET_TEST_TAG", "RAY_ADDRESS", "PREFECT_API_URL", "EVALFLEET_STORE")


def shared_folder() -> Path:
    return Path(os.environ[SHARED_VARIABLE])


def make_shared_folder() -> None:
    """In the process that starts the session (xdist's controller, or pytest alone): the folder
    its workers inherit, marked as this process's. A pytest that a test starts inherits it too
    and uses the same services, but does not own them."""
    if SHARED_VARIABLE in os.environ:
        return
    folder = tempfile.mkdtemp(prefix="evalfleet-test-shared-")
    (Path(folder) / "owner").write_text(str(os.getpid()))
    os.environ[SHARED_VARIABLE] = folder


def owns_shared_folder() -> bool:
    try:
        return (shared_folder() / "owner").read_text() == str(os.getpid())
    except (KeyError, OSError):
        return False


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    with (folder / "lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ray_address() -> str:
    """The session's Ray, this process pointed at it as `ray.init()` of a new local instance
    points its own: RAY_AUTH_MODE=token and the user's token file (made if missing), which the
    commands a test starts inherit."""
    os.environ["RAY_AUTH_MODE"] = "token"
    found = _shared("ray", _start_ray)
    if "ray" in sys.modules:  # Ray read its auth settings when imported: read them again
        from ray._raylet import Config  # type: ignore[attr-defined]  # not in Ray's stub

        Config.initialize("")
    return found["address"]


def once(name: str, action: Callable[[], object]) -> None:
    """`action` done by the first worker that gets here, the others waiting until it is."""
    _shared(name, lambda _folder: (action(), {})[1])


def prefect_api_url() -> str:
    return _shared("prefect", _start_prefect)["address"]


def _shared(name: str, start: Callable[[Path], dict]) -> dict:
    folder = shared_folder()
    record = folder / f"{name}.json"
    with _locked(folder):
        if not record.exists():
            started = start(folder)
            record.write_text(json.dumps(started))
        return json.loads(record.read_text())


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in NOT_PASSED}


def _spawn(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("ab") as out:
        return subprocess.Popen(
            command,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # stopped whole, as a group, by the controller
        )


def _wait(process: subprocess.Popen, ready: Callable[[], bool], log: Path, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            _stop_group(process.pid)
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the session's {what} did not start:\n{tail}")
        time.sleep(0.2)


def _start_ray(folder: Path) -> dict:
    from ray._private.authentication.authentication_token_setup import (
        ensure_token_if_auth_enabled,
    )

    from evalfleet.stack.services import free_port

    # Ray's socket paths are limited in length: a short folder of its own.
    sessions = tempfile.mkdtemp(prefix="evalfleet-test-ray-")
    port = free_port()
    command = [sys.executable, "-m", "evalfleet.stack.ray_head", "--port", str(port)]
    command += ["--temp-dir", sessions, "--num-cpus", str(RAY_CPUS)]
    command += ["--dashboard-agent-listen-port", str(free_port())]
    ensure_token_if_auth_enabled({}, create_token_if_missing=True)  # as ray.init() does
    log = folder / "ray.log"
    process = _spawn(command, _environment(), log)
    _wait(process, lambda: "Ray runtime started" in log.read_text(errors="replace"), log, "Ray")
    return {"address": f"127.0.0.1:{port}", "pid": process.pid, "folder": sessions}


def _start_prefect(folder: Path) -> dict:
    from evalfleet.stack import prefect_template
    from evalfleet.stack.services import reserve_port

    database = folder / "prefect.db"
    prefect_template.seed(database)  # migrated tables copied: no migration at start
    env = {k: v for k, v in _environment().items() if not k.startswith("PREFECT_")}
    env.update(
        PREFECT_HOME=str(folder / "prefect-home"),
        PREFECT_API_DATABASE_CONNECTION_URL=f"sqlite+aiosqlite:///{database}",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_UI_ENABLED="0",
        # SQLite shared by three workers' runs: wait for the lock rather than answer 503
        PREFECT_SERVER_DATABASE_TIMEOUT="30",
        PREFECT_SERVER_DATABASE_CONNECTION_TIMEOUT="30",
    )
    log = folder / "prefect.log"
    with reserve_port() as hold:  # no other program takes the port before the server has it
        port = hold.getsockname()[1]
        command = [sys.executable, "-m", "evalfleet.stack.prefect_app", str(port)]
        process = _spawn(command, env, log)
        api = f"http://127.0.0.1:{port}/api"
        _wait(process, lambda: _healthy(api), log, "Prefect server")
    return {"address": api, "pid": process.pid}


def _healthy(api: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api}/health", timeout=2) as answer:
            return json.loads(answer.read()) is True
    except (OSError, ValueError):
        return False


def _stop_group(pid: int, grace_s: float = 15.0) -> None:
    """SIGTERM to the process group (Ray's head stops its node on it), SIGKILL after grace."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def group_cpu_s(pgid: int) -> float:
    """CPU-seconds of a process group's processes so far, with their children that ended and
    were waited for (Ray's workers, by their raylet)."""
    ticks = os.sysconf("SC_CLK_TCK")
    spent = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # pgrp; then utime, stime, cutime, cstime
            spent += sum(int(field) for field in fields[11:15])
    return spent / ticks


def stop_shared_services() -> float | None:
    """Stop what any worker started: by the process that owns the folder, once every worker
    has ended. Returns the CPU-seconds the services spent (None when none was started): they
    are children of the worker that started them, which ended without waiting for them."""
    if not owns_shared_folder():
        return None
    folder = shared_folder()
    spent = None
    for name in ("ray", "prefect"):
        record = folder / f"{name}.json"
        if not record.exists():
            continue
        found = json.loads(record.read_text())
        spent = (spent or 0.0) + group_cpu_s(found["pid"])
        _stop_group(found["pid"])
        if "folder" in found:
            shutil.rmtree(found["folder"], ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    return spent
