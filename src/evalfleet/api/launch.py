"""How `evalfleet run` runs a request: check, start what is missing, run the flow, end cleanly.

1. Millisecond checks (models, keys, the store's writability); bad input stops here.
2. The data is read in a child process started first (`start_reading`), and the services
   start in the background (unless PREFECT_API_URL / RAY_ADDRESS name running ones) while it
   is read and the run id checked: a private Ray head at once, a temporary Prefect server
   forked once Prefect is imported (it skips that import). As soon as Ray answers (its own
   head, or the cluster RAY_ADDRESS names) the run's workers start and its samples go to
   the object store. What follows the work is imported while the Prefect server is still
   starting, unless the run is resumed (its stored records are then listed on the other core).
3. The `evaluate-and-aggregate` flow runs. If the Prefect server goes away mid-run the work
   goes on; the command finishes the same steps without Prefect and says so once.
4. Whatever happens, what step 2 started is stopped; the exit code is 0, 2 (bad input),
   3 (the cost cap), 4 (the run did not do its job: a record not stored, a model down, the
   Ray head lost), 130 / 143 (interrupted: everything stored is kept) or 1 (a bug).

A small run (its --limit caps it at `SMALL_ITEMS` answers and judgements) with no stack to use
(no `evalfleet up`, no RAY_ADDRESS or PREFECT_API_URL) starts neither: the same steps run as
plain calls in this process (`run_here`), its items asked by the same worker class on this
process's event loop (`engine.generation.here`); the records and tables are the same. Starting
a Ray head and a Prefect server would take most of its wall time. `full_stack` (the command's
--full-stack) runs it as any other.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING

from evalfleet.engine.run.interrupts import STOP
from evalfleet.engine.run.outcome import Interrupted, RunFailed, interrupted_message
from evalfleet.engine.run.request import EvalRequest
from evalfleet.storage.base import Store

if TYPE_CHECKING:
    from evalfleet.engine.pipeline import JobResult, Steps
    from evalfleet.engine.prepare.resolve import ResolvedRun
    from evalfleet.providers.registry import ModelConfig


def run_request(
    request: EvalRequest,
    *,
    retry_errors: bool = True,
    answers: bool = True,
    flow_runs_kept: int | None = None,
    full_stack: bool = False,
) -> JobResult:
    """Run one request end to end from the command line; raise Interrupted on a signal.
    With `answers` off (a judge added to a stored run) only the judges are asked. A
    temporary Prefect server keeps `flow_runs_kept` flow runs (`stack.prefect_history`).
    A small run is run in this process unless `full_stack` (see the module's docstring)."""
    from evalfleet.api.errors import user_errors
    from evalfleet.core import collector
    from evalfleet.engine.generation.online import place_samples, prestart_workers
    from evalfleet.engine.judges import resolve_stored
    from evalfleet.engine.prepare.listing_ahead import sweep_ahead
    from evalfleet.engine.prepare.reading import start_reading
    from evalfleet.engine.prepare.resolve import quick_checks, resolve
    from evalfleet.stack.services import LocalStack
    from evalfleet.storage import open_store

    store = open_store(request.store, s3_endpoint_url=request.s3_endpoint_url)
    configs = quick_checks(request) if answers else resolve_stored(request, store).configs
    ray_was_up = _ray_initialized()
    if not ray_was_up:
        _attach_to_running_stack()
    if answers and not full_stack and not ray_was_up and runs_here(request):
        return run_here(request, configs, retry_errors)
    own_ray = not os.environ.get("RAY_ADDRESS") and not ray_was_up
    stack = LocalStack(flow_runs_kept)
    if own_ray:
        stack.use_private_ray()
    STOP.reset()
    STOP.on_force(stack.kill)
    failed = True
    try:
        with STOP.handling(), contextlib.ExitStack() as ahead:
            # The data is read in a child from now on, while Prefect is imported here.
            reading = start_reading(request) if answers else None
            if reading is not None:
                ahead.callback(reading.close)
            stack.start(ray=own_ray)
            import evalfleet.flows.in_process  # Prefect's import, while the Ray head starts

            # Forked now, the Prefect server starts with Prefect imported.
            stack.start(prefect=not os.environ.get("PREFECT_API_URL"))
            # After the fork: the server would hold the listing child's pipe open.
            listing = ahead.enter_context(_listed_ahead(request, store, answers))

            run = resolve(request, configs, reading) if answers else resolve_stored(request, store)
            sweep_ahead(run, retry_errors)  # the listing child sweeps while Prefect starts
            # A Ray head of its own or a cluster it attaches to: the run's workers start,
            # and its samples go to the object store, while the Prefect server starts.
            on_ray = own_ray or bool(os.environ.get("RAY_ADDRESS"))
            if on_ray and answers and stack.wait_ray(STOP.requested):
                prestart_workers(run)
                place_samples(run)
            # Not while a child lists stored records: both cores are busy until the plan.
            if stack.prefect is not None and not listing and not STOP.requested():
                evalfleet.flows.in_process.load_what_follows_the_work(stack.prefect_ready)
            if not stack.wait(STOP.requested):
                raise Interrupted(f"run {run.run_id} interrupted by {STOP.name} before any request")
            collector.imported()
            result = _run(run, retry_errors, stack.prefect_url)
            failed = False
            return result
    except (*user_errors(), Interrupted, RunFailed):  # type: ignore[misc]  # a tuple of types
        failed = False  # the input, a signal or the run's own failure: not the services
        raise
    finally:
        stack.begin_stop()
        if not ray_was_up:
            _disconnect_ray()
        kept = stack.stop(keep_logs=failed)
        if kept is not None:
            print(
                f"logs of the Prefect server and Ray head this run started: {kept}", file=sys.stderr
            )


def _listed_ahead(
    request: EvalRequest, store: Store, answers: bool
) -> contextlib.AbstractContextManager[bool]:
    """The records of a run being resumed, listed while the services start (`listing_ahead`,
    which decides whether the run may be listed this early): for a run asked here. Its value
    says whether a child lists them."""
    from evalfleet.engine.prepare.listing_ahead import listing_ahead
    from evalfleet.storage import layout

    if not answers or request.uses_batches():
        return contextlib.nullcontext(False)
    stages = (layout.ANSWER, layout.JUDGE) if request.judges() else (layout.ANSWER,)
    return listing_ahead(store, request.s3_endpoint_url, request.resolved_run_id(), stages)


def _attach_to_running_stack() -> None:
    """Use the Prefect server (and Ray head) `evalfleet up` keeps running, unless the
    environment names others."""
    from evalfleet.stack.up import attach, ray_client_env

    if os.environ.get("PREFECT_API_URL"):
        return
    stack = attach()
    if stack is None or stack.prefect is None:
        return
    os.environ["PREFECT_API_URL"] = stack.api_url
    if "prefect" in sys.modules:  # Prefect reads its settings when imported (the launcher)
        from evalfleet.flows.settings import refresh_prefect_settings

        refresh_prefect_settings()
    where = f"Prefect {stack.prefect.address}"
    if stack.ray is not None and not os.environ.get("RAY_ADDRESS"):
        os.environ.update(ray_client_env(stack))
        if "ray" in sys.modules:  # Ray reads its auth settings at import
            from ray._raylet import Config  # type: ignore[attr-defined]  # not in Ray's stub

            Config.initialize("")
        where += f", Ray {stack.ray.address}"
    print(f"using the running evalfleet stack ({where})", file=sys.stderr, flush=True)


def _run(run: ResolvedRun, retry_errors: bool, prefect_url: str | None) -> JobResult:
    """The flow in this process; the same steps without Prefect if its server is lost."""
    from evalfleet.flows.in_process import PrefectLost, run_flow_here, say_lost

    try:
        result = run_flow_here(run, retry_errors, prefect_url)
    except PrefectLost as lost:
        say_lost(str(lost))
        result = run_without_prefect(run, retry_errors=retry_errors)
    if result.outcome.stopped:
        raise Interrupted(interrupted_message(result.outcome))
    return result


def run_without_prefect(run: ResolvedRun, *, retry_errors: bool = True) -> JobResult:
    """The whole job without a Prefect server: the same steps, as plain calls."""
    from evalfleet.engine.pipeline import whole_job

    return whole_job(run, _plain_steps(run.run_id), retry_errors)


def _plain_steps(run_id: str) -> Steps:
    from evalfleet.engine.pipeline import plain_steps
    from evalfleet.reports.report import write_report_or_warn

    def leaderboard(store: Store) -> None:
        from evalfleet.reports.leaderboard import update

        try:
            update(store, run_id)
        except Exception as exc:  # the tables are written; the leaderboard can wait
            print(f"the leaderboard was not updated: {exc}", file=sys.stderr)

    return plain_steps(write_report_or_warn, leaderboard)


def runs_here(request: EvalRequest) -> bool:
    """Whether a request is small enough to run in this process: its --limit caps it at
    `SMALL_ITEMS` items, it asks nothing in batch jobs, and no stack is there to use."""
    from evalfleet.engine.generation.here import SMALL_ITEMS, planned_at_most

    if os.environ.get("RAY_ADDRESS") or os.environ.get("PREFECT_API_URL"):
        return False
    if request.uses_batches():
        return False
    most = planned_at_most(request)
    return most is not None and most <= SMALL_ITEMS


def run_here(
    request: EvalRequest, configs: dict[str, ModelConfig], retry_errors: bool
) -> JobResult:
    """The whole job in this process: no Ray head, no Prefect server (a small run)."""
    import dataclasses

    from evalfleet.engine.generation.here import generate_here
    from evalfleet.engine.pipeline import whole_job
    from evalfleet.engine.prepare.reading import start_reading
    from evalfleet.engine.prepare.resolve import resolve

    STOP.reset()
    with STOP.handling():
        reading = start_reading(request)  # its plan tables are taken when the run opens
        try:
            run = resolve(request, configs, reading)
            steps = dataclasses.replace(_plain_steps(run.run_id), generate=generate_here)
            result = whole_job(run, steps, retry_errors)
        finally:
            if reading is not None:
                reading.close()
    if result.outcome.stopped:
        raise Interrupted(interrupted_message(result.outcome))
    return result


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
