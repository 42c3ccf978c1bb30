"""Planning a run: open (or resume) it and find what is left to ask, from one listing of the
store. Items in batch jobs that have not ended are not left: they are being answered."""

from __future__ import annotations

import logging
from array import array
from collections import Counter
from dataclasses import dataclass, field, replace

from evalfleet.core.types import Part
from evalfleet.engine.prepare.listing_ahead import taken_ahead
from evalfleet.engine.prepare.resolve import ResolvedRun
from evalfleet.engine.prepare.reuse import reuse_answers, reuse_judgements
from evalfleet.engine.prepare.sweep import Swept, sweep, wanted_states
from evalfleet.engine.run.items import AnswerSpace, Todo, planned_judgements
from evalfleet.engine.run.state import (
    Listing,
    Reconciled,
    list_records,
    quarantine,
    read_records,
    reconcile,
    stored_spend,
    undecodable,
)
from evalfleet.engine.store import heartbeat
from evalfleet.engine.store.manifest import open_run
from evalfleet.storage import layout
from evalfleet.tasks import batch_jobs
from evalfleet.tasks.work import WorkItem

log = logging.getLogger("evalfleet")


@dataclass
class RunPlan:
    run: ResolvedRun
    event: str  # new, resumed, extended
    planned: int  # answers the run asks in all
    todo: Todo  # the answers left to ask, made one at a time when sent
    judge_todo: list[tuple[WorkItem, list[Part]]]
    states: Counter[str]
    judge_states: Counter[str] = field(default_factory=Counter)
    quarantined: int = 0
    spent_usd: float = 0.0  # what the stored records cost (read only when a cap is set)
    jobs: list[batch_jobs.Job] = field(default_factory=list)  # the run's batch jobs
    # Records counted done (or failed, not asked again) without being read: a local store's,
    # read back once the first requests are out (`recheck`).
    unverified: list[str] = field(default_factory=list)

    def online_part(self) -> RunPlan:
        """The items to ask online: all of them, but those of models in batch mode (a failed
        batch line goes online when the request says so)."""
        request = self.run.request
        if not request.uses_batches():
            return self
        attempts = batch_jobs.attempts_so_far(self.jobs)

        def online(item: WorkItem) -> bool:
            return not request.batched(item.key.caller, attempts.get(item.request_hash, 0))

        return replace(
            self,
            todo=self.todo.where(online),
            judge_todo=[(j, p) for j, p in self.judge_todo if online(j)],
        )

    def batch_part(self) -> list[tuple[WorkItem, list[Part]]]:
        """The items to send in batch jobs, each with its prompt."""
        online = self.online_part()
        asked = {i.request_hash for i in online.todo}
        asked |= {j.request_hash for j, _ in online.judge_todo}
        data = self.run.data
        items = [(i, data[i.key.benchmark].by_id[i.key.sample_id].parts) for i in self.todo]
        items += self.judge_todo
        return [(i, p) for i, p in items if i.request_hash not in asked]


def plan(run: ResolvedRun, *, retry_errors: bool = True, answers: bool = True) -> RunPlan:
    """Open (or resume) the run and find what is left to ask.

    The plan reads no record but the answers its judgements are made from: on a local store
    the others counted done are read back after the first requests (`recheck`), and an
    undecodable one is moved to quarantine/ and asked again then. On S3 the listing's sizes
    catch empty records (`evalfleet status` reads them all). `answers` False asks nothing of
    the evaluated models: only the judgements of the answers stored (a judge added to a
    finished run).
    """
    event = open_run(run.store, run.manifest, run.data, run.request.extend)
    if run.request.reuse_from:  # before the heartbeat writes the manifest
        if answers and run.answers:
            reuse_answers(run.store, run, run.request.reuse_from)
        reuse_judgements(run.store, run, run.request.reuse_from)
    heartbeat.start(run.store, run.run_id)
    return plan_items(run, event, retry_errors=retry_errors, answers=answers)


