"""A Ray head for one command's life: `python -m evalfleet.stack.ray_head --port P --temp-dir DIR`.

It starts the same node `ray start --head --block` does (Ray's own `Node`, token
authentication from RAY_AUTH_MODE / RAY_AUTH_TOKEN, sessions under DIR), without what a
throwaway head never uses, which on two cores is time taken from the run's first answer:

- the `ray` command line itself (its import is a second of CPU more than Ray's);
- the dashboard's API server (job submission and the state API; about 1.3 s of CPU);
- the autoscaler's monitor (a head of one command's life never scales);
- the idle Python workers Ray starts ahead for the first driver (the run's worker actors
  start their own processes; the spare ones only cost CPU).

It prints "Ray runtime started" once the node answers, and exits 1 if a process of the node
dies. SIGTERM stops the node (Ray's handler). `evalfleet up --ray` keeps `ray start`: a
stack's head lives long and its start-up is paid once.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from evalfleet.tasks.ray_setup import RAY_SYSTEM_CONFIG

STARTED = "Ray runtime started"
SYSTEM_CONFIG: dict[str, Any] = {
    "prestart_worker_first_driver": False,
    "enable_worker_prestart": False,
    **RAY_SYSTEM_CONFIG,  # workers preload evalfleet.tasks.ray_setup (no Arrow in them)
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m evalfleet.stack.ray_head", description=__doc__)
    parser.add_argument("--port", type=int, required=True, help="the GCS port")
    parser.add_argument("--temp-dir", required=True, help="where the sessions go")
    parser.add_argument("--dashboard-agent-listen-port", type=int, required=True)
    parser.add_argument("--num-cpus", type=int, default=None)
    args = parser.parse_args(argv)

    from evalfleet.core import collector

    collector.while_importing()
    from ray._private import services
    from ray._private.authentication.authentication_token_setup import (
        ensure_token_if_auth_enabled,
        maybe_enable_token_auth_if_token_available,
    )
    from ray._private.node import Node
    from ray._private.parameter import RayParams

    class HeadWithoutApiServer(Node):
        def start_api_server(self, **_: object) -> None:
            """Not started: nothing of a one-command head uses jobs or the state API."""

    params = RayParams(
        # As `ray start --node-ip-address=127.0.0.1` does: the address others reach it at.
        node_ip_address=services.resolve_ip_for_localhost("127.0.0.1"),
        gcs_server_port=args.port,
        temp_dir=args.temp_dir,
        num_cpus=args.num_cpus,
        include_dashboard=False,
        dashboard_agent_listen_port=args.dashboard_agent_listen_port,
        no_monitor=True,
        _system_config=SYSTEM_CONFIG,
    )
    maybe_enable_token_auth_if_token_available()
    ensure_token_if_auth_enabled(SYSTEM_CONFIG, create_token_if_missing=False)
    node = HeadWithoutApiServer(params, head=True, shutdown_at_exit=True, spawn_reaper=True)
    collector.imported()
    print(f"{STARTED} at {node.address}", flush=True)
    while True:
        time.sleep(1)
        dead = node.dead_processes()
        if dead:
            names = ", ".join(sorted({kind for kind, _ in dead}))
            print(f"a process of the Ray head exited ({names}): stopping the head", flush=True)
            node.kill_all_processes(check_alive=False, allow_graceful=False)
            return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
