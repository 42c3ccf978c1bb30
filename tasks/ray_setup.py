"""Ray's serialization context, made without Arrow, in every process of a run.

When a process first serializes something, Ray builds its serialization context and, to
register serializers for Ray Data's Arrow tables, imports pyarrow and with it NumPy: about
60 MB of memory, 0.2 s of CPU and a hundred modules in each worker actor and in the driver,
none of which evalfleet uses (no Arrow object ever crosses Ray here). Building the context
while `import pyarrow` fails makes Ray skip those serializers, as it does where pyarrow is
not installed. Arrow imported later (aggregation writes Parquet) works as usual.

A driver calls `serialize_without_arrow()` once it joins Ray (`engine.ray_session`). Worker
processes import this module as they start, before their first task, through Ray's
`preload_python_modules` setting, which the heads evalfleet starts set (`RAY_SYSTEM_CONFIG`,
and the image's environment for a cluster of its own); a worker of a cluster without it
imports Arrow as before and works the same.
"""

from __future__ import annotations

import sys

PRELOAD = "tasks.ray_setup"
RAY_SYSTEM_CONFIG = {"preload_python_modules": [PRELOAD]}
_UNUSED = ("pyarrow",)


def serialize_without_arrow() -> None:
    """Build this process's serialization context (for its current job) with pyarrow unseen;
    a context built already stays as it is."""
    import ray

    hidden = [name for name in _UNUSED if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # `import` raises ImportError
    try:
        ray._private.worker.global_worker.get_serialization_context()
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def _in_a_worker() -> bool:
    if "ray" not in sys.modules:  # a process reading the settings above, before Ray
        return False
    import ray

    return ray._private.worker.global_worker.mode == ray.WORKER_MODE


if _in_a_worker():  # preloaded by a worker as it starts
    serialize_without_arrow()
