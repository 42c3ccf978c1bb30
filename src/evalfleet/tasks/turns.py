"""Models in turn: the queue per model both dispatchers feed (`tasks.dispatch` on Ray actors,
`tasks.here` in this process), the limits that bound what each model has in flight, and the
counts of what happened (`Dispatched`).

One slow or rate-limited model never starves the others: `Turns.pick` takes one job from
each model's queue in turn, up to its limit (per model, and what the budget lets it probe),
each reserved with the budget before it is sent.
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalfleet.storage.layout import ItemKey
from evalfleet.tasks.budget import Budget
from evalfleet.tasks.work import WorkItem

if TYPE_CHECKING:
    from evalfleet.tasks.completions import Outcome

Job = tuple[WorkItem, Any]  # (item, prompt): a sample's index in the workers' samples, or parts
UNLIMITED = 1 << 30


@dataclass
class Dispatched:
    """What happened, in counts: the outcomes themselves are handed to `on_progress` and
    `follow_up` as they land and not kept (a run of a million items would hold them all). A
    run in this process loses no worker and no Ray head: those counts stay at zero."""

    submitted: int = 0  # outcomes received
    statuses: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)  # terminal errors by kind
    cost_usd: defaultdict[str, float] = field(
        default_factory=lambda: defaultdict(float)
    )  # by stage
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


class Turns:
    """A queue per model and how many of its jobs are in flight."""

    def __init__(self, per_model_limit: dict[str, int], budget: Budget | None) -> None:
        self.per_model_limit = per_model_limit
        self.budget = budget
        self.queues: dict[str, deque[Job]] = {}
        self.busy: Counter[str] = Counter()  # in flight per model

    def push(self, job: Job, front: bool = False) -> None:
        queue = self.queues.setdefault(job[0].key.caller, deque())
        (queue.appendleft if front else queue.append)(job)

    def queued(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def limit(self, model: str) -> int:
        most = self.per_model_limit.get(model, UNLIMITED)
        probe = self.budget.limit(model) if self.budget is not None else None
        return most if probe is None else min(most, probe)

    def wanting(self) -> bool:
        """Whether a model could send more than is queued for it: only then are more jobs
        taken (a model at its limit keeps what it has queued; the source has every model's
        items interleaved, so a slow model's share waits in its queue)."""
        return not self.queues or any(
            not q and self.busy[m] < self.limit(m) for m, q in self.queues.items()
        )

    def pick(self, room: int, take_more: Callable[[int], bool]) -> tuple[list[Job], set[str]]:
        """Up to `room` jobs, one model's at a time in turn, each reserved with the budget and
        counted busy; and the models whose next job the budget refused. `take_more(n)` queues
        up to n more jobs from the source (False when none are left)."""
        picked: list[Job] = []
        refused: set[str] = set()
        while room > 0:
            progressed = False
            for model, queue in self.queues.items():
                if not queue or model in refused or self.busy[model] >= self.limit(model):
                    continue
                item, prompt = queue[0]
                if self.budget is not None and not self.budget.reserve(item, prompt):
                    refused.add(model)
                    continue
                picked.append(queue.popleft())
                self.busy[model] += 1
                room -= 1
                progressed = True
                if room <= 0:
                    break
            if progressed:
                continue
            if refused or not self.wanting() or not take_more(room):
                break
        return picked, refused

    def settle(self, key: ItemKey, paid: tuple[str, float] | None) -> None:
        """A job of `key`'s model is no longer in flight: landed, with its (status, cost), or
        lost with its worker (None: it is sent again and reserves again)."""
        self.busy[key.caller] -= 1
        if self.budget is not None:
            self.budget.settle(key, paid)

    def drop(self, model: str) -> deque[Job]:
        """Take a model's queue away (its endpoint is down): what it held is returned."""
        return self.queues.pop(model, deque())
