"""Cluster-wide rate budgets: one named Ray actor per (provider, API model, key fingerprint).

Every run and judge on the cluster that calls the same model with the same key draws from
the same actor, whatever its run id. Workers do not ask the actor once per request: a
`Lease` in each worker asks for as many requests as are waiting (up to the budget's batch
size) in one round trip, and reports the real usage back.

The actor is named by a fingerprint of the key, never the key, and restarts if its node is
lost (its state starts over from the claims the next leases carry).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import deque
from dataclasses import dataclass
from typing import Any

import ray

from evalfleet.providers.ratelimit import Grant, SharedBudget

NAMESPACE = "evalfleet"
log = logging.getLogger("evalfleet.limiter")


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


@ray.remote(num_cpus=0, max_concurrency=1, max_restarts=-1, max_task_retries=-1)
class SharedRateLimit:
    """Hosts one `SharedBudget`. Calls are serialised (max_concurrency=1): no locks needed."""

    def __init__(self) -> None:
        self._budget = SharedBudget()

    def claim(self, run_id: str, rpm: float | None, tpm: float | None) -> str | None:
        return self._budget.claim(run_id, rpm, tpm)

    def lease(
        self, run_id: str, rpm: float | None, tpm: float | None, requests: int, tokens: float
    ) -> Grant:
        self._budget.claim(run_id, rpm, tpm)
        return self._budget.lease(requests, tokens)

    def report(self, settled: list[tuple[float, float, int, int]], refunds: float) -> None:
        """Usage of finished calls: (charged, estimated input, used input, used output)."""
        for charged, estimated, used_in, used_out in settled:
            self._budget.settle(charged, estimated, used_in, used_out)
        if refunds:
            self._budget.refund(refunds)
        self._budget.succeeded(len(settled))

    def rate_limited(self, retry_after_s: float | None) -> None:
        self._budget.rate_limited(retry_after_s)

    def headers(self, remaining_requests: int | None, remaining_tokens: int | None) -> None:
        self._budget.headers(remaining_requests, remaining_tokens)

    def stats(self) -> dict[str, Any]:
        budget = self._budget
        return {
            "rpm": budget.limits.rpm,
            "tpm": budget.limits.tpm,
            "scale": budget.scale,
            "rate_limited": budget.rate_limited_count,
            "granted_requests": budget.granted_requests,
            "runs": sorted(budget.claims),
        }


def shared_limit(budget: BudgetId):
    """The cluster's actor for this budget (created on first use, kept for later runs)."""
    return SharedRateLimit.options(
        name=budget.name, namespace=NAMESPACE, get_if_exists=True, lifetime="detached"
    ).remote()


def join(budget: BudgetId, run_id: str, rpm: float | None, tpm: float | None) -> str | None:
    """Register a run's limits; a note if another run's stricter limits apply instead."""
    return ray.get(shared_limit(budget).claim.remote(run_id, rpm, tpm))


class Lease:
    """A worker's side of one budget: waiting calls share one lease round trip.

    `acquire` returns the tokens charged for the call (its estimate); `settle` reports the
    real usage. Reports are sent in batches, at most one in flight at a time.
    """

    def __init__(self, actor: Any, run_id: str, rpm: float | None, tpm: float | None) -> None:
        self._actor = actor
        self._run_id = run_id
        self._limits = (rpm, tpm)
        self._waiting: deque[tuple[float, asyncio.Future[None]]] = deque()
        self._leasing = False
        self._batch = 1
        self._expected_output = 0.0
        self._input_ratio = 1.0
        self._settled: list[tuple[float, float, int, int]] = []
        self._refunds = 0.0
        self._reporting = False

    def charge_for(self, estimated_input: float) -> float:
        """Tokens to reserve for a call: the input estimate corrected by what usage taught,
        plus the output tokens calls of this budget have been producing."""
        return estimated_input * self._input_ratio + self._expected_output

    async def acquire(self, charge: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((charge, future))
        if not self._leasing:
            self._leasing = True
            asyncio.ensure_future(self._lease_loop())
        await future

    async def _lease_loop(self) -> None:
        try:
            while self._waiting:
                take = list(self._waiting)[: self._batch]
                tokens = sum(charge for charge, _ in take)
                rpm, tpm = self._limits
                grant: Grant = await self._actor.lease.remote(
                    self._run_id, rpm, tpm, len(take), tokens
                )
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

    def settle(self, charged: float, estimated_input: float, used_in: int, used_out: int) -> None:
        self._settled.append((charged, estimated_input, used_in, used_out))
        self._flush()

    def refund(self, charged: float) -> None:
        self._refunds += charged
        self._flush()

    def rate_limited(self, retry_after_s: float | None) -> None:
        self._actor.rate_limited.remote(retry_after_s)

    def headers(self, remaining_requests: int | None, remaining_tokens: int | None) -> None:
        if remaining_requests == 0 or remaining_tokens == 0:
            self._actor.headers.remote(remaining_requests, remaining_tokens)

    def _flush(self) -> None:
        if not self._reporting:
            self._reporting = True
            asyncio.ensure_future(self._report_loop())

    async def _report_loop(self) -> None:
        try:
            while self._settled or self._refunds:
                settled, self._settled = self._settled, []
                refunds, self._refunds = self._refunds, 0.0
                await self._actor.report.remote(settled, refunds)
        except Exception as exc:
            log.warning("could not report usage to the rate budget: %s", exc)
        finally:
            self._reporting = False
