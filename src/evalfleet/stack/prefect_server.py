"""The stack's Prefect server (`prefect server start` on 127.0.0.1, its SQLite database, home
and UI files under the state folder) and the automation that marks a flow run Crashed when
its heartbeats stop (its process or machine is gone)."""

from __future__ import annotations

import os
import shlex
import socket
import sys
from pathlib import Path

from evalfleet.core.settings import CRASH_AFTER_S, SCHEDULER_LOOP_S
from evalfleet.core.types import ConfigError
from evalfleet.stack import prefect_history, prefect_template
from evalfleet.stack.services import ServiceError, free_port
from evalfleet.stack.state import Daemon, get_json, post_json, spawn, wait_ready

AUTOMATION = "evalfleet: crash flow runs whose heartbeats stopped"
TERMINAL = ("Completed", "Failed", "Cancelled", "Crashed")


def crash_after_s() -> int:
    """How long a flow run may go without a heartbeat before it is marked Crashed:
    EVALFLEET_CRASH_AFTER_S, default 90. Its bounds keep it above the flow runs' heartbeat
    (`FLOW_RUN_BEAT_S`), or healthy runs would be marked."""
    return CRASH_AFTER_S.get()


def prefect_env(folder: Path, port: int) -> dict[str, str]:
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
        PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS=str(SCHEDULER_LOOP_S.get()),
        DO_NOT_TRACK="1",
    )
    return env


def start_prefect(folder: Path, port: int | None) -> Daemon:
    database = folder / "prefect.db"
    prefect_template.seed(database)  # a new stack: migrated tables copied, not migrated again
    problem = prefect_history.damage(database)
    if problem is not None:  # the server would exit, or hang on its first query
        moved = shlex.quote(f"{database}.damaged")
        raise ServiceError(
            f"the Prefect database {database} is damaged ({problem}): move it aside (`mv "
            f"{shlex.quote(str(database))} {moved}`) and start again: the server makes a new "
            "one (past flow runs stay in the old file)"
        )
    if port is not None and not port_free(port):
        raise ServiceError(f"port {port} is taken: choose another with --port, or leave it out")
    for attempt in range(1, PORT_TRIES + 1):
        chosen = port or (4200 if port_free(4200) else free_port())
        log = folder / "prefect.log"
        offset = log.stat().st_size if log.exists() else 0
        try:
            return _serve_on(folder, chosen)
        except ServiceError as exc:
            # A port chosen here was free when chosen; another program may have bound it
            # before the server did: choose again. A port the user gave is theirs to change.
            if port is not None or attempt == PORT_TRIES or not _port_taken(log, offset):
                raise exc
    raise AssertionError("unreachable: the last try returns or raises")


PORT_TRIES = 3


def _serve_on(folder: Path, port: int) -> Daemon:
    prefect_cli = str(Path(sys.executable).with_name("prefect"))
    command = [prefect_cli, "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    log = folder / "prefect.log"
    daemon = spawn("Prefect server", command, prefect_env(folder, port), log)
    daemon.address = f"http://127.0.0.1:{port}"
    wait_ready(daemon, lambda: prefect_healthy(f"{daemon.address}/api"), "Prefect server")
    return daemon


def _port_taken(log: Path, offset: int) -> bool:
    """Whether the server said, since `offset` of its log, that its port is in use (uvicorn's
    errno 98)."""
    try:
        with log.open("rb") as lines:
            lines.seek(offset)
            said = lines.read().decode(errors="replace")
    except OSError:
        return False
    return "address already in use" in said.lower()


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def prefect_healthy(api_url: str) -> bool:
    try:
        return get_json(f"{api_url}/health") is True
    except (OSError, ValueError):
        return False


def ensure_crash_automation(api_url: str, after_s: int) -> str:
    """The automation that marks a flow run Crashed when no heartbeat came for `after_s` (a
    process SIGKILLed, a worker or node lost): created once, found by name afterwards, made
    again if its window changed."""
    found = post_json(f"{api_url}/automations/filter", {"limit": 200})
    for automation in found or []:
        if automation.get("name") != AUTOMATION:
            continue
        if automation.get("trigger", {}).get("within") == float(after_s):
            return automation["id"]
        _delete(f"{api_url}/automations/{automation['id']}")
    body = {
        "name": AUTOMATION,
        "description": f"evalfleet up: a flow run with no heartbeat for {after_s} s has lost "
        "its process",
        "enabled": True,
        "trigger": {
            "type": "event",
            "match": {"prefect.resource.id": ["prefect.flow-run.*"]},
            "after": ["prefect.flow-run.heartbeat"],
            "expect": ["prefect.flow-run.heartbeat", *(f"prefect.flow-run.{s}" for s in TERMINAL)],
            "for_each": ["prefect.resource.id"],
            "posture": "Proactive",
            "threshold": 1,
            "within": float(after_s),
        },
        "actions": [
            {
                "type": "change-flow-run-state",
                "state": "CRASHED",
                "message": f"no heartbeat for {after_s} s: the process running it is gone; "
                "retry the run to resume it from the store",
            }
        ],
    }
    return post_json(f"{api_url}/automations/", body)["id"]


def _delete(url: str) -> None:
    import urllib.request

    with urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=5):
        pass


def main() -> int:
    """`python -m evalfleet.stack.prefect_server`: the crash automation on the Prefect server that
    PREFECT_API_URL names (for a server `evalfleet up` did not start)."""
    import sys

    api_url = os.environ.get("PREFECT_API_URL", "").rstrip("/")
    if not api_url:
        print("error: set PREFECT_API_URL to the Prefect server's API", file=sys.stderr)
        return 2
    try:
        after = crash_after_s()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"crash automation {ensure_crash_automation(api_url, after)} ({after} s) on {api_url}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
