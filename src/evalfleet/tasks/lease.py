"""A worker's side of one model's rate limits: the calls it may send, and what they taught.

Two modes, one interface (`acquire` a slot, then end it with `answered`, `rate_limited`,
`failed` or `released`):

- shared: the model has a budget (`providers.ratelimit.SharedBudget`, in a named Ray actor per
  (provider, model, key) on a cluster, `tasks.limiter`, or in this process for a run without
  Ray). Waiting calls share one lease round trip; usage and what the provider's headers said
  go back in batches, one report in flight at a time.
- window: nothing states a limit (no rpm/tpm from the registry or the run, no limit headers
  yet): a congestion window (`providers.congestion.Window`) probes how many calls the provider
  takes at once, in this worker, without a round trip per call.

A window lease turns shared the moment an answer states a limit, or a retune gives one
(`open_shared` makes or finds the key's budget): from then on every worker of the cluster that
uses the key draws on that one budget.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from evalfleet.providers.congestion import Window
from evalfleet.providers.ratelimit import Grant, SharedBudget

log = logging.getLogger("evalfleet.limiter")
Observed = tuple[int | None, int | None, int | None, int | None]  # limit/remaining, req/tokens


def key_fingerprint(api_key: str) -> str:
    """Twelve hex digits that tell keys apart and reveal nothing of them."""
    if not api_key:
        return "nokey"
    return hashlib.sha256(b"evalfleet-key:" + api_key.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class BudgetId:
    provider: str
    api_model: str
    key_fingerprint: str

    @property
    def name(self) -> str:
        return f"ratelimit:{self.provider}/{self.api_model}@{self.key_fingerprint}"


class Port(Protocol):
    """The budget a shared lease draws on."""

    async def lease(
        self, run_id: str, rpm: float | None, tpm: float | None, requests: int, tokens: float
    ) -> Grant: ...

    async def report(
        self, settled: list[tuple[float, float, int, int]], refunds: float, seen: Observed | None
    ) -> None: ...

    def rate_limited(self, retry_after_s: float | None) -> None: ...

    def observe(self, seen: Observed, sent: int = 0) -> None: ...


class ActorPort:
    """A `SharedRateLimit` actor (`tasks.limiter`): every worker of the cluster shares it."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    async def lease(self, run_id, rpm, tpm, requests, tokens) -> Grant:
        return await self.actor.lease.remote(run_id, rpm, tpm, requests, tokens)

    async def report(self, settled, refunds, seen) -> None:
        await self.actor.report.remote(settled, refunds, seen)

    def rate_limited(self, retry_after_s: float | None) -> None:
        self.actor.rate_limited.remote(retry_after_s)

    def observe(self, seen: Observed, sent: int = 0) -> None:
        self.actor.observe.remote(*seen, sent)


class LocalPort:
    """A budget in this process (a run without Ray): the same logic, called directly."""

    def __init__(self, budget: SharedBudget) -> None:
        self.budget = budget

    async def lease(self, run_id, rpm, tpm, requests, tokens) -> Grant:
        self.budget.claim(run_id, rpm, tpm)
        return self.budget.lease(requests, tokens)

    async def report(self, settled, refunds, seen) -> None:
        report_to(self.budget, settled, refunds, seen)

    def rate_limited(self, retry_after_s: float | None) -> None:
        self.budget.rate_limited(retry_after_s)

    def observe(self, seen: Observed, sent: int = 0) -> None:
        self.budget.observe(*seen, sent=sent)


def report_to(
    budget: SharedBudget,
    settled: list[tuple[float, float, int, int]],
    refunds: float,
    seen: Observed | None,
) -> None:
    """Usage of finished calls: (charged, estimated input, used input, used output)."""
    for charged, estimated, used_in, used_out in settled:
        budget.settle(charged, estimated, used_in, used_out)
    if refunds:
        budget.refund(refunds)
    budget.succeeded(len(settled))
    if seen is not None:
        budget.observe(*seen)


_LOCAL: dict[str, SharedBudget] = {}


def local_port(name: str) -> LocalPort:
    """This process's budget of that name (a run without Ray: every worker here shares it)."""
    budget = _LOCAL.get(name)
    if budget is None:
        budget = _LOCAL[name] = SharedBudget()
    return LocalPort(budget)


@dataclass
class Slot:
    """One call's permission to go out: `charge` tokens reserved, in the mode it was given."""

    charge: float
    shared: bool