def plan_items(
    run: ResolvedRun, event: str, *, retry_errors: bool = True, answers: bool = True
) -> RunPlan:
    """What is left to ask of an open run, from one listing of the store."""
    request, store, run_id = run.request, run.store, run.run_id
    asked = answers and run.answers
    space = AnswerSpace(run)
    stages = (layout.ANSWER, layout.JUDGE) if space.judged else (layout.ANSWER,)
    wanted = wanted_states(retry_errors)
    jobs = batch_jobs.read_jobs(store, run_id) if request.uses_batches() else []
    busy = batch_jobs.in_open_jobs(jobs)
    ahead = taken_ahead(store, run_id, stages, wanted)
    if isinstance(ahead, Swept) and not busy:  # swept by the listing child (no job open)
        listing, swept = Listing(), ahead
    else:
        listing = ahead if isinstance(ahead, Listing) else list_records(store, run_id, stages)
        swept = sweep(space, listing, wanted, busy)
    todo, unverified = swept.todo, swept.unverified
    judged = swept.judged
    if swept.judged_places:  # the judgements to plan need the stored answers' texts
        read_records(store, judged, list(judged.record_key.values()))
        for place, item in swept.judged_places:
            state = judged.state[item.key]
            swept.states[state] += 1
            if state in wanted:
                if item.request_hash not in busy:
                    todo.append(place)
            elif (key := judged.record_key.get(item.key)) and key not in judged.records:
                unverified.append(key)
        todo = array("q", sorted(todo))
    judge_items = planned_judgements(run, judged)
    judge_state = reconcile(store, listing, [j for j, _ in judge_items], read=False)
    bad = [*swept.empty, *judged.undecodable, *judge_state.undecodable]
    quarantine(store, run_id, bad)
    spent = stored_spend(store, run_id) if request.max_cost_usd is not None else 0.0
    local = store.writes_are_local
    return RunPlan(
        run=run,
        event=event,
        planned=len(space),
        todo=Todo(space, todo if asked else ()),
        judge_todo=[
            (j, p)
            for j, p in judge_items
            if judge_state.state[j.key] in wanted and j.request_hash not in busy
        ],
        states=swept.states,
        judge_states=Counter(judge_state.state.values()),
        quarantined=len(bad),
        spent_usd=spent,
        jobs=jobs,
        unverified=[*unread([judge_state], wanted), *(unverified if asked else [])]
        if local
        else [],
    )


def unread(states: list[Reconciled], wanted: set[str]) -> list[str]:
    """The records of items kept as stored (their state not in `wanted`) that were not read."""
    return [
        record_key
        for state in states
        for key, record_key in state.record_key.items()
        if record_key not in state.records and state.state[key] not in wanted
    ]


def recheck(run_plan: RunPlan) -> RunPlan | None:
    """Read back the records the plan counted without reading them; the undecodable ones
    are moved to quarantine/ and their items planned again (None when every one decodes).
    What else is left (a terminal error of the first pass) is not asked twice."""
    run = run_plan.run
    bad = undecodable(run.store, run_plan.unverified)
    if not bad:
        return None
    log.warning(
        "%d stored records were undecodable: moved to quarantine/ and asked again", len(bad)
    )
    quarantine(run.store, run.run_id, bad)
    items = {name.item for name in layout.parse_record_keys(run.run_id, bad)}
    again = plan_items(run, "resumed", retry_errors=False)
    return replace(
        again,
        todo=again.todo.where(lambda i: i.key in items),
        judge_todo=[(j, p) for j, p in again.judge_todo if j.key in items],
        quarantined=len(bad),
        unverified=[],
    )


def report_plan(run_plan: RunPlan) -> None:
    states = run_plan.states
    log.info(
        "run %s (%s): %d answers — %d done, %d failed, %d stale, %d missing; %d to request",
        run_plan.run.run_id,
        run_plan.event,
        run_plan.planned,
        states["done"],
        states["failed"],
        states["stale"],
        states["missing"],
        len(run_plan.todo),
    )
    if run_plan.judge_states or run_plan.judge_todo:
        log.info(
            "judgements of stored answers: %d done, %d to request",
            run_plan.judge_states["done"],
            len(run_plan.judge_todo),
        )
    if states["stale"]:
        log.warning(
            "%d stored answers were asked differently (prompt, settings or dataset changed): "
            "they are kept and asked again",
            states["stale"],
        )
    if run_plan.quarantined:
        log.warning(
            "%d stored records were undecodable: moved to quarantine/ and asked again",
            run_plan.quarantined,
        )
