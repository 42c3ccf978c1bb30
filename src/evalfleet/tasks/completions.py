"""The worker that turns work items into stored completion records, many at a time.

`tasks.worker` hosts it in a Ray actor; a run small enough to need no cluster runs the same
class in its own process (`in_process` in its setup: samples as plain lists, rate budgets in
this process).

The driver hands a worker items in chunks (`submit`) and takes back what has landed, in
chunks too (`collect`): two actor calls per a few dozen items, instead of one per item, each
paying for serialisation on both sides and a trip through Ray's threads. A record is written
(checkpointed) before its outcome is ever collected.

A worker serves one run at a time, the one that claimed it (`claim`, with the run's
`WorkerSetup`): a run's own workers are claimed as they start, a warm worker kept by the
stack's Ray head (`evalfleet.tasks.pool`) when a run borrows it. Giving it back (`unclaim`) cancels
what is still in flight and forgets the run's keys and clients. A warm worker whose claimant
stops calling for `CLAIM_S` (its process was killed) is given back by itself.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import inspect
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from evalfleet.core.checkout import checkout_digest
from evalfleet.core.record import Attempt, Record, Usage
from evalfleet.core.types import Part
from evalfleet.providers.base import ProviderClient
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.retry import RetryPolicy, Wake, call_with_retries
from evalfleet.providers.token_rules import estimate_prompt_tokens
from evalfleet.providers.types import ErrorKind, ProviderError, ProviderResponse
from evalfleet.providers.usage import billed_usage
from evalfleet.storage import layout, open_store
from evalfleet.storage.base import Store
from evalfleet.storage.layout import ItemKey
from evalfleet.tasks.job_env import runtime_env_digest, same_env
from evalfleet.tasks.lease import (
    ActorPort,
    BudgetId,
    Lease,
    LocalPort,
    Port,
    key_fingerprint,
    local_port,
)
from evalfleet.tasks.records import (
    ANSWERED,
    billed_attempt,
    build_record,
    failed_attempt,
    ledger_entry,
    new_call_id,
)
from evalfleet.tasks.secrets import Secret
from evalfleet.tasks.work import WorkItem

log = logging.getLogger("evalfleet.worker")
BLOCKS_CACHED = 8  # blocks of samples kept by a worker (the items come in sample order)
WORKER_PACKAGES = ("core", "providers", "storage", "tasks")  # the code a worker runs
CLAIM_S = 15.0  # a warm worker's claimant that has not called for this long is gone
ERROR_CHARS = 300  # of an error's message, told to the driver


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the driver needs to know about one item (the record itself stays in the store)."""

    key: ItemKey
    status: str  # "ok" | "failed" | "exists" | "write_failed"
    error_kind: str | None
    attempts: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    store_key: str = ""
    response: str | None = None  # only when the item asked for it (an answer to judge)
    error: str = ""  # why the call failed, or why its record could not be stored


@dataclass(frozen=True)
class WorkerSetup:
    """What a run tells the workers it claims. `samples` are the object refs of the run's
    samples' parts, in blocks (`engine.generation.online.put_samples`; Ray leaves refs inside
    an argument as refs: each worker fetches a block once, when it first needs it);
    `budgets` the shared rate budget actor of each limited model. `in_process`: the worker
    runs in the run's own process, without Ray (the samples' blocks are plain lists, and a
    budget learnt from headers lives in this process)."""

    store_url: str
    s3_endpoint_url: str | None
    models: dict[str, ModelConfig]
    keys: dict[str, Secret]
    retry: RetryPolicy
    budgets: dict[str, Any]
    samples: list[Any]
    in_process: bool = False


class ClaimLost(Exception):
    """The worker no longer serves this claim (it was given back, or taken over after the
    claimant went silent): the driver replaces it and rechecks what was in flight."""


class LedgerUnwritable(Exception):
    """A billed attempt's ledger entry could not be stored."""

    def __init__(self, key: str, cause: BaseException) -> None:
        super().__init__(f"{key}: {cause}")
        self.key, self.cause = key, cause


