"""A stack under test: `evalfleet` commands with the stack's environment, and the Prefect API
as the UI calls it (deployments by name, flow runs started, waited for, retried)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EVALFLEET = str(Path(sys.executable).with_name("evalfleet"))
ENDED = {"Completed", "Failed", "Crashed", "Cancelled"}


@dataclass
class Stack:
    env: dict[str, str]
    tag: str
    ui: str  # http://127.0.0.1:PORT
    store: Path
    sim_url: str
    sim_log: Path
    root: Path

    @property
    def api(self) -> str:
        return f"{self.ui}/api"

    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [EVALFLEET, *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def call(self, path: str, body: object | None = None) -> object:
        """One API call; a 503 (SQLite busy on a loaded machine) is asked again for 60 s."""
        data = None if body is None else json.dumps(body).encode()
        deadline = time.monotonic() + 60
        while True:
            request = urllib.request.Request(
                f"{self.api}{path}",
                data=data,
                method="GET" if body is None else "POST",
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    raw = response.read()
                return json.loads(raw) if raw else None
            except urllib.error.HTTPError as error:
                if error.code != 503 or time.monotonic() > deadline:
                    raise
                time.sleep(1)

    def deployment(self, name: str) -> dict:
        flow_name, deployment_name = name.split("/")
        for found in self.call("/deployments/filter", {}):
            flow = self.call(f"/flows/{found['flow_id']}")
            if (flow["name"], found["name"]) == (flow_name, deployment_name):
                return found
        raise AssertionError(f"deployment {name} is not registered")

    def start_run(self, name: str, request: dict) -> str:
        return self.start_flow(name, {"request": request})

    def start_flow(self, name: str, parameters: dict) -> str:
        deployment = self.deployment(name)
        run = self.call(
            f"/deployments/{deployment['id']}/create_flow_run", {"parameters": parameters}
        )
        return run["id"]

    def retry(self, flow_run_id: str) -> None:
        """What `prefect flow-run retry` and the UI's Retry do: schedule the run again."""
        state = {"type": "SCHEDULED", "name": "Scheduled", "message": "retried by the test"}
        self.call(f"/flow_runs/{flow_run_id}/set_state", {"state": state, "force": True})

    def wait(self, flow_run_id: str, states: set[str] = ENDED, timeout: float = 240) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            run = self.call(f"/flow_runs/{flow_run_id}")
            if run["state"] and run["state"]["name"] in states:
                return run
            assert time.monotonic() < deadline, f"flow run stuck in {run['state']}"
            time.sleep(0.5)


def stack_env(root: Path, tag: str, **extra: str) -> dict[str, str]:
    """The environment of a stack under test: this process's, without another Prefect server
    or Ray cluster, its state under `root`, every process it starts tagged with `tag`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_ADDRESS"))}
    return {**env, "EVALFLEET_TEST_TAG": tag, "EVALFLEET_STACK": str(root / "state"), **extra}


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children first found, then theirs)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def kill_tree(pid: int) -> list[int]:
    """SIGKILL a process and everything it started, as losing its machine would: the tree is
    read first (a child of a killed parent is adopted and no longer found below it)."""
    tree = [pid, *descendants(pid)]
    for target in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(target, signal.SIGKILL)
    return tree


def worker_of(logs: list[Path], flow_run_id: str) -> str | None:
    """The pool worker that took a flow run, from the workers' logs. Every polling worker may
    log that it is submitting a scheduled run; all but one are then refused by the server and
    log that they aborted, so a worker counts only if no abort follows its latest submission."""
    for log in logs:
        name, took = None, False
        for line in log.read_text(errors="replace").splitlines():
            if f"submitting flow run '{flow_run_id}'" in line:
                name, took = line.split("Worker '", 1)[1].split("'", 1)[0], True
            elif f"Aborted submission of flow run '{flow_run_id}'" in line:
                took = False
        if took:
            return name
    return None


def worker_running(worker_pids: dict[str, int], flow_run_id: str) -> str | None:
    """The pool worker whose process tree holds a flow run's process (Prefect sets the run's
    id in that process's environment): the ground truth while the run is going."""
    marker = f"PREFECT__FLOW_RUN_ID={flow_run_id}".encode()
    for name, pid in worker_pids.items():
        for child in descendants(pid):
            try:
                environ = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if marker in environ:
                return name
    return None
