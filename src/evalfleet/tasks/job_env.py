"""The Ray runtime env a process runs with: its job's (`ray job submit --runtime-env-json`, or
RAY_JOB_CONFIG_JSON_ENV_VAR for a driver), or the one an actor was started with.

A run's own workers get its job's runtime env, environment variables included (the S3
credentials of a submitted job, say); the cluster's warm workers were started by another job
and have that job's. A warm worker therefore serves only a run whose runtime env is the one it
runs with (`tasks.pool`). Only a digest is compared: the env may hold secrets."""

from __future__ import annotations

import hashlib
import json
import sys

UNKNOWN = "unknown"  # never matched, not even by itself: a run that cannot tell starts its own
# What Ray keeps in a job's runtime env that the worker does not run with: its options
# ("config": timeouts, a log file per job) and the niceness `ray job submit` sets.
NOT_THE_WORKERS = ("config",)
NOT_THE_WORKERS_VARS = ("RAY_WORKER_NICENESS",)


def runtime_env_digest() -> str:
    """sha256 of this process's runtime env, as canonical JSON ({} outside Ray); UNKNOWN
    where Ray cannot say (a connection mode without a runtime context)."""
    env: dict = {}
    ray = sys.modules.get("ray")  # a process that has not imported Ray runs without one
    if ray is not None and ray.is_initialized():
        try:
            env = dict(ray.get_runtime_context().runtime_env)
        except Exception:  # noqa: BLE001  (any failure: borrow nothing rather than guess)
            return UNKNOWN
    return digest_of(env)


def digest_of(env: dict) -> str:
    """sha256 of a runtime env as canonical JSON, less what Ray keeps that no worker runs
    with (NOT_THE_WORKERS)."""
    env = {k: v for k, v in env.items() if k not in NOT_THE_WORKERS}
    variables = dict(env.pop("env_vars", None) or {})
    for name in NOT_THE_WORKERS_VARS:
        variables.pop(name, None)
    if variables:
        env["env_vars"] = variables
    text = json.dumps(env, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def same_env(ours: str, theirs: str) -> bool:
    """Two digests that say the same runtime env (UNKNOWN says none)."""
    return ours == theirs != UNKNOWN
