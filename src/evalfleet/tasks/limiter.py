"""Cluster-wide rate budgets: one named Ray actor per (provider, API model, key fingerprint).

Every run and judge on the cluster that calls the same model with the same key draws from
the same actor, whatever its run id. Workers do not ask the actor once per request: a
`Lease` in each worker (`tasks.lease`) asks for as many requests as are waiting (up to the
budget's batch size) in one round trip, and reports the real usage back, with what the
provider's headers said of its window.

A model with limits (the registry's, the run's) has its actor from the run's start; one without
gets it from the first worker whose answer states a limit (`open_budget`).

The actor is named by a fingerprint of the key, never the key, and restarts if its node is
lost (its state starts over from the claims the next leases carry).
"""

from __future__ import annotations

import logging
from typing import Any

import ray

from evalfleet.providers.ratelimit import Grant, SharedBudget
from evalfleet.tasks.lease import (
    ActorPort,
    BudgetId,
    Lease,
    Observed,
    key_fingerprint,
    report_to,
)

__all__ = ["BudgetId", "Lease", "SharedRateLimit", "join", "key_fingerprint", "shared_limit"]

NAMESPACE = "evalfleet"
log = logging.getLogger("evalfleet.limiter")


# Ray's stub types the decorator's task options only, not an actor's (max_concurrency).
@ray.remote(num_cpus=0, max_concurrency=1, max_restarts=-1, max_task_retries=-1)  # type: ignore[call-overload]
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

    def report(
        self,
        settled: list[tuple[float, float, int, int]],
        refunds: float,
        seen: Observed | None = None,
    ) -> None:
        """Usage of finished calls: (charged, estimated input, used input, used output), and
        the last window a provider's headers stated."""
        report_to(self._budget, settled, refunds, seen)

    def rate_limited(self, retry_after_s: float | None) -> None:
        self._budget.rate_limited(retry_after_s)

    def observe(
        self,
        limit_requests: int | None,
        remaining_requests: int | None,
        limit_tokens: int | None,
        remaining_tokens: int | None,
        sent: int = 0,
    ) -> None:
        self._budget.observe(
            limit_requests, remaining_requests, limit_tokens, remaining_tokens, sent
        )

    def stats(self) -> dict[str, Any]:
        budget = self._budget
        return {
            "rpm": budget.limits.rpm,
            "tpm": budget.limits.tpm,
            "provider_rpm": budget.provider.rpm,
            "provider_tpm": budget.provider.tpm,
            "scale": budget.scale,
            "rate_limited": budget.rate_limited_count,
            "granted_requests": budget.granted_requests,
            "runs": sorted(budget.claims),
        }


def shared_limit(budget: BudgetId) -> Any:
    """The cluster's actor for this budget (created on first use, kept for later runs)."""
    return SharedRateLimit.options(  # type: ignore[attr-defined]  # an actor class (see above)
        name=budget.name, namespace=NAMESPACE, get_if_exists=True, lifetime="detached"
    ).remote()


def open_budget(budget: BudgetId) -> ActorPort:
    """The key's shared budget, made on first use (a worker that learns a limit)."""
    return ActorPort(shared_limit(budget))


def join(budget: BudgetId, run_id: str, rpm: float | None, tpm: float | None) -> str | None:
    """Register a run's limits; a note if another run's stricter limits apply instead."""
    return ray.get(shared_limit(budget).claim.remote(run_id, rpm, tpm))
