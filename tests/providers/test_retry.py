"""The retry policy's three budgets: failures by attempts and time, rate limits by waiting
time only, empty answers by a small count; terminal errors at once."""

from __future__ import annotations

import asyncio
import random

from evalfleet.providers.retry import RetryPolicy, call_with_retries
from evalfleet.providers.types import ErrorKind, ProviderError


class Script:
    """A call that fails with the given kinds in order, then answers "ok"."""

    def __init__(self, *kinds: ErrorKind, retry_after_s: float | None = None) -> None:
        self.kinds = list(kinds)
        self.calls = 0
        self.retry_after_s = retry_after_s

    async def __call__(self) -> str:
        self.calls += 1
        if self.kinds:
            kind = self.kinds.pop(0)
            raise ProviderError(kind, str(kind), retry_after_s=self.retry_after_s)
        return "ok"


def run(script: Script, policy: RetryPolicy) -> tuple[object, ProviderError | None, int, float]:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    result, error, attempted = asyncio.run(
        call_with_retries(script, policy, rng=random.Random(0), sleep=sleep)
    )
    return result, error, attempted.attempts, sum(slept)


def test_rate_limits_do_not_use_up_the_attempts():
    policy = RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.001)
    script = Script(*[ErrorKind.RATE_LIMITED] * 20, ErrorKind.SERVER_ERROR, retry_after_s=1.0)
    result, error, attempts, slept = run(script, policy)
    assert (result, error, attempts) == ("ok", None, 22)
    assert slept >= 20.0  # every Retry-After honoured


def test_rate_limits_are_bounded_in_waiting_time():
    policy = RetryPolicy(max_rate_limited_s=10.0)
    result, error, attempts, slept = run(
        Script(*[ErrorKind.RATE_LIMITED] * 50, retry_after_s=3.0), policy
    )
    assert result is None and error.kind == ErrorKind.RATE_LIMITED
    assert (attempts, slept) == (4, 9.0)  # a fourth wait of 3 s would pass 10 s


def test_failures_are_bounded_in_attempts():
    policy = RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.001)
    script = Script(
        ErrorKind.SERVER_ERROR, ErrorKind.RATE_LIMITED, ErrorKind.TIMEOUT, ErrorKind.OVERLOADED
    )
    result, error, attempts, _ = run(script, policy)
    assert result is None and error.kind == ErrorKind.OVERLOADED
    assert attempts == 4  # three failures, plus the 429 that did not count


def test_empty_answers_are_retried_a_bounded_number_of_times():
    policy = RetryPolicy(max_empty_answers=2)
    assert run(Script(ErrorKind.EMPTY_ANSWER, ErrorKind.EMPTY_ANSWER), policy)[:3] == (
        "ok",
        None,
        3,
    )
    result, error, attempts, slept = run(Script(*[ErrorKind.EMPTY_ANSWER] * 5), policy)
    assert (result, error.kind, attempts, slept) == (None, ErrorKind.EMPTY_ANSWER, 3, 0.0)


def test_terminal_errors_are_not_retried():
    for kind in (ErrorKind.BAD_REQUEST, ErrorKind.AUTH, ErrorKind.NOT_FOUND):
        result, error, attempts, slept = run(Script(kind), RetryPolicy())
        assert (result, error.kind, attempts, slept) == (None, kind, 1, 0.0)
