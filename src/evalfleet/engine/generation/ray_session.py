"""Joining Ray: the cluster RAY_ADDRESS names (the private head `evalfleet run` starts, or a
real cluster), else a local instance started here; and watching that its head still answers."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from typing import Any

import ray

from evalfleet.tasks.head import HeadWatch


def ensure_ray() -> None:
    """Join Ray (once), with a serialization context that does not import Arrow."""
    from evalfleet.tasks.ray_setup import serialize_without_arrow

    if not ray.is_initialized():
        _join()
    serialize_without_arrow()


def _join() -> None:
    from evalfleet.tasks.ray_setup import RAY_SYSTEM_CONFIG

    # Under `uv run`, Ray would otherwise rebuild the environment for every worker (and give
    # the job a runtime env of its own, which no warm worker has: `tasks.job_env`). Ray read
    # the variable when it was imported, so its constant is set too.
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    if os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"].lower() in {"0", "false"}:
        from ray._private import ray_constants

        ray_constants.RAY_ENABLE_UV_RUN_RUNTIME_ENV = False
    address = os.environ.get("RAY_ADDRESS") or None
    # No address: a new local instance ("local"; None would join a `ray start` of this machine).
    kwargs: dict[str, Any] = (
        {} if address else {"include_dashboard": False, "_system_config": RAY_SYSTEM_CONFIG}
    )
    address = address or "local"
    main = threading.current_thread() is threading.main_thread()
    sigterm = signal.getsignal(signal.SIGTERM) if main else None
    ray.init(address=address, logging_level=logging.WARNING, log_to_driver=True, **kwargs)
    if main:
        # ray.init installs a SIGTERM handler that exits at once; keep ours (graceful stop).
        signal.signal(signal.SIGTERM, sigterm)


def watch_head() -> contextlib.AbstractContextManager[HeadWatch | None]:
    """A watch on the head of the Ray this process joined (`tasks.head`), while entered; None
    where Ray does not say where its head is (a Ray Client connection)."""
    try:
        address = ray.get_runtime_context().gcs_address
    except Exception as exc:  # Ray Client and other modes: no address to watch
        logging.getLogger("evalfleet").debug("the Ray head is not watched: %r", exc)
        address = None
    return HeadWatch(address) if address else contextlib.nullcontext(None)