class Lease:
    """A worker's side of one model's budget (see the module's docstring)."""

    def __init__(
        self,
        run_id: str,
        rpm: float | None,
        tpm: float | None,
        port: Port | None = None,
        open_shared: Callable[[], Port] | None = None,
        ceiling: int | None = None,
    ) -> None:
        self._run_id = run_id
        self._limits = (rpm, tpm)
        self._port = port
        self._open = open_shared
        self.window = Window(ceiling)
        self._room: deque[asyncio.Future[None]] = deque()  # calls waiting for the window
        self._waiting: deque[tuple[float, asyncio.Future[None]]] = deque()  # for a grant
        self._leasing = False
        self._batch = 1
        self._expected_output = 0.0
        self._input_ratio = 1.0
        self._settled: list[tuple[float, float, int, int]] = []
        self._refunds = 0.0
        self._seen: Observed | None = None
        self._reporting = False
        self._window_sent = 0  # calls sent on the window: the shared budget's once it is
        if port is None and (rpm or tpm):
            self._share()

    @property
    def shared(self) -> bool:
        return self._port is not None

    def charge_for(self, estimated_input: float) -> float:
        """Tokens to reserve for a call: the input estimate corrected by what usage taught,
        plus the output tokens calls of this budget have been producing."""
        return estimated_input * self._input_ratio + self._expected_output

    async def acquire(self, charge: float) -> Slot:
        while self._port is None:
            if self.window.room() and not self._room:
                self.window.take()
                self._window_sent += 1
                return Slot(charge, shared=False)
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._room.append(future)
            try:
                await future
            except BaseException:
                self._room_freed()  # the room it was woken for goes to the next one
                raise
            if self._port is None and self.window.room():
                self.window.take()
                self._window_sent += 1
                return Slot(charge, shared=False)
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((charge, future))
        if not self._leasing:
            self._leasing = True
            asyncio.ensure_future(self._lease_loop())
        await future
        return Slot(charge, shared=True)

    def _room_freed(self) -> None:
        while self._room and (self.window.room() or self._port is not None):
            future = self._room.popleft()
            if not future.done():
                future.set_result(None)
                if self._port is None:
                    return

    async def _lease_loop(self) -> None:
        try:
            while self._waiting and self._port is not None:
                take = list(self._waiting)[: self._batch]
                tokens = sum(charge for charge, _ in take)
                rpm, tpm = self._limits
                grant = await self._port.lease(self._run_id, rpm, tpm, len(take), tokens)
                self._batch = grant.batch
                self._expected_output = grant.expected_output_tokens
                self._input_ratio = grant.input_ratio
                if grant.wait_s > 0:
                    await asyncio.sleep(grant.wait_s)
                for _ in range(grant.requests):
                    if not self._waiting:
                        break
                    _, future = self._waiting.popleft()
                    if not future.done():
                        future.set_result(None)
        except Exception as exc:  # the budget is unreachable: let the calls go, say so
            log.warning("rate budget unreachable (%s): calls proceed unthrottled", exc)
            while self._waiting:
                _, future = self._waiting.popleft()
                if not future.done():
                    future.set_result(None)
        finally:
            self._leasing = False

    # -- how a call ended ------------------------------------------------------------

    def answered(
        self,
        slot: Slot,
        estimated_input: float,
        used_in: int,
        used_out: int,
        seen: Observed = (None, None, None, None),
    ) -> None:
        """A billed answer: its real usage, and what its headers said of the window."""
        if slot.shared:
            self._settled.append((slot.charge, estimated_input, used_in, used_out))
        else:
            self.window.answered(held_back=bool(self._room))
            self._release_window()
        if any(value is not None for value in seen):
            self._observe(seen)
        self._flush()

    def rate_limited(self, slot: Slot, retry_after_s: float | None) -> None:
        """A 429: nothing of the window was used; slow down."""
        if slot.shared:
            self._refunds += slot.charge
            self._flush()
            assert self._port is not None
            self._port.rate_limited(retry_after_s)
        else:
            self.window.rate_limited()
            self._release_window()

    def failed(self, slot: Slot) -> None:
        """Any other failure: the slot is free again."""
        if not slot.shared:
            self._release_window()

    def released(self, slot: Slot) -> None:
        """A call that never reached the provider (cancelled before it was sent)."""
        if slot.shared:
            self._refunds += slot.charge
            self._flush()
        else:
            self._release_window()

    def _release_window(self) -> None:
        self.window.release()
        self._room_freed()

    # -- what the provider said, and retunes ----------------------------------------

    def _observe(self, seen: Observed) -> None:
        limit_requests, _, limit_tokens, _ = seen
        if self._port is None and (limit_requests or limit_tokens) and self._open is not None:
            self._share()
            assert self._port is not None
            # before the first lease, so the limits apply to it; what the window sent counts
            # as this key's own use of the provider's minute, not others'
            self._port.observe(seen, self._window_sent)
            return
        if self._port is not None:
            self._seen = seen  # sent with the next report

    def retune(self, rpm: float | None, tpm: float | None, ceiling: int | None) -> None:
        """New limits for this run (`evalfleet limits`): they go with the next lease."""
        self._limits = (rpm, tpm)
        self.window.set_ceiling(ceiling)
        if self._port is None and (rpm or tpm):
            self._share()
        self._room_freed()

    def _share(self) -> None:
        """From a window to the key's shared budget."""
        if self._open is None:
            return
        self._port = self._open()
        log.info("rate limits stated: this worker now draws on the key's shared budget")
        self._room_freed()  # calls waiting for the window go for a grant instead

    # -- reports ----------------------------------------------------------------------

    def _flush(self) -> None:
        pending = self._settled or self._refunds or self._seen is not None
        if self._port is not None and not self._reporting and pending:
            self._reporting = True
            asyncio.ensure_future(self._report_loop())

    async def _report_loop(self) -> None:
        try:
            while self._port is not None and (self._settled or self._refunds or self._seen):
                settled, self._settled = self._settled, []
                refunds, self._refunds = self._refunds, 0.0
                seen, self._seen = self._seen, None
                await self._port.report(settled, refunds, seen)
        except Exception as exc:
            log.warning("could not report usage to the rate budget: %s", exc)
        finally:
            self._reporting = False
