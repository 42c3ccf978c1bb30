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
(`evalfleet.stack.prefect_app`) on a copy of the migrated empty database. Both start, wait and
stop as the stack's daemons do (`evalfleet.stack.state`: pid files in the folder, read back by
the controller).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

SHARED_VARIABLE = "EVALFLEET_TEST_SHARED"
RAY_CPUS = 6  # as the three heads of two CPUs each it replaces
# Nothing of a test's own may reach the services' environment (a test's tag would make them
# look like its leftovers) and nothing may point them at another service (the Prefect server's
# environment is the stack's, `stack.prefect_server.prefect_env`: its own URL only).
NOT_PASSED = ("EVALFLEET_TEST_TAG", "RAY_ADDRESS", "EVALFLEET_STORE")


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

    def done(_folder: Path) -> dict:
        action()
        return {}

    _shared(name, done)


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


def _without_test_marks(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in NOT_PASSED}


def _start_ray(folder: Path) -> dict:
    from ray._private.authentication.authentication_token_setup import (
        ensure_token_if_auth_enabled,
    )

    from evalfleet.core.interpreter import module_command
    from evalfleet.stack.ray_head import STARTED
    from evalfleet.stack.services import free_port
    from evalfleet.stack.state import logged_since, spawn, wait_ready

    # Ray's socket paths are limited in length: a short folder of its own.
    sessions = tempfile.mkdtemp(prefix="evalfleet-test-ray-")
    port = free_port()
    command = [
        *module_command("evalfleet.stack.ray_head", "--port", str(port)),
        *("--temp-dir", sessions, "--num-cpus", str(RAY_CPUS)),
        *("--dashboard-agent-listen-port", str(free_port())),
    ]
    ensure_token_if_auth_enabled({}, create_token_if_missing=True)  # as ray.init() does
    log = folder / "ray.log"
    ready = logged_since(log, STARTED.encode())
    daemon = spawn("Ray head", command, _without_test_marks(dict(os.environ)), log)
    wait_ready(daemon, ready, "session's Ray head")
    return {"address": f"127.0.0.1:{port}", "folder": sessions}


def _start_prefect(folder: Path) -> dict:
    from evalfleet.core.interpreter import module_command
    from evalfleet.stack import prefect_template
    from evalfleet.stack.prefect_server import prefect_env, prefect_healthy
    from evalfleet.stack.services import reserve_port
    from evalfleet.stack.state import spawn, wait_ready

    prefect_template.seed(folder / "prefect.db")  # migrated tables copied: no migration
    with reserve_port() as hold:  # no other program takes the port before the server has it
        port = hold.getsockname()[1]
        # As the stack's server (its database under `folder`), without the UI no test opens,
        # and with the services of a run's temporary server: no scheduler, late-run marker,
        # foreman or repossessor wakes every few seconds for the deployments and work pools
        # only the stack tests' own servers have (8.5 CPU-s a minute idle, 4.7 so).
        env = {
            **_without_test_marks(prefect_env(folder, port)),
            "PREFECT_UI_ENABLED": "0",
            "PREFECT__SERVER_EPHEMERAL": "1",
        }
        command = module_command("evalfleet.stack.prefect_app", str(port))
        daemon = spawn("Prefect server", command, env, folder / "prefect.log")
        api = f"http://127.0.0.1:{port}/api"
        wait_ready(daemon, lambda: prefect_healthy(api), "session's Prefect server")
    return {"address": api}


def group_cpu_s(pgid: int) -> float:
    """CPU-seconds of a process group's processes so far, with their children that ended and
    were waited for (Ray's workers, by their raylet)."""
    from tests.support.cpu_busy import process_stat

    spent = 0
    for entry in Path("/proc").iterdir():
        fields = process_stat(entry.name) if entry.name.isdigit() else None
        if fields is not None and int(fields[2]) == pgid:  # [2]: the process group
            spent += sum(int(field) for field in fields[11:15])
    return spent / os.sysconf("SC_CLK_TCK")


def stop_shared_services() -> float | None:
    """Stop what any worker started: by the process that owns the folder, once every worker
    has ended. Returns the CPU-seconds the services spent (None when none was started): they
    are children of the worker that started them, which ended without waiting for them."""
    from evalfleet.stack import pidfiles
    from evalfleet.stack.state import stop

    if not owns_shared_folder():
        return None
    folder = shared_folder()
    daemons, _ = pidfiles.recorded(folder)  # Ray's head first, the Prefect server last
    spent = sum(group_cpu_s(daemon.pid) for daemon in daemons) if daemons else None
    for daemon in daemons:
        stop(daemon)
    ray = folder / "ray.json"
    if ray.exists():
        shutil.rmtree(json.loads(ray.read_text())["folder"], ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    return spent
