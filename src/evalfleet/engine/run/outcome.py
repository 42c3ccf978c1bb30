"""What a run's evaluation did (`RunOutcome`), and how a run that did not finish says so:
stopped by a signal (what was kept, how to resume), or failed (a record it could not store,
a model every call to which failed, a Ray head lost). What is left is told by what was sent:
asked and not stored (may have been paid for; asked again by a resume), and never sent."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from evalfleet.engine.run.interrupts import STOP
from evalfleet.tasks.endpoints import stop_line


@dataclass
class RunOutcome:
    """The evaluation's result, as every step returns it and the command reads it."""

    run_id: str
    submitted: int = 0  # outcomes received from the workers
    statuses: Counter[str] = field(default_factory=Counter)  # ok, failed, exists, write_failed
    errors: Counter[str] = field(default_factory=Counter)  # terminal errors by kind
    elapsed_s: float = 0.0
    cost_usd: float = 0.0  # what this command's answers cost
    judge_cost_usd: float = 0.0
    stopped: bool = False  # a stop (Ctrl-C, SIGTERM) was requested
    abandoned: int = 0  # sent, and no record came back (may have been paid for)
    not_started: int = 0  # never sent
    redispatched: int = 0  # sent again after their worker was lost
    budget_reached: str | None = None  # the line a run stopped by its cap ends with
    finish_cap_usd: float | None = None  # a cap that would finish it
    store_failed: str | None = None  # a record the store refused: nothing more was sent
    endpoints_down: dict[str, str] = field(default_factory=dict)  # model -> endpoint (error)
    ray_lost: str | None = None  # the Ray head stopped answering: the run ended there
    batch: Counter[str] = field(default_factory=Counter)  # batch rounds: submitted, ended, ...
    batch_jobs_open: int = 0
    batch_lines_open: int = 0

    @property
    def failed(self) -> bool:
        """The run did not do its job (`check_done` says why)."""
        return bool(self.store_failed or self.endpoints_down or self.ray_lost)

    def add(self, later: RunOutcome) -> RunOutcome:
        """This outcome followed by `later`'s (the batch rounds after the online step)."""
        self.submitted += later.submitted
        self.statuses.update(later.statuses)
        self.errors.update(later.errors)
        self.elapsed_s += later.elapsed_s
        self.cost_usd += later.cost_usd
        self.judge_cost_usd += later.judge_cost_usd
        self.stopped = self.stopped or later.stopped
        self.abandoned += later.abandoned
        self.not_started += later.not_started
        self.redispatched += later.redispatched
        self.budget_reached = self.budget_reached or later.budget_reached
        self.finish_cap_usd = self.finish_cap_usd or later.finish_cap_usd
        self.store_failed = self.store_failed or later.store_failed
        self.endpoints_down = {**self.endpoints_down, **later.endpoints_down}
        self.ray_lost = self.ray_lost or later.ray_lost
        self.batch.update(later.batch)
        self.batch_jobs_open = later.batch_jobs_open
        self.batch_lines_open = later.batch_lines_open
        return self


class Interrupted(Exception):
    """The run stopped on a signal; the message says what was kept and how to resume."""


def what_was_sent(outcome: RunOutcome) -> str:
    """The records this command stored, the items it asked that have none (in flight when it
    ended, or a record the store refused), and the items it never sent."""
    stored = outcome.statuses["ok"] + outcome.statuses["failed"]
    unstored = outcome.abandoned + outcome.statuses["write_failed"]
    return (
        f"{stored} new {_plural(stored, 'record')} stored, {unstored} asked and not stored "
        f"(possibly paid for; asked again on resume), {outcome.not_started} never sent"
    )


def interrupted_message(outcome: RunOutcome) -> str:
    waiting = ""
    if outcome.batch_jobs_open:
        lines, jobs = outcome.batch_lines_open, outcome.batch_jobs_open
        waiting = (
            f"; {lines} {_plural(lines, 'line')} wait in {jobs} open batch "
            f"{_plural(jobs, 'job')} at the provider, which a rerun (or `evalfleet batches "
            "poll`) collects without sending them again"
        )
    return (
        f"run {outcome.run_id} interrupted by {STOP.name}: {what_was_sent(outcome)}{waiting}; "
        f"everything stored is kept and a rerun with run id {outcome.run_id} asks only the rest"
    )


class RunFailed(Exception):
    """The run did not do its job: a record could not be stored, every call to a model
    failed, or the Ray head was lost. The message says what failed; the same command resumes
    it once that is fixed."""

    exit_code = 4


def check_done(outcome: RunOutcome) -> None:
    """Raise RunFailed when the evaluation stopped on a record it could not store, a model
    every call to which failed, or a lost Ray head (`tasks.dispatch`); nothing is aggregated
    then."""
    problems = []
    if outcome.ray_lost:
        problems.append(
            f"{outcome.ray_lost}, so the run ended: {what_was_sent(outcome)}; start the Ray "
            "cluster again (its head's logs say why it stopped; without RAY_ADDRESS a run "
            "starts a Ray of its own)"
        )
    if outcome.store_failed:
        unstored = outcome.statuses["write_failed"]
        problems.append(
            f"a record could not be stored ({outcome.store_failed}): nothing more was sent, "
            f"the calls in flight landed, {unstored} answers paid for were not stored; fix the "
            "store"
        )
    for caller, why in outcome.endpoints_down.items():
        problems.append(stop_line(caller, why))  # down, or rate limited past what it may wait
    if problems:
        raise RunFailed(
            f"run {outcome.run_id} stopped: {'; '.join(problems)}; then run the same command "
            "again: it asks only what is not stored"
        )


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"
