"""How `evalfleet run` runs a request: check, start what is missing, run the flow, end cleanly.

1. Millisecond checks (models, keys, the store's writability); bad input stops here.
2. The services start in the background (unless PREFECT_API_URL / RAY_ADDRESS name running
   ones) while the data is loaded and the run id checked: a private Ray head at once, a
   temporary Prefect server forked once Prefect is imported (it skips that import). The
   run's workers start as soon as Ray answers; what follows the work is imported while the
   Prefect server is still starting.
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

from engine import heartbeat
from engine.interrupts import STOP
from engine.outcome import Interrupted, RunFailed, interrupted_message
from engine.request import EvalRequest
from storage.base import Store


def run_request(
    request: EvalRequest,
    *,
    retry_errors: bool = True,
    answers: bool = True,
    flow_runs_kept: int | None = None,
) -> dict[str, Any]:
    """Run one request end to end from the command line; raise Interrupted on a signal.
    With `answers` off (a judge added to a stored run) only the judges are asked. A
    temporary Prefect server keeps `flow_runs_kept` flow runs (`stack.prefect_history`)."""
    from cli.errors import user_errors
    from core import collector
    from engine.generation import prestart_workers
    from engine.judges import resolve_stored
    from engine.resolve import quick_checks, resolve
    from stack.services import LocalStack
    from storage import open_store

    store = open_store(request.store, s3_endpoint_url=request.s3_endpoint_url)
    configs = quick_checks(request) if answers else resolve_stored(request, store).configs
    ray_was_up = _ray_initialized()
    if not ray_was_up:
        _attach_to_running_stack()
    own_ray = not os.environ.get("RAY_ADDRESS") and not ray_was_up
    stack = LocalStack(flow_runs_kept)
    if own_ray:
        stack.use_private_ray()
    STOP.reset()
    STOP.on_force(stack.kill)
    failed = True
    try:
        with STOP.handling():
            stack.start(ray=own_ray)
            import flows.in_process  # Prefect's import, while the Ray head starts

            # Forked now, the Prefect server starts with Prefect imported.
            stack.start(prefect=not os.environ.get("PREFECT_API_URL"))

            run = resolve(request, configs) if answers else resolve_stored(request, store)
            if own_ray and answers and stack.wait_ray(STOP.requested):
                prestart_workers(run)  # they start while the Prefect server does
            if stack.prefect is not None and not STOP.requested():
                flows.in_process.load_what_follows_the_work()
            if not stack.wait(STOP.requested):
                raise Interrupted(f"run {run.run_id} interrupted by {STOP.name} before any request")
            collector.imported()
            result = _run(run.request, retry_errors, stack.prefect_url, answers)
            failed = False
            return result
    except (*user_errors(), Interrupted, RunFailed):
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


def _attach_to_running_stack() -> None:
    """Use the Prefect server (and Ray head) `evalfleet up` keeps running, unless the
    environment names others."""
    from stack.up import attach, ray_client_env

    if os.environ.get("PREFECT_API_URL"):
        return
    stack = attach()
    if stack is None:
        return
    os.environ["PREFECT_API_URL"] = stack.api_url
    if "prefect" in sys.modules:  # Prefect reads its settings when imported (the launcher)
        from flows.settings import refresh_prefect_settings

        refresh_prefect_settings()
    where = f"Prefect {stack.prefect.address}"
    if stack.ray is not None and not os.environ.get("RAY_ADDRESS"):
        os.environ.update(ray_client_env(stack))
        if "ray" in sys.modules:  # Ray reads its auth settings at import
            from ray._raylet import Config

            Config.initialize("")
        where += f", Ray {stack.ray.address}"
    print(f"using the running evalfleet stack ({where})", file=sys.stderr, flush=True)


def _run(
    request: EvalRequest, retry_errors: bool, prefect_url: str | None, answers: bool
) -> dict[str, Any]:
    """The flow in this process; the same steps without Prefect if its server is lost."""
    from flows.in_process import PrefectLost, run_flow_here, say_lost

    try:
        return run_flow_here(request, retry_errors, prefect_url, answers=answers)
    except PrefectLost as lost:
        say_lost(str(lost))
        return run_without_prefect(request, retry_errors=retry_errors, answers=answers)


def run_without_prefect(
    request: EvalRequest, *, retry_errors: bool = True, answers: bool = True
) -> dict[str, Any]:
    """`evaluate-and-aggregate` (or `judge`) without a Prefect server: the same steps."""
    from engine.judges import NothingGraded, left_as_it_was_unless_graded, resolve_stored
    from storage import open_store

    store = open_store(request.store, s3_endpoint_url=request.s3_endpoint_url)
    kept: contextlib.AbstractContextManager = contextlib.nullcontext()
    if not answers:  # a judge-only run resolves from the store, not from the dataset
        resolve_stored(request, store)
        judge = request.judges()[-1]
        kept = left_as_it_was_unless_graded(store, request.resolved_run_id(), judge)
    try:
        with kept, heartbeat.beating(final="finished"):
            return _whole_job_here(request, store, retry_errors, answers)
    except NothingGraded as exc:  # nothing to do: the run is as it was
        return {"run_id": request.resolved_run_id(), "unchanged": str(exc)}


def _whole_job_here(
    request: EvalRequest, store: Store, retry_errors: bool, answers: bool
) -> dict[str, Any]:
    """The steps of `run_without_prefect`, within the run's heartbeat."""
    from engine.aggregate import aggregate_run
    from engine.evaluate import evaluate_run
    from engine.judges import check_graded
    from reports.leaderboard import update
    from reports.report import write_report_or_warn

    evaluated = evaluate_run(request, retry_errors=retry_errors, answers=answers)
    if evaluated.get("stopped"):
        raise Interrupted(interrupted_message(evaluated))
    if evaluated.get("batch_jobs_open"):
        heartbeat.finish_all("batches open")
        return {**evaluated, "store": None}
    if not answers:
        check_graded(store, request, evaluated)
    result = aggregate_run(store, evaluated["run_id"])
    result["report"] = write_report_or_warn(store, evaluated["run_id"], result["version"])
    try:
        update(store)
    except Exception as exc:  # the tables are written; the leaderboard can wait
        print(f"the leaderboard was not updated: {exc}", file=sys.stderr)
    if evaluated.get("budget_reached"):
        result["budget_reached"] = evaluated["budget_reached"]
        result["finish_cap_usd"] = evaluated.get("finish_cap_usd")
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


def resume_hint(run_id: str, max_cost_usd: float | None = None) -> str:
    """The command that resumes this run: the same command line, with its run id (as --run-id
    unless the command line names it), and `max_cost_usd` as its cap when given."""
    args = sys.argv[1:]
    if max_cost_usd is not None:
        args = _without_option(args, "--max-cost-usd") + ["--max-cost-usd", f"{max_cost_usd:g}"]
    named = run_id in args or any(a.startswith("--run-id=") for a in args)
    if not named:
        args = [*args, "--run-id", run_id]
    return "evalfleet " + " ".join(shlex.quote(a) for a in args)


def _without_option(args: list[str], option: str) -> list[str]:
    """`args` without `option VALUE` and `option=VALUE`."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == option:
            skip = True
        elif not arg.startswith(option + "="):
            out.append(arg)
    return out
