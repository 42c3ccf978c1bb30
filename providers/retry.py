"""Bounded, jittered exponential back-off driven by the error taxonomy."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from providers.types import ProviderError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_total_s: float = 600.0

    def delay(self, attempt: int, retry_after_s: float | None, rng: random.Random) -> float:
        """Full jitter on 2**attempt, never shorter than what the server asked for."""
        ceiling = min(self.max_delay_s, self.base_delay_s * (2**attempt))
        jittered = rng.uniform(ceiling / 2, ceiling)
        return max(jittered, retry_after_s or 0.0)


@dataclass
class Attempted:
    """A final outcome plus how many attempts it took."""

    attempts: int
    errors: list[ProviderError]


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    on_error: Callable[[ProviderError], Awaitable[None]] | None = None,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> tuple[T | None, ProviderError | None, Attempted]:
    """Run `call` until it succeeds, fails terminally, or the policy's bounds are reached.

    Returns (result, final_error, attempted); exactly one of result / final_error is set.
    """
    rng = rng or random.Random()
    started = time.monotonic()
    errors: list[ProviderError] = []
    for attempt in range(policy.max_attempts):
        try:
            result = await call()
            return result, None, Attempted(attempt + 1, errors)
        except ProviderError as exc:
            errors.append(exc)
            if on_error is not None:
                await on_error(exc)
            last = attempt + 1 >= policy.max_attempts
            if not exc.retryable or last:
                return None, exc, Attempted(attempt + 1, errors)
            wait = policy.delay(attempt, exc.retry_after_s, rng)
            if time.monotonic() - started + wait > policy.max_total_s:
                return None, exc, Attempted(attempt + 1, errors)
            await sleep(wait)
    raise AssertionError("unreachable")
