"""The stack's Ray cluster: a head, optionally worker nodes, and the warm worker actors.

- `up --ray`: a head that also runs the work (one machine).
- `up --ray --ray-nodes N`: a head started with `--num-cpus=0` (it hosts no work, as KubeRay
  advises) and N worker nodes, each its own `ray start --address HEAD` with its own raylet,
  object store and ports, as on other machines. On one machine they share the head's session
  folder; a node is lost by killing its process group.

Every Ray process is token-authenticated (RAY_AUTH_MODE=token): the token is the stack's own,
kept in the private state file, never printed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from evalfleet.core.interpreter import module_command
from evalfleet.stack.services import ServiceError, free_port
from evalfleet.stack.state import (
    READY_TIMEOUT_S,
    REPO,
    Daemon,
    logged_since,
    spawn,
    tail,
    wait_ready,
)
from evalfleet.tasks.ray_setup import RAY_SYSTEM_CONFIG


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
        f"--system-config={json.dumps(RAY_SYSTEM_CONFIG)}",  # workers preload tasks.ray_setup
    ]


def ray_client_env(address: str, token: str) -> dict[str, str]:
    """What a process sets before importing Ray to join the stack's cluster."""
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


def remove_sessions(folder: Path, *, keep_logs: bool = False) -> None:
    """Remove the head's session folder (sockets, logs); with `keep_logs`, its newest
    session's logs are first copied to `folder/ray-session-logs/` (a failed start's clues)."""
    temp_dir = ray_temp_dir(folder)
    logs = temp_dir / "session_latest" / "logs"
    if keep_logs and logs.is_dir():
        kept = folder / "ray-session-logs"
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(logs, kept, ignore_dangling_symlinks=True, dirs_exist_ok=True)
    shutil.rmtree(temp_dir, ignore_errors=True)


def _ray_env(token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(ray_client_env("", token))
    env.pop("RAY_ADDRESS")
    env["RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S"] = "0"
    return env


def start_head(folder: Path, token: str, *, hosts_work: bool = True) -> Daemon:
    """The head; with `hosts_work` off it has no CPUs to offer (`--num-cpus=0`)."""
    port = free_port()
    command = ray_head_command(port, ray_temp_dir(folder))
    if not hosts_work:
        command.append("--num-cpus=0")
    log = folder / "ray.log"
    started = logged_since(log, b"Ray runtime started")
    daemon = spawn("Ray head", command, _ray_env(token), log)
    daemon.address = f"127.0.0.1:{port}"
    wait_ready(daemon, started, "Ray head")
    return daemon


def node_command(head: str) -> list[str]:
    """`ray start` for a worker node of the head at `head`, in the foreground. Each port a
    raylet and its agents listen on is chosen apart: on one machine two nodes would take
    the same defaults."""
    ports = {
        "node-manager-port": free_port(),
        "object-manager-port": free_port(),
        "dashboard-agent-listen-port": free_port(),
        "dashboard-agent-grpc-port": free_port(),
        "metrics-export-port": free_port(),
        "runtime-env-agent-port": free_port(),
    }
    return [
        str(Path(sys.executable).with_name("ray")),
        "start",
        f"--address={head}",
        "--block",
        "--node-ip-address=127.0.0.1",
        "--disable-usage-stats",
        *(f"--{name}={port}" for name, port in ports.items()),
    ]


def start_node(folder: Path, head: str, token: str, index: int) -> Daemon:
    """Worker node `index`, started after the previous one answered (two raylets starting
    at once on one machine can race for a port)."""
    log = folder / f"ray-node-{index}.log"
    started = logged_since(log, b"Ray runtime started")
    daemon = spawn(f"Ray node {index}", node_command(head), _ray_env(token), log)
    daemon.address = head
    wait_ready(daemon, started, f"Ray node {index}")
    return daemon


def start_warm_workers(folder: Path, address: str, token: str) -> None:
    """The cluster's warm worker actors (`evalfleet.stack.warm_workers`), as many as a run uses by
    default; their start-up is logged beside the head's."""
    from evalfleet.engine.run.request import EvalRequest

    count = EvalRequest.model_fields["workers"].default
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(ray_client_env(address, token))
    log = folder / "ray.log"
    with log.open("ab") as out:
        try:
            done = subprocess.run(
                module_command("evalfleet.stack.warm_workers", str(count)),
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                timeout=READY_TIMEOUT_S,
                check=False,
            )
            failed = done.returncode != 0
        except subprocess.TimeoutExpired:
            failed = True
    if failed:
        raise ServiceError(f"the Ray cluster's warm workers did not start: {tail(str(log))}")
