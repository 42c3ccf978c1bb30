"""Feed work items to the worker actors with bounded concurrency, per model and overall.

Items go to a worker in chunks (`CompletionWorker.submit`) and come back in chunks as they
land (`collect`, one outstanding per worker): a few actor calls per dozens of items. Models
take turns, so one slow or rate-limited model never starves the others. Judgements join the
queue as the answers they grade arrive (`follow_up`). A stop request (Ctrl-C, SIGTERM) ends
submission at once; calls already in flight get `drain_s` seconds to land (their records are
checkpointed by the workers), then the rest are cancelled.

A worker lost with its node is replaced, and the items it had in flight are sent again
marked `recheck`: the new worker first looks for a record the lost one may have stored, so
nothing stored is asked twice. A budget (`--max-cost-usd`, `tasks.budget`) holds back an item
whose reservation it refuses until the calls in flight settle, and ends submission when it
refuses one with nothing in flight. A record that cannot be stored ends submission at once:
the calls in flight land (their records are written if they can be), nothing more is sent. A
model whose every call fails with an error of its endpoint's (`tasks.endpoints`) is not asked
again. A Ray head that stops answering (`tasks.head`) ends the run: nothing more is sent or
replaced, and the calls in flight are counted as sent and not stored.

What is left when the run ends is counted by what was sent: `abandoned` were asked and have
no record (in flight when the drain time ran out or the head was lost, or sent by a lost
worker and not sent again), so they may have been paid for; `not_started` were never sent.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sized
from dataclasses import dataclass, field
from typing import Any

import ray
import ray.exceptions

from evalfleet.core.types import Part
from evalfleet.storage.layout import ItemKey
from evalfleet.tasks.budget import Budget
from evalfleet.tasks.endpoints import Endpoints
from evalfleet.tasks.head import HeadWatch
from evalfleet.tasks.pool import Crew
from evalfleet.tasks.work import WorkItem
from evalfleet.tasks.worker import ClaimLost, Outcome

ProgressCallback = Callable[[list[Outcome]], None]
FollowUp = Callable[[Outcome], list[tuple[WorkItem, list[Part]]]]
log = logging.getLogger("evalfleet.dispatch")

WORKER_LOST = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)
CHUNK = 64  # items per submit
BLOCK = 2048  # jobs taken from the source at a time, when none queued can be sent
POLL_S = 0.2  # how often the loop looks at a stop request when nothing lands


@dataclass
class Dispatched:
    """What happened, in counts: the outcomes themselves are handed to `on_progress` and
    `follow_up` as they land and not kept (a run of a million items would hold them all)."""

    submitted: int = 0  # outcomes received
    statuses: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)  # terminal errors by kind
    cost_usd: Counter[str] = field(default_factory=Counter)  # by stage
    stopped: bool = False  # a stop was requested before everything was submitted
    abandoned: int = 0  # sent, and no record came back: may have been paid for
    not_started: int = 0  # never sent
    redispatched: int = 0  # sent again after their worker was lost
    budget_reached: bool = False
    write_failed: str = ""  # the first record that could not be stored, and why
    down: dict[str, str] = field(default_factory=dict)  # caller -> its endpoint's last error
    head_lost: str = ""  # the Ray head stopped answering: what the watch said

    def count(self, outcomes: list[Outcome]) -> None:
        self.submitted += len(outcomes)
        for outcome in outcomes:
            self.statuses[outcome.status] += 1
            if outcome.error_kind:
                self.errors[outcome.error_kind] += 1
            self.cost_usd[outcome.key.stage] += outcome.cost_usd


@dataclass
class _Worker:
    actor: Any
    outstanding: dict[ItemKey, tuple[WorkItem, Any]] = field(default_factory=dict)


def dispatch(
    jobs: Iterable[tuple[WorkItem, Any]],
    crew: Crew,
    workers: list[Any],
    *,
    max_in_flight: int,
    per_model_limit: dict[str, int],
    on_progress: ProgressCallback | None = None,
    follow_up: FollowUp | None = None,
    stop_requested: Callable[[], bool] = lambda: False,
    drain_s: float = 10.0,
    budget: Budget | None = None,
    head: HeadWatch | None = None,
) -> Dispatched:
    """Run every job on the crew's `workers` (claimed, see `evalfleet.tasks.pool`); never more than
    the limits in flight. The workers, replacements included, are ended with the crew.

    A job is (item, prompt): the prompt is a sample's index in the workers' `samples` or,
    for a judgement, the list of its parts itself. Jobs are taken from `jobs` a block at a
    time, when no queued one can be sent: a run of a million items never queues them all.
    """
    pool = [_Worker(w) for w in workers]
    queues: dict[str, deque[tuple[WorkItem, Any]]] = {}
    endpoints = Endpoints()
    result = Dispatched()
    source = iter(jobs)
    total = len(jobs) if isinstance(jobs, Sized) else None
    taken = 0  # jobs taken from `source`

    def enqueue(item: WorkItem, prompt: Any, front: bool = False) -> None:
        if item.key.caller in result.down:  # its endpoint is down: not asked in this run
            unsent([(item, prompt)])
            return
        queue = queues.setdefault(item.key.caller, deque())
        (queue.appendleft if front else queue.append)((item, prompt))

    def take(block: int) -> bool:
        """Queue up to `block` more jobs; False when there are none left."""
        nonlocal taken
        before = taken
        for item, prompt in itertools.islice(source, block):
            taken += 1
            enqueue(item, prompt)
        return taken > before

    def unsent(left: Iterable[tuple[WorkItem, Any]]) -> None:
        """Count jobs this run will not send: one sent by a worker lost since (`recheck`) was
        asked all the same."""
        for item, _ in left:
            if item.recheck:
                result.abandoned += 1
            else:
                result.not_started += 1

    def left_untaken() -> int:
        nonlocal total
        if total is None:  # counted once, by running through what is left
            total = taken + sum(1 for _ in source)
        return total - taken

    busy: Counter[str] = Counter()  # in flight per model
    retired: list[Any] = []  # replaced workers, ended with the others
    collecting: dict[Any, int] = {}  # a collect call in flight -> its worker

    def in_flight() -> int:
        return sum(len(w.outstanding) for w in pool)

    def limit(model: str) -> int:
        most = per_model_limit.get(model, 1 << 30)
        probe = budget.limit(model) if budget is not None else None
        return most if probe is None else min(most, probe)

    def wanting() -> bool:
        """Whether a model could send more than is queued for it: only then are more jobs
        taken (a model at its limit keeps what it has queued; the source has every model's
        items interleaved, so a slow model's share waits in its queue)."""
        return not queues or any(not q and busy[m] < limit(m) for m, q in queues.items())

    def fill() -> None:
        """Take items, models in turn, up to the limits; send them in chunks, each to the
        least busy worker. A model whose next item the budget refuses waits for the calls in
        flight to settle; refused with nothing in flight, the budget is reached."""
        room = max_in_flight - in_flight()
        picked: list[tuple[WorkItem, Any]] = []
        refused: set[str] = set()
        while room > 0:
            progressed = False
            for model, queue in queues.items():
                if not queue or model in refused or busy[model] >= limit(model):
                    continue
                item, prompt = queue[0]
                if budget is not None and not budget.reserve(item, prompt):
                    refused.add(model)
                    continue
                queue.popleft()
                picked.append((item, prompt))
                busy[model] += 1
                room -= 1
                progressed = True
                if room <= 0:
                    break
            if progressed:
                continue
            if refused or not wanting() or not take(max(room, BLOCK)):
                break
        if refused and not picked and not in_flight():
            result.budget_reached = True
        for start in range(0, len(picked), CHUNK):
            chunk = picked[start : start + CHUNK]
            worker = min(pool, key=lambda w: len(w.outstanding))
            for item, prompt in chunk:
                worker.outstanding[item.key] = (item, prompt)
            # its outcomes come back through `collect`
            worker.actor.submit.remote(crew.claim, chunk)

    def lost(index: int, exc: Exception) -> None:
        """The worker died (node lost) or no longer serves the run's claim: replace it and
        send its items again, rechecked."""
        worker = pool[index]
        if head is not None and not head.answers():  # the head is lost: nothing is replaced
            return
        if isinstance(exc, ClaimLost) or _is_dead(worker.actor):
            log.warning("a worker was lost (%s); starting a replacement", type(exc).__name__)
            pool[index] = _Worker(crew.new())
            retired.append(worker.actor)
            for item, prompt in worker.outstanding.values():
                busy[item.key.caller] -= 1
                if budget is not None:
                    budget.settle(item.key, None)
                enqueue(dataclasses.replace(item, recheck=True), prompt, front=True)
                result.redispatched += 1
        else:  # only unavailable for a moment: its items are still in it
            pool[index].outstanding = worker.outstanding

    def landed(index: int, outcomes: list[Outcome]) -> None:
        worker = pool[index]
        for outcome in outcomes:
            worker.outstanding.pop(outcome.key, None)
            caller = outcome.key.caller
            busy[caller] -= 1
            if budget is not None:
                budget.settle(outcome.key, (outcome.status, outcome.cost_usd))
            if outcome.status == "write_failed" and not result.write_failed:
                result.write_failed = f"{outcome.store_key}: {outcome.error}"
                log.error("a record could not be stored (%s): nothing more is sent", outcome.error)
            if endpoints.land(caller, outcome.status, outcome.error_kind, outcome.error):
                result.down[caller] = error = endpoints.down()[caller]
                unsent(queues.pop(caller, ()))
                log.error("every call to %s failed (%s): it is not asked again", caller, error)
        result.count(outcomes)
        if follow_up is not None:
            for outcome in outcomes:
                for item, parts in follow_up(outcome):
                    enqueue(item, parts)
        if on_progress is not None and outcomes:
            on_progress(outcomes)

    def collect(timeout: float) -> None:
        # One collect in flight per worker, even an idle one: it keeps the claim alive.
        for index, worker in enumerate(pool):
            if index not in collecting.values():
                collecting[worker.actor.collect.remote(crew.claim)] = index
        if not collecting:
            return
        ready, _ = ray.wait(list(collecting), num_returns=1, timeout=timeout)
        if ready:
            more, _ = ray.wait(list(collecting), num_returns=len(collecting), timeout=0)
            ready = list(dict.fromkeys([*ready, *more]))
        for ref in ready:
            index = collecting.pop(ref)
            try:
                outcomes = ray.get(ref)
            except WORKER_LOST as exc:
                lost(index, exc)
                continue
            except ray.exceptions.RayTaskError as exc:
                if not isinstance(exc.cause, ClaimLost):
                    raise
                lost(index, exc.cause)
                continue
            landed(index, outcomes)

    def head_lost() -> bool:
        if head is not None and not result.head_lost:
            result.head_lost = head.lost() or ""
        return bool(result.head_lost)

    def unsent_in_workers() -> int:
        """Of the items still in flight, how many no request went out for (each worker is
        asked; one that does not answer within a second counts all its own as sent)."""
        asks = {
            worker.actor.unsent.remote(crew.claim, list(worker.outstanding)): worker
            for worker in pool
            if worker.outstanding
        }
        ready, _ = ray.wait(list(asks), num_returns=len(asks), timeout=1.0)
        count = 0
        for ref in ready:
            try:
                count += len(ray.get(ref))
            except (*WORKER_LOST, ray.exceptions.RayTaskError):
                continue
        return count

    def sending() -> bool:
        return not (stop_requested() or result.write_failed or head_lost())

    try:
        if sending():
            fill()
        # After a failed write nothing more is sent, but what is in flight lands.
        while in_flight() and not stop_requested() and not head_lost():
            collect(timeout=POLL_S)
            if sending():
                fill()
        left = sum(len(q) for q in queues.values()) + left_untaken()
        ended = result.budget_reached or bool(result.write_failed) or head_lost()
        result.stopped = not head_lost() and bool(in_flight() or (left and not ended))
        if in_flight() and not head_lost():
            deadline = time.monotonic() + drain_s
            while in_flight() and time.monotonic() < deadline and not head_lost():
                collect(timeout=min(POLL_S, max(0.0, deadline - time.monotonic())))
        if in_flight() and not head_lost():
            never_asked = unsent_in_workers()
            result.not_started += never_asked
            result.abandoned += in_flight() - never_asked
        else:
            result.abandoned += in_flight()
        for queue in queues.values():
            unsent(queue)
        result.not_started += left_untaken()
        result.down.update(endpoints.down())
    finally:
        if not head_lost():  # with the head gone there is no one to cancel or end them
            for ref in collecting:
                ray.cancel(ref)
            crew.end([*(w.actor for w in pool), *retired])
    return result


def _is_dead(actor: Any) -> bool:
    """Whether an actor is gone for good (a plain call fails at once with RayActorError)."""
    try:
        ray.get(actor.ready.remote(), timeout=5)
        return False
    except WORKER_LOST:
        return True
    except ray.exceptions.GetTimeoutError:
        return False