class Call:
    """One item's call as its attempts land: the ledger (`core.record.Attempt` each) and the
    last billed answer. `answered` decides whether a 200 is taken or refused."""

    def __init__(self, item: WorkItem, config: ModelConfig, parts: list[Part], call_id: str):
        self.item, self.config, self.parts, self.call_id = item, config, parts, call_id
        self.ledger: list[Attempt] = []
        self.latency: list[float] = []
        self.last_answer: ProviderResponse | None = None

    def failed(self, error: ProviderError, latency_s: float) -> None:
        self.latency.append(latency_s)
        number = len(self.ledger) + 1
        self.ledger.append(failed_attempt(number, error, landed=time.time(), latency_s=latency_s))

    def answered(self, answer: ProviderResponse, latency_s: float) -> ProviderError | None:
        """Add a billed answer to the ledger; the error that refuses it, or None when it is
        taken. An empty answer cut off by the output limit is not asked again: the same limit
        would be spent the same way."""
        self.latency.append(latency_s)
        self.last_answer = answer
        billed = billed_usage(self.config, self.parts, answer, self.item.decoding.max_tokens)
        refused: ProviderError | None = None
        if billed.problem is not None:
            refused = ProviderError(
                ErrorKind.BAD_USAGE,
                f"the provider reported impossible usage ({billed.problem}); it was priced on "
                "locally counted tokens",
                status=200,
                request_id=answer.request_id,
            )
        elif not answer.text.strip():
            refused = empty_answer(answer, self.item.decoding.max_tokens)
        outcome = ANSWERED if refused is None else str(refused.kind)
        self.ledger.append(
            billed_attempt(
                len(self.ledger) + 1,
                self.config,
                answer,
                billed,
                outcome=outcome,
                landed=time.time(),
                latency_s=latency_s,
                message="" if refused is None else refused.message,
            )
        )
        return refused

    def last_usage(self) -> Usage:
        usage = self.ledger[-1].usage
        return usage if usage is not None else Usage()

    def last_billed(self) -> bool:
        return bool(self.ledger) and self.ledger[-1].usage is not None


def empty_answer(answer: ProviderResponse, max_tokens: int | None) -> ProviderError:
    """The error of an answer with no text: retried, but for one cut off by its output limit
    (a reasoning model that spent `max_tokens` thinking), which is final."""
    if answer.finish_reason == "length":
        limit = f"max_tokens={max_tokens}" if max_tokens else "its output limit"
        return ProviderError(
            ErrorKind.OUTPUT_LIMIT,
            f"empty answer: the model spent {limit} before answering (finish reason length); "
            "raise --max-tokens or lower --reasoning-effort",
            status=200,
            request_id=answer.request_id,
        )
    return ProviderError(
        ErrorKind.EMPTY_ANSWER,
        f"empty answer (finish reason {answer.finish_reason})",
        status=200,
        request_id=answer.request_id,
    )


def preload(apis: Sequence[str]) -> None:
    """Import the SDK clients of these wire APIs now, not on the first call."""
    from evalfleet.providers.clients import client_class

    for api in apis:
        client_class(api)


