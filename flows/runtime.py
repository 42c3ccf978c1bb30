"""Starting (or joining) Ray: a local instance by default, a cluster when RAY_ADDRESS is set."""

from __future__ import annotations

import logging
import os

import ray


def ensure_ray() -> None:
    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_ACCEPT_CLUSTER_AUTH_TOKEN", "1")
    # Under `uv run`, Ray would otherwise rebuild the environment for every worker.
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    address = os.environ.get("RAY_ADDRESS") or None
    kwargs = {} if address else {"include_dashboard": False}
    ray.init(
        address=address,
        ignore_reinit_error=True,
        logging_level=logging.WARNING,
        log_to_driver=True,
        **kwargs,
    )
