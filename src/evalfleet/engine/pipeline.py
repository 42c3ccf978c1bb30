"""A run's steps, written once: plan, ask what the store lacks (online, then again for the
stored records the plan did not read and that turn out undecodable, then the batch rounds),
score and write the tables and the report, refresh the leaderboard.

`Steps` says how each step runs. The command line without Prefect runs the plain functions
(`plain_steps`); the Prefect flows run the same functions as tasks (`flows.steps`). The run
arrives resolved (`engine.prepare.resolve`), as an argument: the command line resolves it once, for
its checks, and hands that object on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalfleet.engine.generation.batches import run_batches
from evalfleet.engine.generation.online import generate
from evalfleet.engine.judges import NothingGraded, check_graded, left_as_it_was_unless_graded
from evalfleet.engine.prepare.plan import RunPlan, plan, recheck, report_plan
from evalfleet.engine.prepare.resolve import ResolvedRun
from evalfleet.engine.run.interrupts import STOP
from evalfleet.engine.run.outcome import RunOutcome, check_done
from evalfleet.engine.store import heartbeat
from evalfleet.storage.base import Store

Tables = dict[
    str, Any
]  # what an aggregation returns (`evalfleet.engine.scoring.aggregate.aggregate_run`)


@dataclass(frozen=True)
class Steps:
    """How each step of a run is carried out."""

    plan: Callable[[ResolvedRun, bool], RunPlan]
    generate: Callable[[RunPlan], RunOutcome]
    recheck: Callable[[RunPlan], RunPlan | None]  # the records the plan did not read
    batches: Callable[[RunPlan, bool], RunOutcome]
    aggregate: Callable[[Store, str], Tables]  # scores, writes the tables and the report
    leaderboard: Callable[[Store], None]


@dataclass
class JobResult:
    """What a whole job did: the evaluation, and the tables when it came to them."""

    outcome: RunOutcome
    tables: Tables | None = None
    unchanged: str | None = None  # a judge that found nothing to grade: the run as it was


def plan_step(run: ResolvedRun, retry_errors: bool = True) -> RunPlan:
    """Open the run and find what is left to ask (only judgements when `run.answers` is
    off)."""
    run_plan = plan(run, retry_errors=retry_errors, answers=run.answers)
    report_plan(run_plan)
    return run_plan


def batch_step(run_plan: RunPlan, retry_errors: bool = True) -> RunOutcome:
    """The batch-mode items of the run, after the online ones (see engine/batches.py)."""
    request = run_plan.run.request
    return run_batches(
        run_plan.run, wait=request.batch_wait, after_online=True, retry_errors=retry_errors
    )


def plain_steps(
    report: Callable[[Store, str, str], str | None] | None = None,
    leaderboard: Callable[[Store], None] | None = None,
) -> Steps:
    """The steps as plain calls in this process; `report` writes a results version's report
    and `leaderboard` rebuilds the store's (both in `reports/`, which the engine does not
    import; without them, neither is written)."""
    from evalfleet.engine.scoring.aggregate import aggregate_run

    def aggregate(store: Store, run_id: str) -> Tables:
        tables = aggregate_run(store, run_id)
        tables["report"] = report(store, run_id, tables["version"]) if report else None
        return tables

    return Steps(
        plan_step, generate, recheck, batch_step, aggregate, leaderboard or (lambda _: None)
    )


def evaluate(run: ResolvedRun, steps: Steps, retry_errors: bool = True) -> RunOutcome:
    """Plan, ask online, read back the stored records the plan counted without reading them
    (asking again those that are undecodable: the first requests need not wait for 500,000
    reads), then the batch rounds; RunFailed when the run did not do its job."""
    with STOP.handling():
        run_plan = steps.plan(run, retry_errors)
        if STOP.requested():
            return RunOutcome(run.run_id, stopped=True)
        outcome = steps.generate(run_plan)
        if run_plan.unverified and not ended(outcome):
            again = steps.recheck(run_plan)
            if again is not None:
                outcome.add(steps.generate(again))
        if needs_batches(run, outcome):
            outcome.add(steps.batches(run_plan, retry_errors))
        check_done(outcome)  # a run that did not do its job fails here, before any table
        return outcome


def ended(outcome: RunOutcome) -> bool:
    """Whether the online step ended the run short (a stop, a failure, the cost cap)."""
    return bool(outcome.stopped or outcome.failed or outcome.budget_reached or STOP.requested())


def needs_batches(run: ResolvedRun, outcome: RunOutcome) -> bool:
    """After the online step: whether the batch rounds follow (the cost cap ends the run,
    and so do a record that could not be stored and a model whose every call failed)."""
    if outcome.budget_reached:
        heartbeat.finish_all("budget reached")
        return False
    return run.request.uses_batches() and not (outcome.stopped or outcome.failed)


def whole_job(run: ResolvedRun, steps: Steps, retry_errors: bool = True) -> JobResult:
    """Evaluate, then score, write the tables and the report, refresh the leaderboard. A
    stop leaves the result at the evaluation (`outcome.stopped`); so do batch jobs left
    open (the poller writes the tables once they end)."""
    kept: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    if not run.answers:  # a judge added to a stored run: left as it was unless it grades
        kept = left_as_it_was_unless_graded(run.store, run.run_id, run.judges[-1])
    try:
        with kept, heartbeat.beating(final="finished"):
            outcome = evaluate(run, steps, retry_errors)
            if outcome.stopped:
                return JobResult(outcome)
            if outcome.batch_jobs_open:
                heartbeat.finish_all("batches open")
                return JobResult(outcome)
            if not run.answers:
                check_graded(run.store, run.request)
            tables = steps.aggregate(run.store, run.run_id)
            steps.leaderboard(run.store)
            return JobResult(outcome, tables)
    except NothingGraded as exc:  # nothing to do: the run is as it was
        return JobResult(RunOutcome(run.run_id), unchanged=str(exc))
