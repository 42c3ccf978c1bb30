"""Where a run's worker actors come from, cheapest first:

1. warm workers kept by the stack's Ray head (`evalfleet up --ray` starts them, named
   `evalfleet-worker-N` in the `evalfleet` namespace, their SDKs imported), when free and
   running the same code as this process;
2. workers this process started ahead of the run (`prestart`), while its flow run was being
   created and planned;
3. new ones.

A starting worker costs a process, Ray's start-up and the SDK imports: about a second before
the first call, which a run of a few dozen items notices. A run gives warm workers back at its
end and kills its own.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Any

import ray

from evalfleet.core.settings import WORKER_PLACEMENT
from evalfleet.tasks.head import HeadWatch
from evalfleet.tasks.job_env import runtime_env_digest, same_env
from evalfleet.tasks.limiter import NAMESPACE
from evalfleet.tasks.worker import CompletionWorker, WorkerSetup, code_digest

log = logging.getLogger("evalfleet")
WARM_PREFIX = "evalfleet-worker-"
MAX_WARM = 64
MAX_CONCURRENCY = 1024  # actor calls at once (submit and collect); items run as tasks
UNCLAIM_TIMEOUT_S = 30.0
ASK_TIMEOUT_S = 5.0  # a warm worker answers at once; one that does not is not waited for
GATHER_POLL_S = 0.5  # how often a gather looks at the head watch while its workers start
_prestarted: list[Any] = []


def all_apis() -> list[str]:
    from evalfleet.providers.clients import CLIENTS

    return sorted(CLIENTS)


def _placement() -> str:
    # SPREAD: on a cluster the workers go to different nodes, so one node lost stops only
    # part of the run (its items are sent again to a replacement).
    return WORKER_PLACEMENT.get()


def _own(apis: Sequence[str], claim: tuple[str, WorkerSetup] | None = None) -> Any:
    return CompletionWorker.options(
        max_concurrency=MAX_CONCURRENCY, scheduling_strategy=_placement()
    ).remote(list(apis), claim=claim)


def start_warm(count: int) -> list[Any]:
    """Start (or find) the cluster's `count` warm workers, kept until the cluster stops;
    returns once they answer."""
    actors: list[Any] = [
        CompletionWorker.options(
            name=f"{WARM_PREFIX}{i}",
            namespace=NAMESPACE,
            lifetime="detached",
            get_if_exists=True,
            max_concurrency=MAX_CONCURRENCY,
            scheduling_strategy=_placement(),
        ).remote(all_apis(), expires=True)
        for i in range(count)
    ]
    ray.get([actor.ready.remote() for actor in actors])
    return actors


def keeps_warm_workers() -> bool:
    """The cluster keeps warm workers (`evalfleet up --ray`) that can serve this process's
    runs: a run claims those first. Not when they run with another runtime env than this
    job's (`tasks.job_env`): a job submitted with its own env vars starts its own workers."""
    try:
        actor = ray.get_actor(f"{WARM_PREFIX}0", namespace=NAMESPACE)
        theirs: Any = ray.get(actor.job_env.remote(), timeout=ASK_TIMEOUT_S)
    except (ValueError, ray.exceptions.RayError):  # none, lost with its node, or stuck
        return False
    if not same_env(runtime_env_digest(), theirs):
        log.info("the cluster's warm workers run without this job's runtime env: not used")
        return False
    return True


def prestart(count: int, apis: Sequence[str]) -> None:
    """Start `count` workers now (not waiting for them), for this process's next run."""
    _prestarted.extend(_own(apis) for _ in range(count))


class Crew:
    """The workers serving one run under one claim."""

    def __init__(self, setup: WorkerSetup, apis: Sequence[str]) -> None:
        self.claim = uuid.uuid4().hex
        self.setup = setup
        self.apis = list(apis)
        self._warm: set[int] = set()  # id() of the warm workers' handles

    def gather(self, count: int, head: HeadWatch | None = None) -> list[Any]:
        """`count` claimed workers: warm ones first, then prestarted, then new; returns once
        they answer, or at once when `head` says the Ray head is lost (the caller's
        dispatcher then ends the run: a wait on a lost head lasts Ray's minute)."""
        found = self._claim_warm(count)
        borrowed = len(found)
        waits = []
        while len(found) < count and _prestarted:
            actor = _prestarted.pop()
            # Awaited below: an async actor may run a later call (a submit) before it.
            waits.append(actor.claim.remote(self.claim, self.setup))
            found.append(actor)
        fresh = [self.new() for _ in range(count - len(found))]
        found.extend(fresh)
        answers = [*waits, *(actor.ready.remote() for actor in fresh)]
        while answers and not (head is not None and head.lost()):
            done, _ = ray.wait(answers, num_returns=len(answers), timeout=GATHER_POLL_S)
            if len(done) == len(answers):
                if not all(ray.get(answers)):
                    raise RuntimeError("a worker this process started refused its run's claim")
                break
        if borrowed:
            log.info("%d warm worker(s) of the cluster serve this run", borrowed)
        return found

    def _claim_warm(self, count: int) -> list[Any]:
        found: list[Any] = []
        ours = runtime_env_digest()
        for i in range(MAX_WARM):
            if len(found) == count:
                break
            try:
                actor: Any = ray.get_actor(f"{WARM_PREFIX}{i}", namespace=NAMESPACE)
            except ValueError:  # no such worker: the stack keeps fewer
                break
            try:
                claimed: bool = ray.get(
                    actor.claim.remote(self.claim, self.setup, code_digest(), ours)
                )
            except ray.exceptions.RayError as exc:  # lost with its node: a new one serves
                log.warning("warm worker %d cannot serve: %s", i, type(exc).__name__)
                continue
            if claimed:
                self._warm.add(id(actor))
                found.append(actor)
        return found

    def new(self) -> Any:
        """A new worker of this run, born claimed (its constructor runs before any call)."""
        return _own(self.apis, claim=(self.claim, self.setup))

    def end(self, actors: Sequence[Any]) -> None:
        """Give the warm workers back (once nothing of this run is in flight in them) and
        kill the others."""
        giving_back = [a.unclaim.remote(self.claim) for a in actors if id(a) in self._warm]
        for actor in actors:
            if id(actor) not in self._warm:
                ray.kill(actor)
        if giving_back:
            try:
                ray.get(giving_back, timeout=UNCLAIM_TIMEOUT_S)
            except ray.exceptions.RayError as exc:  # gone with its node: nothing in flight
                log.warning("a warm worker could not be given back: %s", type(exc).__name__)
