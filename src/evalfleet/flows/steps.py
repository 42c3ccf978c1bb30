"""The engine's steps (`engine.pipeline`) as coarse Prefect tasks: plan the run, ask what the
store lacks, read back the records the plan did not read, the batch rounds, the tables; the
leaderboard refresh. The plan goes to the next tasks quoted: Prefect would otherwise walk every
work item in it looking for futures (8 s and 20 MB for 50,000 items)."""

from __future__ import annotations

from typing import TypeVar, cast

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from evalfleet.engine.generation.online import generate
from evalfleet.engine.pipeline import Steps, batch_step, plan_step
from evalfleet.engine.prepare.plan import RunPlan, recheck
from evalfleet.engine.prepare.resolve import ResolvedRun
from evalfleet.engine.run.outcome import RunOutcome
from evalfleet.flows.aggregate import aggregate_task
from evalfleet.flows.leaderboard import refresh

T = TypeVar("T")


def transient(task, task_run, state) -> bool:
    """Retry a task only for infrastructure trouble (a Ray worker or node lost, a dropped
    connection); a configuration or input error fails at once."""
    import ray.exceptions

    exc = state.data if isinstance(state.data, BaseException) else None
    return isinstance(
        exc,
        ray.exceptions.RayActorError
        | ray.exceptions.RaySystemError
        | ray.exceptions.ObjectLostError
        | ConnectionError
        | TimeoutError,
    )


@task(name="plan-run", cache_policy=NO_CACHE, persist_result=False)
def plan_task(run: ResolvedRun, retry_errors: bool = True) -> RunPlan:
    return plan_step(run, retry_errors)


@task(
    name="generate",
    cache_policy=NO_CACHE,
    persist_result=False,
    retries=2,
    retry_delay_seconds=5,
    retry_condition_fn=transient,
)
def generate_task(run_plan: RunPlan) -> RunOutcome:
    return generate(run_plan)


@task(name="recheck-records", cache_policy=NO_CACHE, persist_result=False)
def recheck_task(run_plan: RunPlan) -> RunPlan | None:
    return recheck(run_plan)


@task(name="batch-rounds", cache_policy=NO_CACHE, persist_result=False)
def batch_task(run_plan: RunPlan, retry_errors: bool = True) -> RunOutcome:
    return batch_step(run_plan, retry_errors)


def _as_is(value: T) -> T:
    """`value` passed to a task as it is: Prefect does not walk a quoted argument looking for
    futures (a plan holds thousands of items); the task receives the value itself."""
    return cast(T, quote(value))


def prefect_steps(run_id: str | None = None) -> Steps:
    """The steps of `evalfleet.engine.pipeline`, each a task of the flow run they are called in
    (the leaderboard reads `run_id`'s rows again, the others' it keeps)."""
    return Steps(
        plan=lambda run, retry_errors: plan_task(_as_is(run), retry_errors),
        generate=lambda run_plan: generate_task(_as_is(run_plan)),
        recheck=lambda run_plan: recheck_task(_as_is(run_plan)),
        batches=lambda run_plan, retry_errors: batch_task(_as_is(run_plan), retry_errors),
        aggregate=aggregate_task,
        leaderboard=lambda store: refresh(store, run_id),
    )
