"""Ray's serialization context, made without Arrow, in every process of a run.

When a process first serializes something, Ray builds its serialization context and, to
register serializers for Ray Data's Arrow tables, imports pyarrow and with it NumPy: about
60 MB of memory, 0.2 s of CPU and a hundred modules in each worker actor and in the driver,
none of which evalfleet uses (no Arrow object ever crosses Ray here). The context is built
here with that registration skipped, as Ray skips it where pyarrow is not installed. Arrow
imported later (aggregation writes Parquet) works as usual. Should Ray's internals change,
the context is built as Ray builds it: the processes only cost more memory.

A driver calls `serialize_without_arrow()` once it joins Ray
(`evalfleet.engine.generation.ray_session`). Worker
processes import this module as they start, before their first task, through Ray's
`preload_python_modules` setting, which the heads evalfleet starts set (`RAY_SYSTEM_CONFIG`,
and the image's environment for a cluster of its own). On a cluster that leaves it unset the
workers import Arrow as before; on one that sets it, Ray Data's Arrow tables would not cross
processes, which no evalfleet cluster runs.
"""

from __future__ import annotations

import logging
import sys

PRELOAD = "evalfleet.tasks.ray_setup"
RAY_SYSTEM_CONFIG = {"preload_python_modules": [PRELOAD]}
log = logging.getLogger("evalfleet")


def serialize_without_arrow() -> None:
    """Build this process's serialization context (for its current job) without Ray Data's
    Arrow serializers; a context built already stays as it is."""
    try:
        import ray
        from ray._private import arrow_serialization

        register = arrow_serialization._register_custom_datasets_serializers
    except (ImportError, AttributeError) as exc:  # another Ray: it builds its own context
        log.debug("Ray's serialization context is left to Ray: %r", exc)
        return
    arrow_serialization._register_custom_datasets_serializers = _skip
    try:
        ray._private.worker.global_worker.get_serialization_context()
    finally:
        arrow_serialization._register_custom_datasets_serializers = register


def _skip(serialization_context: object) -> None:
    """What Ray registers for Arrow where pyarrow is not installed: nothing."""


def _in_a_worker() -> bool:
    if "ray" not in sys.modules:  # a process reading the settings above, before Ray
        return False
    import ray

    return ray._private.worker.global_worker.mode == ray.WORKER_MODE


if _in_a_worker():  # preloaded by a worker as it starts
    try:
        serialize_without_arrow()
    except Exception:  # never stop a worker from starting: it only costs memory
        log.warning("a worker's serialization context is left to Ray", exc_info=True)
