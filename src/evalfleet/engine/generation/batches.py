"""Batch rounds: send a run's batch-mode items as batch jobs, poll them without holding any
worker, write their results as ordinary records, and go on until the run is complete.

A round plans the run again from the store (answers still missing, the judgements of new
answers, the lines to ask again), asks the online part on Ray, sends jobs whose submission
is uncertain only if the provider does not know them, submits the batch part as new jobs,
and polls the jobs that have not ended, writing the results of those that have.
`evalfleet run --batch` repeats rounds every `batch_poll_s` until nothing is left;
`poll_store` (the `poll-batches` flow, on a short interval) does one round for each run of a
store with jobs open, and aggregates the runs it completes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

from evalfleet.core.record import Record
from evalfleet.engine.generation.online import generate
from evalfleet.engine.prepare.plan import RunPlan, plan_items
from evalfleet.engine.prepare.resolve import ResolvedRun
from evalfleet.engine.run.interrupts import STOP
from evalfleet.engine.run.items import judge_item
from evalfleet.engine.run.outcome import RunOutcome
from evalfleet.providers.batch import BatchLine, make_batch_client
from evalfleet.storage.base import Store
from evalfleet.tasks import batch_jobs
from evalfleet.tasks.batch_jobs import read_jobs as read_jobs  # what status views read

if TYPE_CHECKING:
    from evalfleet.core.types import Part
    from evalfleet.tasks.work import WorkItem

log = logging.getLogger("evalfleet")


def run_batches(
    run: ResolvedRun, *, wait: bool, after_online: bool, retry_errors: bool = False
) -> RunOutcome:
    """Rounds until no job is open and nothing is left to ask (or once, without `wait`).

    `after_online`: the online items were just asked (`engine.generation.online.generate`);
    the first
    round only submits the batch part, with `retry_errors` as the command asked. Later rounds plan
    with `retry_errors` off: a terminal error is asked once per command, as online.
    """
    totals: Counter[str] = Counter()
    result = RunOutcome(run.run_id)
    first = True
    while True:
        run_plan = plan_items(run, "resumed", retry_errors=retry_errors and first)
        online = run_plan.online_part()
        asked = 0
        if (online.todo or online.judge_todo) and not (first and after_online):
            outcome = generate(online)
            asked = outcome.submitted
            totals["online"] += asked
            result.add(outcome)
            if outcome.stopped or outcome.failed:  # `check_done` tells a failure
                break
        first = False
        done = asyncio.run(_round(run_plan))
        totals.update(done)
        open_jobs = [j for j in run_plan.jobs if j.state != "ended"]
        if done:
            said = ", ".join(f"{k} {n}" for k, n in done.items())
            log.info("batch round: %s; %d jobs open", said, len(open_jobs))
        if not open_jobs and not asked and not done:
            break  # nothing sent, nothing ended: nothing can follow
        if not wait or STOP.requested():
            break
        if open_jobs:
            deadline = time.monotonic() + run.request.batch_poll_s
            while time.monotonic() < deadline and not STOP.requested():
                time.sleep(0.2)
            if STOP.requested():
                break
    still_open = [j for j in batch_jobs.read_jobs(run.store, run.run_id) if j.state != "ended"]
    result.batch = totals
    result.batch_jobs_open = len(still_open)
    result.batch_lines_open = sum(len(j.items) for j in still_open)
    result.stopped = result.stopped or STOP.requested()
    return result


async def _round(run_plan: RunPlan) -> Counter[str]:
    run = run_plan.run
    request = run.request
    done: Counter[str] = Counter()
    clients: dict[str, Any] = {}

    def client(caller: str) -> Any:
        if caller not in clients:
            key = run.keys[caller].reveal()
            clients[caller] = make_batch_client(run.configs[caller], key)
        return clients[caller]

    try:
        for job in run_plan.jobs:
            if job.state == "intent":
                if await batch_jobs.recover(run.store, client(job.caller), job):
                    done["recovered"] += 1
                else:  # it never arrived: send it now, as planned
                    await batch_jobs.submit(run.store, client(job.caller), job, lines_of(run, job))
                    done["resubmitted"] += 1
        attempts = batch_jobs.attempts_so_far(run_plan.jobs)
        by_caller: dict[str, list[tuple[WorkItem, list[Part]]]] = defaultdict(list)
        for item, parts in run_plan.batch_part():
            by_caller[item.key.caller].append((item, parts))
        for caller, items in by_caller.items():
            config = run.configs[caller]
            built = batch_jobs.build_jobs(
                run.run_id, caller, client(caller), config, items, attempts
            )
            for job, lines in built:
                await batch_jobs.submit(run.store, client(caller), job, lines)
                run_plan.jobs.append(job)
                done["submitted"] += 1
                done["lines_sent"] += len(lines)
        for job in run_plan.jobs:
            if job.state != "submitted":
                continue
            config = run.configs[job.caller]
            results = await batch_jobs.collect(
                run.store, client(job.caller), job, config, request.max_attempts
            )
            if results is not None:
                done["ended"] += 1
                done.update({f"lines_{k}": n for k, n in job.written.items() if n})
    finally:
        for c in clients.values():
            await c.aclose()
    return done


def lines_of(run: ResolvedRun, job: batch_jobs.Job) -> list[BatchLine]:
    """The lines of a job that was planned but never sent, rebuilt from the run's data."""
    lines = []
    for entry in job.items:
        item = entry.work_item(run.run_id)
        if item.key.stage == "answer":
            parts = run.data[item.key.benchmark].by_id[item.key.sample_id].parts
        else:
            parts = judge_parts(run, item)
        lines.append(BatchLine(entry.custom_id, parts, item.decoding))
    return lines


def judge_parts(run: ResolvedRun, item: WorkItem) -> list[Part]:
    """The grader prompt of a judgement item, from the stored answer it grades."""
    assert item.graded is not None  # a judgement item names the answer it grades
    graded_key = item.graded[0]
    record = Record.read(run.store.get(graded_key))
    response = (record.response if record else None) or ""
    made = judge_item(run, item.key.judge, item.key.graded(), graded_key, response)
    if made is None:
        raise RuntimeError(f"the judgement {item.key} no longer has a grader prompt")
    return made[1]


def open_job_runs(store: Store) -> list[str]:
    """Runs of a store with batch jobs that have not ended."""
    found = []
    for run_dir in store.list_dirs(""):
        run_id = run_dir.strip("/")
        if run_id == "leaderboard":
            continue
        if any(j.state != "ended" for j in batch_jobs.read_jobs(store, run_id)):
            found.append(run_id)
    return found


def poll_store(store: Store) -> dict[str, RunOutcome]:
    """One round for every run of a store with open jobs; aggregate the runs whose jobs have
    all ended (`batch_jobs_open` 0)."""
    from evalfleet.engine.prepare.resolve import resolve
    from evalfleet.engine.scoring.aggregate import aggregate_run
    from evalfleet.engine.store.manifest import require_manifest

    report: dict[str, RunOutcome] = {}
    started = time.monotonic()
    for run_id in open_job_runs(store):
        run = resolve(require_manifest(store, run_id).request)
        outcome = run_batches(run, wait=False, after_online=False)
        report[run_id] = outcome
        if outcome.batch_jobs_open == 0:
            log.info("run %s: every batch job has ended; aggregating", run_id)
            aggregate_run(store, run_id)
    log.info("polled %d runs in %.1f s", len(report), time.monotonic() - started)
    return report