class CompletionWorker:
    """Hosts provider clients for many concurrent calls (an async actor).

    A job is (item, prompt): the prompt is where a sample's parts are in the claim's
    `samples`, (block, index in it), fetched from the object store once per worker, or, for
    a judgement, the list of its parts itself.
    """

    LINGER_S = 0.02  # a collect waits this long after the first landing, for the next ones
    CHUNK = 64  # a collect returns at once when this many have landed

    def __init__(
        self,
        apis: Sequence[str] = (),
        *,
        expires: bool = False,
        claim: tuple[str, WorkerSetup] | None = None,
    ) -> None:
        """`claim`: a run's own worker is born claimed. (An async actor's calls may start in
        any order, even from one caller: a `claim` call sent first could run after the
        run's first `submit`.)"""
        # Hundreds of calls in flight allocate many short-lived SDK objects: collect the
        # young generation less often (its default of 700 allocations runs it constantly).
        gc.set_threshold(50_000, 20, 20)
        self._io = ThreadPoolExecutor(max_workers=32, thread_name_prefix="store")
        self._expires = expires  # a warm worker: its claim lapses when the claimant is silent
        self._claim: str | None = None
        self._seen = 0.0  # when the claimant last called
        self._code = code_digest()  # of the code this process loaded, whatever the disk holds later
        self._job_env = runtime_env_digest()  # the runtime env this worker was started with
        self._forget()
        preload(apis)
        gc.freeze()  # what the imports made is never walked by a collection again
        if claim is not None:
            self._take(*claim)

    def _forget(self) -> None:
        self._store: Store | None = None  # opened by the run's setup
        self._models: dict[str, ModelConfig] = {}
        self._keys: dict[str, Secret] = {}
        self._retry = RetryPolicy()
        self._clients: dict[str, ProviderClient] = {}
        self._budgets: dict[str, Any] = {}  # model id -> its SharedRateLimit actor
        self._leases: dict[str, Lease] = {}
        self._wakes: dict[str, Wake] = {}  # endpoint -> its calls in back-off
        self._retunes: asyncio.Task | None = None  # watches the run's control file
        self._in_process = False
        self._parts_cache: OrderedDict[int, asyncio.Future[list[list[Part]]]] = OrderedDict()
        self._samples: list[Any] = []
        self._landed: list[Outcome | BaseException] = []
        self._landing: asyncio.Event | None = None  # made on the actor's event loop
        self._running: set[asyncio.Task] = set()
        self._sent: set[ItemKey] = set()  # in flight with a request sent (not only queued)

    @property
    def store(self) -> Store:
        """The claimed run's store (a worker serves no item before a claim opens it)."""
        if self._store is None:
            raise RuntimeError("no run has claimed this worker: it has no store")
        return self._store

    # -- claims --------------------------------------------------------------------------

    async def claim(
        self,
        claim: str,
        setup: WorkerSetup,
        code: str | None = None,
        job_env: str | None = None,
    ) -> bool:
        """Serve `claim`'s run from now on; False when another live claim holds the worker
        or, given `code` (the driver's `code_digest`) or `job_env` (its
        `runtime_env_digest`), when this worker runs other code or another runtime env."""
        if code is not None and code != self._code:
            return False
        if job_env is not None and not same_env(job_env, self._job_env):
            return False
        if self._claim is not None and self._claim != claim:
            if not (self._expires and time.monotonic() - self._seen > CLAIM_S):
                return False
            await self._give_back()
        self._take(claim, setup)
        if self._expires:
            asyncio.get_running_loop().create_task(self._watch(claim))
        return True

    def _take(self, claim: str, setup: WorkerSetup) -> None:
        self._claim, self._seen = claim, time.monotonic()
        self._store = open_store(setup.store_url, s3_endpoint_url=setup.s3_endpoint_url)
        self._models, self._keys, self._retry = setup.models, setup.keys, setup.retry
        self._budgets, self._samples = setup.budgets, setup.samples
        self._in_process = setup.in_process
        for model in setup.models:  # made now, while the run sets up, not on its first item
            self._client(model)

    async def unclaim(self, claim: str) -> None:
        """Give the worker back: what is in flight is cancelled (its records not written)."""
        if self._claim == claim:
            await self._give_back()

    async def _give_back(self) -> None:
        if self._retunes is not None:
            self._retunes.cancel()
        running = list(self._running)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        for client in self._clients.values():
            try:
                await client.aclose()
            except Exception as exc:  # a client that cannot close cleanly is dropped anyway
                log.warning("closing a client failed: %s", exc)
        self._claim = None
        self._forget()

    async def _watch(self, claim: str) -> None:
        while self._claim == claim:
            await asyncio.sleep(1.0)
            if self._claim == claim and time.monotonic() - self._seen > CLAIM_S:
                log.warning("claim %s silent for %.0f s: the worker is given back", claim, CLAIM_S)
                await self._give_back()

    def _check(self, claim: str) -> None:
        if self._claim != claim:
            raise ClaimLost(f"this worker no longer serves claim {claim}")
        self._seen = time.monotonic()

    def _client(self, model: str) -> ProviderClient:
        client = self._clients.get(model)
        if client is None:
            # imported here: the driver, which imports this class, never loads the SDKs
            from evalfleet.providers.clients import make_client

            client = make_client(self._models[model], self._keys[model].reveal())
            self._clients[model] = client
        return client

    def _lease(self, config: ModelConfig, run_id: str) -> Lease:
        """The model's lease: on its shared budget when it has one (limits from the registry
        or the run), else a congestion window until an answer states a limit."""
        lease = self._leases.get(config.id)
        if lease is None:
            joined = self._budgets.get(config.id)
            port: Port | None = None
            if joined is not None:
                port = joined if isinstance(joined, LocalPort) else ActorPort(joined)
            lease = Lease(run_id, config.rpm, config.tpm, port, self._opener(config))
            self._leases[config.id] = lease
        return lease

    def _opener(self, config: ModelConfig):
        budget = BudgetId(
            config.provider, config.api_model, key_fingerprint(self._keys[config.id].reveal())
        )
        if self._in_process:
            return lambda: local_port(budget.name)

        def shared() -> Port:
            from evalfleet.tasks.limiter import open_budget  # Ray: only where it runs

            return open_budget(budget)

        return shared

    def _wake(self, config: ModelConfig) -> Wake:
        wake = self._wakes.get(config.endpoint())
        if wake is None:
            wake = self._wakes[config.endpoint()] = Wake()
        return wake

    async def _watch_limits(self, run_id: str) -> None:
        """Apply the run's control file (`evalfleet limits`) to every lease, as it changes."""
        from evalfleet.tasks.run_control import EVERY_S, read_limits

        seq = 0
        loop = asyncio.get_running_loop()
        while True:
            store = self._store
            if store is not None:
                try:
                    if store.writes_are_local:
                        limits = read_limits(store, run_id)
                    else:
                        limits = await loop.run_in_executor(self._io, read_limits, store, run_id)
                except Exception as exc:  # the store hiccuped: the limits stay as they are
                    log.warning("the run's control file could not be read: %s", exc)
                    limits = None
                if limits is not None and limits.seq != seq:
                    seq = limits.seq
                    for model, config in self._models.items():
                        rpm = limits.rpm_for(model) or config.rpm
                        tpm = limits.tpm_for(model) or config.tpm
                        self._lease(config, run_id).retune(rpm, tpm, limits.max_in_flight)
                    log.info("run %s retuned (#%d): %s", run_id, seq, limits)
            await asyncio.sleep(EVERY_S)

    # -- the driver's two calls --------------------------------------------------------

    async def submit(self, claim: str, jobs: list[tuple[WorkItem, Any]]) -> int:
        """Start every job of the chunk; their outcomes are collected as they land."""
        self._check(claim)
        if self._retunes is None and jobs:
            self._retunes = asyncio.create_task(self._watch_limits(jobs[0][0].run_id))
        for item, prompt in jobs:
            task = asyncio.create_task(self._land(item, prompt))
            self._running.add(task)
            task.add_done_callback(self._running.discard)
        return len(jobs)

    async def collect(self, claim: str, timeout_s: float = 1.0) -> list[Outcome]:
        """The outcomes landed since the last collect: waits for the first one (at most
        `timeout_s`, then returns none), then a few milliseconds for others landing with it.
        A job that raised (a bug, not a provider error) is raised here. The driver keeps one
        collect outstanding per worker, which keeps its claim alive."""
        self._check(claim)
        landing = self._event()
        if not self._landed:
            try:
                await asyncio.wait_for(landing.wait(), timeout_s)
            except TimeoutError:
                return []
        if len(self._landed) < self.CHUNK:
            await asyncio.sleep(self.LINGER_S)
        landed, self._landed = self._landed, []
        landing.clear()
        outcomes: list[Outcome] = []
        for outcome in landed:
            if isinstance(outcome, BaseException):
                raise outcome
            outcomes.append(outcome)
        return outcomes

    def _event(self) -> asyncio.Event:
        if self._landing is None:
            self._landing = asyncio.Event()
        return self._landing

    async def unsent(self, claim: str, keys: list[ItemKey]) -> list[ItemKey]:
        """Of these items in flight here, those whose request has not gone out yet (waiting
        for a rate-limit slot or their prompt): what an interrupted run never asked."""
        self._check(claim)
        return [key for key in keys if key not in self._sent]

    async def _land(self, item: WorkItem, prompt: Any) -> None:
        try:
            outcome: Outcome | BaseException = await self.run(item, prompt)
        except Exception as exc:  # surfaced to the driver by the next collect
            outcome = exc
        finally:
            self._sent.discard(item.key)
        self._landed.append(outcome)
        self._event().set()

    # -- one item ------------------------------------------------------------------------

    async def _parts(self, prompt: Any) -> list[Part]:
        """A sample's parts, fetched from the object store with its block once per worker,
        not once per call (a ZeroBench image can be megabytes, and each sample is asked epochs
        x models times): the items of a block that arrive together wait on one fetch. A
        judgement's grader prompt comes inline."""
        if isinstance(prompt, list):
            return prompt
        block, index = prompt
        fetch = self._parts_cache.get(block)
        if fetch is None:
            fetch = _future_of(self._samples[block])
            self._parts_cache[block] = fetch
            if len(self._parts_cache) > BLOCKS_CACHED:
                self._parts_cache.popitem(last=False)
        else:
            self._parts_cache.move_to_end(block)
        try:
            parts = await asyncio.shield(fetch)  # one waiter cancelled leaves the others theirs
        except Exception:
            if self._parts_cache.get(block) is fetch:  # the next item fetches it again
                del self._parts_cache[block]
            raise
        return parts[index]

    async def run(self, item: WorkItem, prompt: Any) -> Outcome:
        """Ask, retry by kind, store the record put-if-absent. Every billed attempt is in the
        record's ledger; one that is refused (an empty answer, usage that cannot be true) is
        also stored on its own before the next attempt is sent."""
        if item.recheck:
            stored = await self._stored(item)
            if stored is not None:
                return stored
        parts = await self._parts(prompt)
        caller = item.key.caller
        config = self._models[caller]
        client = self._client(caller)
        lease = self._lease(config, item.run_id)
        estimate: int | None = None  # prompt tokens by the provider's rules, for a token budget
        started = time.time()
        call = Call(item, config, parts, new_call_id())

        async def attempt() -> ProviderResponse:
            nonlocal estimate
            if lease.shared and estimate is None:
                estimate = estimate_prompt_tokens(config, parts)
            slot = await lease.acquire(lease.charge_for(estimate or 0))
            t0 = time.monotonic()
            self._sent.add(item.key)
            try:
                answer = await client.complete(parts, item.decoding)
            except ProviderError as exc:
                call.failed(exc, time.monotonic() - t0)
                if exc.kind == ErrorKind.RATE_LIMITED:
                    lease.rate_limited(slot, exc.retry_after_s)  # nothing of the window used
                else:
                    lease.failed(slot)
                raise
            except BaseException:
                lease.released(slot)
                raise
            refused = call.answered(answer, time.monotonic() - t0)
            usage = call.last_usage()
            (limit_requests, limit_tokens), (left_requests, left_tokens) = (
                answer.limits,
                answer.remaining,
            )
            seen = (limit_requests, left_requests, limit_tokens, left_tokens)
            lease.answered(slot, estimate or 0, usage.input_tokens, usage.output_tokens, seen)
            if refused is not None:
                await self._keep(call)  # stored before the next attempt is sent
                raise refused
            return answer

        try:
            response, error, attempted = await call_with_retries(
                attempt, self._retry, wake=self._wake(config)
            )
        except LedgerUnwritable as exc:
            return self._unwritable(call, exc)
        finished = time.time()
        if error is not None and call.last_answer is not None and call.last_billed():
            # Tokens were spent: keep the last billed answer (finish reason) beside the error.
            response = call.last_answer
        record = build_record(
            item,
            config,
            response=response,
            error=error,
            ledger=call.ledger,
            call_id=call.call_id,
            attempts=attempted.attempts,
            attempt_errors=attempted.errors,
            started=started,
            finished=finished,
            latency_s=call.latency[-1] if call.latency else None,
        )
        key = item.store_key if error is None else item.failure_key(int(finished * 1000))
        status = "ok" if error is None else "failed"
        problem = error.message[:ERROR_CHARS] if error is not None else ""
        try:
            data = record.to_bytes()
            if self.store.writes_are_local:
                # A local write takes microseconds; a thread hop would cost more CPU than it.
                written = self.store.put_if_absent(key, data)
            else:
                loop = asyncio.get_running_loop()
                written = await loop.run_in_executor(self._io, self.store.put_if_absent, key, data)
            if not written:
                status = "exists"
        except Exception as exc:  # the item stays missing; the run stops sending and says so
            log.warning("checkpoint write failed for %s: %s", key, exc)
            status = "write_failed"
            problem = " ".join(str(exc).split())[:ERROR_CHARS] or type(exc).__name__
        usage = record.tokens
        return Outcome(
            key=item.key,
            status=status,
            error_kind=str(error.kind) if error else None,
            attempts=attempted.attempts,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=record.spent_usd,
            store_key=key,
            response=(
                response.text
                if item.return_response and error is None and response is not None
                else None
            ),
            error=problem,
        )

    async def _keep(self, call: Call) -> None:
        """Store the call's last attempt in the ledger; LedgerUnwritable when the store
        refuses it (the call stops: nothing more is sent that could not be recorded)."""
        entry = ledger_entry(call.item, call.call_id, call.ledger[-1])
        key = layout.ledger_key(
            call.item.run_id,
            call.item.key,
            call.item.request_hash,
            call.call_id,
            entry.attempt.number,
        )
        data = entry.to_bytes()
        try:
            if self.store.writes_are_local:
                self.store.put_if_absent(key, data)
            else:
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(self._io, self.store.put_if_absent, key, data)
        except Exception as exc:
            raise LedgerUnwritable(key, exc) from exc

    def _unwritable(self, call: Call, exc: LedgerUnwritable) -> Outcome:
        log.warning("ledger write failed for %s: %s", exc.key, exc.cause)
        spent = sum(attempt.cost_usd for attempt in call.ledger)
        return Outcome(
            key=call.item.key,
            status="write_failed",
            error_kind=None,
            attempts=len(call.ledger),
            input_tokens=0,
            output_tokens=0,
            cost_usd=spent,
            store_key=exc.key,
            error=(" ".join(str(exc.cause).split()) or type(exc.cause).__name__)[:ERROR_CHARS],
        )

    async def _stored(self, item: WorkItem) -> Outcome | None:
        """The outcome of an item whose record a lost worker had already stored, if any: it is
        not asked again."""
        loop = asyncio.get_running_loop()
        data = await loop.run_in_executor(self._io, self.store.get, item.store_key)
        record = Record.read(data)
        if record is None:
            return None
        return Outcome(
            key=item.key,
            status="exists",
            error_kind=None,
            attempts=record.attempts,
            input_tokens=record.tokens.input_tokens,
            output_tokens=record.tokens.output_tokens,
            # Paid in this run by the lost worker's call, whose outcome never came back.
            cost_usd=record.spent_usd,
            store_key=item.store_key,
            response=record.response if item.return_response else None,
        )

    def ready(self) -> bool:
        """Answered once the actor (and its process) is up: lets timing start after start-up."""
        return True

    def job_env(self) -> str:
        """The digest of the runtime env this worker was started with (`tasks.job_env`)."""
        return self._job_env


def _future_of(block: Any) -> asyncio.Future:
    """A block of samples to wait on: an object ref (Ray), or the block itself (in process)."""
    if inspect.isawaitable(block):
        return asyncio.ensure_future(block)
    done: asyncio.Future = asyncio.get_running_loop().create_future()
    done.set_result(block)
    return done


@functools.cache
def code_digest() -> str:
    """A digest of the code a worker runs: a warm worker started before an upgrade is not
    used by a run of the new code."""
    return checkout_digest(WORKER_PACKAGES)
