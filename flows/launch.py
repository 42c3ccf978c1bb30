"""How `evalfleet run` runs a request: check, start what is missing, run the flow, end cleanly.

1. Millisecond checks (models, keys, the store's writability); bad input stops here.
2. The temporary Prefect server and a private Ray head start in the background (unless
   PREFECT_API_URL / RAY_ADDRESS name running ones), while the data is loaded and the run id
   checked.
3. The `evaluate-and-aggregate` flow runs. If the Prefect server goes away mid-run the work
   goes on; the command finishes the same steps without Prefect and says so once.
4. Whatever happens, what step 2 started is stopped; the exit code is 0, 2 (bad input),
   130 / 143 (interrupted: everything stored is kept) or 1 (a bug).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from typing import Any

from flows.interrupts import STOP
from flows.outcome import Interrupted
from flows.request import EvalRequest


def run_request(request: EvalRequest, *, retry_errors: bool = True) -> dict[str, Any]:
    """Run one request end to end from the command line; raise Interrupted on a signal."""
    from flows.services import LocalStack

    stack = LocalStack()
    ray_was_up = _ray_initialized()
    if not ray_was_up:
        _attach_to_running_stack()
    own_ray = not os.environ.get("RAY_ADDRESS") and not ray_was_up
    if own_ray:
        stack.use_private_ray()
    from flows import generation

    generation.quick_checks(request)
    STOP.reset()
    STOP.on_force(stack.kill)
    try:
        with STOP.handling():
            stack.start(prefect=not os.environ.get("PREFECT_API_URL"), ray=own_ray)
            prepared = generation.preflight(request)
            stack.wait(STOP.requested)
            if STOP.requested():
                raise Interrupted(
                    f"run {prepared.run_id} interrupted by {STOP.name} before any request"
                )
            return _run_flow(prepared.request, retry_errors, stack.prefect_url)
    finally:
        if not ray_was_up:
            _disconnect_ray()
        stack.stop()


def _attach_to_running_stack() -> None:
    """Use the Prefect server (and Ray head) `evalfleet up` keeps running, unless the
    environment names others."""
    from flows.stack import attach, ray_client_env

    if os.environ.get("PREFECT_API_URL"):
        return
    stack = attach()
    if stack is None:
        return
    os.environ["PREFECT_API_URL"] = stack.api_url
    where = f"Prefect {stack.prefect.address}"
    if stack.ray is not None and not os.environ.get("RAY_ADDRESS"):
        os.environ.update(ray_client_env(stack))
        if "ray" in sys.modules:  # Ray reads its auth settings at import
            from ray._raylet import Config

            Config.initialize("")
        where += f", Ray {stack.ray.address}"
    print(f"using the running evalfleet stack ({where})", file=sys.stderr, flush=True)


def _run_flow(request: EvalRequest, retry_errors: bool, prefect_url: str | None):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.pipeline import evaluate_and_aggregate, run_without_prefect

    settings = temporary_settings({PREFECT_API_URL: prefect_url}) if prefect_url else None
    with settings or contextlib.nullcontext():
        try:
            state = evaluate_and_aggregate(request, retry_errors, return_state=True)
        except Exception as exc:
            if not prefect_lost(exc):
                raise
            state = None
            lost = exc
        else:
            lost = _lost_in_state(state)
        finally:
            _drain_prefect()
    if lost is not None:
        print(
            f"the Prefect flow run could not be finished ({type(lost).__name__}): completing "
            "the run and its tables without Prefect",
            file=sys.stderr,
        )
        return run_without_prefect(request, retry_errors=retry_errors)
    if state.is_cancelled():
        raise Interrupted(state.message or "interrupted")
    return state.result()  # re-raises the flow's exception (a ConfigError is one line)


def _drain_prefect() -> None:
    """Send the logs and events Prefect still holds while its server is up (best effort)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogHandler

    with contextlib.suppress(Exception):
        APILogHandler.flush()
    with contextlib.suppress(Exception):
        EventsWorker.drain_all(timeout=5)


def _lost_in_state(state) -> BaseException | None:
    if state.is_failed() or state.is_crashed():
        try:
            state.result()
        except Exception as exc:
            return exc if prefect_lost(exc) else None
    return None


def prefect_lost(exc: BaseException) -> bool:
    """Whether an exception says the Prefect API cannot be reached."""
    import httpx

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, httpx.TransportError):
            return True
        current = current.__cause__ or current.__context__
    return False


def _ray_initialized() -> bool:
    if "ray" not in sys.modules:
        return False
    import ray

    return ray.is_initialized()


def _disconnect_ray() -> None:
    if "ray" in sys.modules:
        import ray

        if ray.is_initialized():
            with contextlib.suppress(Exception):
                ray.shutdown()


def resume_hint(run_id: str) -> str:
    """The command that resumes this run: the same command line, with its run id."""
    args = sys.argv[1:]
    if "--run-id" not in args and not any(a.startswith("--run-id=") for a in args):
        args = [*args, "--run-id", run_id]
    return "evalfleet " + " ".join(shlex.quote(a) for a in args)
