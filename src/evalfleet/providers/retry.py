"""Bounded, jittered exponential back-off driven by the error taxonomy.

Three budgets, so that one kind of trouble never uses up another's:

- failures (server errors, timeouts, connection errors, malformed bodies): at most
  `max_attempts` attempts within `max_total_s` seconds (time spent waiting out rate limits
  not counted);
- rate limiting (429): bounded in total waiting time (`max_rate_limited_s`), not attempts,
  because a 429 says "later", not "broken";
- empty answers: `max_empty_answers` more attempts, since tokens were already spent.

Terminal errors (other 4xx) are never retried.

A call waiting out a failure's back-off is woken at once when another call to the same endpoint
succeeds after errors (`Wake`): after an outage every waiting call goes again as soon as one
gets through, not at its own timer (up to `max_delay_s` later). A 429's wait is not cut short:
the rate budget decides when those go.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from evalfleet.providers.types import ErrorKind, ProviderError

T = TypeVar("T")
# One generator for every call: seeding a new one per call (from os.urandom) cost 3 % of a
# worker's CPU at hundreds of calls a second.
_RNG = random.Random()


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_total_s: float = 600.0
    max_rate_limited_s: float = 1800.0
    max_empty_answers: int = 2

    def delay(self, attempt: int, retry_after_s: float | None, rng: random.Random) -> float:
        """Full jitter on 2**attempt, never shorter than what the server asked for."""
        ceiling = min(self.max_delay_s, self.base_delay_s * (2**attempt))
        jittered = rng.uniform(ceiling / 2, ceiling)
        return max(jittered, retry_after_s or 0.0)

    def rate_limit_delay(self, n: int, retry_after_s: float | None, rng: random.Random) -> float:
        """What the server asked for; without a Retry-After, jittered exponential back-off."""
        if retry_after_s:
            return retry_after_s
        return self.delay(min(n, 10), None, rng)


class Wake:
    """The calls of one endpoint sleeping in back-off, and the signal that it answers again."""

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self.failing = False
        self.wakes = 0

    async def sleep(self, seconds: float) -> bool:
        """Sleep `seconds`, or less if the endpoint answers meanwhile; True when woken."""
        if self._event is None:
            self._event = asyncio.Event()
        try:
            await asyncio.wait_for(self._event.wait(), seconds)
        except TimeoutError:
            return False
        return True

    def failed(self) -> None:
        self.failing = True

    def succeeded(self) -> None:
        """A call got through: wake those waiting, if the endpoint had been failing."""
        if not self.failing:
            return
        self.failing = False
        if self._event is not None:
            self.wakes += 1
            self._event.set()
            self._event = None


@dataclass
class Attempted:
    """A final outcome plus how many attempts it took (all kinds counted)."""

    attempts: int
    errors: list[ProviderError]


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    on_error: Callable[[ProviderError], Awaitable[None]] | None = None,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    wake: Wake | None = None,
) -> tuple[T | None, ProviderError | None, Attempted]:
    """Run `call` until it succeeds, fails terminally, or a budget of the policy runs out.
    A failure's back-off ends early when `wake` says the endpoint answers again.

    Returns (result, final_error, attempted); exactly one of result / final_error is set.
    """
    rng = rng or _RNG
    errors: list[ProviderError] = []
    failures = empties = rate_limited = 0
    rate_wait = 0.0
    started = time.monotonic()
    while True:
        try:
            result = await call()
            if wake is not None:
                wake.succeeded()
            return result, None, Attempted(len(errors) + 1, errors)
        except ProviderError as exc:
            errors.append(exc)
            if on_error is not None:
                await on_error(exc)
            done = Attempted(len(errors), errors)
            if exc.kind == ErrorKind.RATE_LIMITED:
                wait = policy.rate_limit_delay(rate_limited, exc.retry_after_s, rng)
                rate_limited += 1
                rate_wait += wait
                if rate_wait > policy.max_rate_limited_s:
                    return None, exc, done
            elif exc.kind == ErrorKind.EMPTY_ANSWER:
                empties += 1
                if empties > policy.max_empty_answers:
                    return None, exc, done
                wait = 0.0
            else:
                failures += 1
                if not exc.retryable or failures >= policy.max_attempts:
                    return None, exc, done
                wait = policy.delay(failures - 1, exc.retry_after_s, rng)
                if time.monotonic() - started - rate_wait + wait > policy.max_total_s:
                    return None, exc, done
                if wake is not None:
                    wake.failed()
                    await wake.sleep(wait)
                    continue
            if wait > 0:
                await sleep(wait)
