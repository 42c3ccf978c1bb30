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
from evalfleet.tasks.turns import Dispatched, Job, Turns
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
class _Worker:
    actor: Any
    outstanding: dict[ItemKey, Job] = field(default_factory=dict)


def dispatch(
    jobs: Iterable[Job],
    crew: Crew,
    workers: list[Any],
    *,
    max_in_flight: int | Callable[[], int],
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
    return Dispatcher(
        jobs,
        crew,
        workers,
        max_in_flight=max_in_flight,
        per_model_limit=per_model_limit,
        on_progress=on_progress,
        follow_up=follow_up,
        stop_requested=stop_requested,
        drain_s=drain_s,
        budget=budget,
        head=head,
    ).run()


class Dispatcher:
    """One run's hot loop (`dispatch`): a queue per model fed from the jobs, the workers with
    what each has in flight, and the counts of what happened (`result`)."""

    def __init__(
        self,
        jobs: Iterable[Job],
        crew: Crew,
        workers: list[Any],
        *,
        max_in_flight: int | Callable[[], int],  # a callable: read before each fill (a retune)
        per_model_limit: dict[str, int],
        on_progress: ProgressCallback | None = None,
        follow_up: FollowUp | None = None,
        stop_requested: Callable[[], bool] = lambda: False,
        drain_s: float = 10.0,
        budget: Budget | None = None,
        head: HeadWatch | None = None,
    ) -> None:
        self.crew = crew
        self.max_in_flight = max_in_flight
        self.on_progress = on_progress
        self.follow_up = follow_up
        self.stop_requested = stop_requested
        self.drain_s = drain_s
        self.head = head
        self.pool = [_Worker(w) for w in workers]
        self.retired: list[Any] = []  # replaced workers, ended with the others
        self.turns = Turns(per_model_limit, budget)
        self.collecting: dict[Any, int] = {}  # a collect call in flight -> its worker
        self.endpoints = Endpoints()
        self.result = Dispatched()
        self._source = iter(jobs)
        self._total = len(jobs) if isinstance(jobs, Sized) else None
        self.taken = 0  # jobs taken from the source

    def run(self) -> Dispatched:
        """Send until everything has landed or sending ends, let what is in flight land for
        `drain_s`, count what is left; the workers are ended however it ends."""
        try:
            self.send_all()
            self.result.stopped = self.stopped_early()
            self.drain()
            self.count_left()
        finally:
            self.end()
        return self.result

    # the queues

    def enqueue(self, item: WorkItem, prompt: Any, front: bool = False) -> None:
        if item.key.caller in self.result.down:  # its endpoint is down: not asked in this run
            self.unsent([(item, prompt)])
            return
        self.turns.push((item, prompt), front)

    def take(self, block: int) -> bool:
        """Queue up to `block` more jobs; False when there are none left."""
        before = self.taken
        for item, prompt in itertools.islice(self._source, block):
            self.taken += 1
            self.enqueue(item, prompt)
        return self.taken > before

    def unsent(self, left: Iterable[Job]) -> None:
        """Count jobs this run will not send: one sent by a worker lost since (`recheck`) was
        asked all the same."""
        for item, _ in left:
            if item.recheck:
                self.result.abandoned += 1
            else:
                self.result.not_started += 1

    def left_untaken(self) -> int:
        if self._total is None:  # counted once, by running through what is left
            self._total = self.taken + sum(1 for _ in self._source)
        return self._total - self.taken

    def in_flight(self) -> int:
        return sum(len(w.outstanding) for w in self.pool)

    # sending and landing

    def fill(self) -> None:
        """Take items, models in turn, up to the limits; send them in chunks, each to the
        least busy worker. A model whose next item the budget refuses waits for the calls in
        flight to settle; refused with nothing in flight, the budget is reached."""
        most = self.max_in_flight
        room = (most() if callable(most) else most) - self.in_flight()
        picked, refused = self.turns.pick(room, lambda n: self.take(max(n, BLOCK)))
        if refused and not picked and not self.in_flight():
            self.result.budget_reached = True
        for start in range(0, len(picked), CHUNK):
            chunk = picked[start : start + CHUNK]
            worker = min(self.pool, key=lambda w: len(w.outstanding))
            for item, prompt in chunk:
                worker.outstanding[item.key] = (item, prompt)
            # its outcomes come back through `collect`
            worker.actor.submit.remote(self.crew.claim, chunk)

    def lost(self, index: int, exc: Exception) -> None:
        """The worker died (node lost) or no longer serves the run's claim: replace it and
        send its items again, rechecked."""
        worker = self.pool[index]
        if self.head is not None and not self.head.answers():  # the head is lost: none replaced
            return
        if isinstance(exc, ClaimLost) or _is_dead(worker.actor):
            log.warning("a worker was lost (%s); starting a replacement", type(exc).__name__)
            self.pool[index] = _Worker(self.crew.new())
            self.retired.append(worker.actor)
            for item, prompt in worker.outstanding.values():
                self.turns.settle(item.key, None)
                self.enqueue(dataclasses.replace(item, recheck=True), prompt, front=True)
                self.result.redispatched += 1
        # else only unavailable for a moment: its items are still in it

    def landed(self, index: int, outcomes: list[Outcome]) -> None:
        """A worker's outcomes came back: settle them, stop a model whose endpoint is down,
        queue their follow-ups."""
        worker = self.pool[index]
        result = self.result
        for outcome in outcomes:
            worker.outstanding.pop(outcome.key, None)
            caller = outcome.key.caller
            self.turns.settle(outcome.key, (outcome.status, outcome.cost_usd))
            if outcome.status == "write_failed" and not result.write_failed:
                result.write_failed = f"{outcome.store_key}: {outcome.error}"
                log.error("a record could not be stored (%s): nothing more is sent", outcome.error)
            if self.endpoints.land(caller, outcome.status, outcome.error_kind, outcome.error):
                result.down[caller] = error = self.endpoints.down()[caller]
                self.unsent(self.turns.drop(caller))
                log.error("every call to %s failed (%s): it is not asked again", caller, error)
        result.count(outcomes)
        if self.follow_up is not None:
            for outcome in outcomes:
                for item, parts in self.follow_up(outcome):
                    self.enqueue(item, parts)
        if self.on_progress is not None and outcomes:
            self.on_progress(outcomes)

    def collect(self, timeout: float) -> None:
        """Wait up to `timeout` for workers' outcomes, and take all that have come back."""
        # One collect in flight per worker, even an idle one: it keeps the claim alive.
        for index, worker in enumerate(self.pool):
            if index not in self.collecting.values():
                self.collecting[worker.actor.collect.remote(self.crew.claim)] = index
        if not self.collecting:
            return
        ready, _ = ray.wait(list(self.collecting), num_returns=1, timeout=timeout)
        if ready:
            more, _ = ray.wait(list(self.collecting), num_returns=len(self.collecting), timeout=0)
            ready = list(dict.fromkeys([*ready, *more]))
        for ref in ready:
            index = self.collecting.pop(ref)
            try:
                outcomes = ray.get(ref)
            except WORKER_LOST as exc:
                self.lost(index, exc)
                continue
            except ray.exceptions.RayTaskError as exc:
                if not isinstance(exc.cause, ClaimLost):
                    raise
                self.lost(index, exc.cause)
                continue
            self.landed(index, outcomes)

    # the run's course

    def head_lost(self) -> bool:
        if self.head is not None and not self.result.head_lost:
            self.result.head_lost = self.head.lost() or ""
        return bool(self.result.head_lost)

    def sending(self) -> bool:
        return not (self.stop_requested() or self.result.write_failed or self.head_lost())

    def send_all(self) -> None:
        """Send and collect until nothing is in flight. After a failed write nothing more is
        sent, but what is in flight lands; a stop or a lost head ends it at once."""
        if self.sending():
            self.fill()
        while self.in_flight() and not self.stop_requested() and not self.head_lost():
            self.collect(timeout=POLL_S)
            if self.sending():
                self.fill()

    def stopped_early(self) -> bool:
        """Sending ended with calls in flight, or with jobs left that nothing else (the
        budget, a failed write, a lost head) accounts for."""
        left = self.turns.queued() + self.left_untaken()
        ended = self.result.budget_reached or bool(self.result.write_failed) or self.head_lost()
        return not self.head_lost() and bool(self.in_flight() or (left and not ended))

    def drain(self) -> None:
        """Let the calls in flight land for up to `drain_s` (unless the head is lost)."""
        if self.in_flight() and not self.head_lost():
            deadline = time.monotonic() + self.drain_s
            while self.in_flight() and time.monotonic() < deadline and not self.head_lost():
                self.collect(timeout=min(POLL_S, max(0.0, deadline - time.monotonic())))

    def count_left(self) -> None:
        """Count what was not stored: in flight (asked, unless a worker says it never sent
        them), queued and never taken."""
        result = self.result
        if self.in_flight() and not self.head_lost():
            never_asked = self.unsent_in_workers()
            result.not_started += never_asked
            result.abandoned += self.in_flight() - never_asked
        else:
            result.abandoned += self.in_flight()
        for queue in self.turns.queues.values():
            self.unsent(queue)
        result.not_started += self.left_untaken()
        result.down.update(self.endpoints.down())

    def unsent_in_workers(self) -> int:
        """Of the items still in flight, how many no request went out for (each worker is
        asked; one that does not answer within a second counts all its own as sent)."""
        asks = {
            worker.actor.unsent.remote(self.crew.claim, list(worker.outstanding)): worker
            for worker in self.pool
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

    def end(self) -> None:
        """Cancel the collects in flight and end the workers, replaced ones included; with the
        head gone there is no one to cancel or end them."""
        if not self.head_lost():
            for ref in self.collecting:
                ray.cancel(ref)
            self.crew.end([*(w.actor for w in self.pool), *self.retired])


def _is_dead(actor: Any) -> bool:
    """Whether an actor is gone for good (a plain call fails at once with RayActorError)."""
    try:
        ray.get(actor.ready.remote(), timeout=5)
        return False
    except WORKER_LOST:
        return True
    except ray.exceptions.GetTimeoutError:
        return False
