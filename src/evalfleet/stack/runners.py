"""What runs the flow runs of the stack, and the warm launcher of `evalfleet` commands.

Two ways to run the deployments' flow runs:

- **serve** (default): `deployments/serve.py` registers the deployments and starts each flow
  run in a subprocess of its own. One process to supervise, no pool to create; a flow run it
  started that dies is marked Crashed by it at once.
- **a work pool** (`up --pool`): `deployments/prefect.yaml` is applied with `prefect deploy
  --all` to a process work pool (`evalfleet`), and N `prefect worker start` processes pick
  the flow runs up, as workers on other machines would. A worker lost with its flow run
  (its machine) is noticed by the crash automation, and a retry runs on another worker.

Each of these processes keeps its temporary files in a folder of its own (`runner_folder`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from evalfleet.core.interpreter import module_command
from evalfleet.core.settings import RUNNER_POLL_S, WORKER_POLL_S
from evalfleet.engine.store.heartbeat import FLOW_RUN_BEAT_S
from evalfleet.stack import runner_folder
from evalfleet.stack.ray_cluster import ray_client_env
from evalfleet.stack.services import ServiceError
from evalfleet.stack.state import (
    READY_TIMEOUT_S,
    REPO,
    Daemon,
    logged_since,
    spawn,
    tail,
    wait_ready,
)

POOL = "evalfleet"


def prefect_yaml() -> Path:
    """The deployments' `prefect.yaml`, found where the `deployments` package is (a checkout
    or an installed wheel)."""
    spec = importlib.util.find_spec("evalfleet.deployments")
    if spec is None or spec.origin is None:
        raise RuntimeError("the deployments package is not installed beside evalfleet")
    return Path(spec.origin).parent / "prefect.yaml"


def runner_env(api_url: str, store: str, ray: Daemon | None, token: str) -> dict[str, str]:
    """The environment of what runs flow runs: the stack's Prefect, Ray and store."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env.update(
        PREFECT_API_URL=api_url,
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY=str(FLOW_RUN_BEAT_S),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        DO_NOT_TRACK="1",
        EVALFLEET_STORE=store,
        PYTHONUNBUFFERED="1",
    )
    if ray is not None:
        env.update(ray_client_env(ray.address, token))
    return env


def start_serve(folder: Path, env: dict[str, str], settings: dict[str, str]) -> Daemon:
    env = {
        **env,
        **settings,
        "PREFECT_RUNNER_POLL_FREQUENCY": str(RUNNER_POLL_S.get()),
    }
    command = runner_folder.command(folder, "serve", ["-m", "evalfleet.deployments.serve"])
    log = folder / "serve.log"
    served = logged_since(log, b"being served")
    daemon = spawn("deployments (serve)", command, env, log)
    daemon.address = env["PREFECT_API_URL"]
    wait_ready(daemon, served, "deployments' serve process")
    return daemon


def apply_deployments(folder: Path, env: dict[str, str]) -> None:
    """Create the process work pool if it is missing, then `prefect deploy --all` of
    `deployments/prefect.yaml` (its pull step runs flow runs from this checkout)."""
    prefect = str(Path(sys.executable).with_name("prefect"))
    env = {**env, "EVALFLEET_CODE_DIR": str(REPO), "PREFECT_CLI_PROMPT": "false"}
    log = folder / "deploy.log"
    created = _prefect_cli([prefect, "work-pool", "create", POOL, "--type", "process"], env, log)
    if created.returncode != 0 and "already exists" not in created.stdout:
        raise ServiceError(f"could not create the work pool {POOL}: {tail(str(log))}")
    deploy = [prefect, "--no-prompt", "deploy", "--all", "--prefect-file", str(prefect_yaml())]
    done = _prefect_cli(deploy, env, log)
    if done.returncode != 0 or "Deployment" not in done.stdout:
        raise ServiceError(f"prefect deploy --all failed: {tail(str(log))}")


def _prefect_cli(command: list[str], env: dict[str, str], log: Path):
    try:
        done = subprocess.run(
            command,
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=READY_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ServiceError(f"{' '.join(command[1:4])} took over {READY_TIMEOUT_S:.0f} s") from exc
    with log.open("a") as out:
        out.write(f"$ {' '.join(command[1:])}\n{done.stdout}{done.stderr}\n")
    done.stdout += done.stderr
    return done


def start_pool_worker(folder: Path, env: dict[str, str], index: int) -> Daemon:
    """`prefect worker start` on the stack's work pool, polling every few seconds."""
    name = f"{POOL}-worker-{index}"
    env = {
        **env,
        "PREFECT_WORKER_QUERY_SECONDS": str(WORKER_POLL_S.get()),
        "PREFECT_WORKER_PREFETCH_SECONDS": "5",
    }
    start = ["worker", "start", "--pool", POOL, "--type", "process", "--name", name]
    program = ["-m", "prefect", *start, "--install-policy", "never"]
    command = runner_folder.command(folder, f"worker-{index}", program)
    log = folder / f"worker-{index}.log"
    started = logged_since(log, b"started!")
    daemon = spawn(f"Prefect worker {index}", command, env, log)
    daemon.address = name
    wait_ready(daemon, started, f"Prefect worker {index}")
    return daemon


def launcher_path(folder: Path) -> Path:
    """The launcher's socket: in the state folder when its path is short enough for a Unix
    socket, else a file of /tmp named after the folder."""
    inside = folder / "launcher.sock"
    if len(str(inside)) <= 100:
        return inside
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"evalfleet-launcher-{digest}.sock"


def start_launcher(folder: Path, env: dict[str, str]) -> Daemon:
    """The warm launcher of `evalfleet` commands (`evalfleet.cli.launcher`)."""
    path = launcher_path(folder)
    env = {**env, "MPLBACKEND": "Agg"}
    command = module_command("evalfleet.cli.launcher", str(path))
    log = folder / "launcher.log"
    ready = logged_since(log, b"launcher ready")
    daemon = spawn("launcher", command, env, log)
    daemon.address = str(path)
    wait_ready(daemon, ready, "launcher")
    return daemon
