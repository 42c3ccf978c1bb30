"""One named Ray actor per (provider, model) holding its cluster-wide rate limit."""

from __future__ import annotations

import ray

from providers.ratelimit import AdaptiveLimiter

NAMESPACE = "evalfleet"


@ray.remote(num_cpus=0, max_concurrency=1)
class RateLimiterActor:
    def __init__(self, rpm: float | None, tpm: float | None) -> None:
        self._limiter = AdaptiveLimiter(rpm=rpm, tpm=tpm)

    def configure(self, rpm: float | None, tpm: float | None) -> None:
        """Apply the limits of the current run (the actor may outlive an earlier one)."""
        if (rpm, tpm) != (self._limiter.rpm, self._limiter.tpm):
            self._limiter = AdaptiveLimiter(rpm=rpm, tpm=tpm)

    def acquire(self, tokens: float) -> float:
        return self._limiter.acquire(tokens)

    def settle(self, extra_tokens: float) -> None:
        """Correct the token bucket once the real usage is known (negative refunds)."""
        if self._limiter._tokens is not None and extra_tokens:
            self._limiter._tokens.level -= extra_tokens

    def rate_limited(self, retry_after_s: float | None) -> None:
        self._limiter.on_rate_limited(retry_after_s)

    def succeeded(self) -> None:
        self._limiter.on_success()

    def scale(self) -> float:
        return self._limiter.scale


def limiter_name(model_id: str) -> str:
    return f"ratelimit:{model_id}"


def get_or_create_limiter(model_id: str, rpm: float | None, tpm: float | None):
    """The one limiter of this model in the cluster (created on first use)."""
    actor = RateLimiterActor.options(
        name=limiter_name(model_id),
        namespace=NAMESPACE,
        get_if_exists=True,
        lifetime="detached",
    ).remote(rpm, tpm)
    ray.get(actor.configure.remote(rpm, tpm))
    return actor
