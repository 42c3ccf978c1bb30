"""The shared rate budget's logic on a fake clock: it never grants more than the limit in
any sliding minute, yet uses 97.5 % of it; the stricter of two runs' limits wins; 429s,
Retry-After and empty provider windows slow it; usage corrects and teaches the estimates."""

from __future__ import annotations

import bisect

import pytest

from evalfleet.providers.ratelimit import CLAIM_TTL_S, SharedBudget
from evalfleet.tasks.limiter import BudgetId, key_fingerprint


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def greedy(budget: SharedBudget, clock: Clock, seconds: float, batch: int = 1, tokens=0.0):
    """A consumer that always wants more: returns the times its grants become usable."""
    times: list[float] = []
    end = clock.now + seconds
    while clock.now < end:
        grant = budget.lease(batch, tokens * batch)
        clock.now += grant.wait_s
        times.extend([clock.now] * grant.requests)
    return times


def most_in_a_minute(times: list[float]) -> int:
    return max(bisect.bisect_right(times, t + 60.0 - 1e-9) - i for i, t in enumerate(times))


@pytest.mark.parametrize("batch", [1, 5])
def test_requests_never_pass_the_limit_in_any_minute_and_use_97_5_percent(batch):
    clock = Clock()
    budget = SharedBudget(clock=clock)
    budget.claim("run-a", 600, None)
    times = greedy(budget, clock, 300.0, batch=batch)
    assert most_in_a_minute(times) <= 594  # 97.5 % + the 1 % burst + a 0.5 % lump at most
    # 6 (the 1 % burst) + 585/min * 5 min, give or take the last lease (at most 3: 0.5 %)
    assert 2931 <= len(times) <= 2931 + 3


def test_one_lease_releases_at_most_half_a_percent_of_the_limit():
    clock = Clock()
    budget = SharedBudget(clock=clock)
    budget.claim("run-a", 6000, 1_000_000)
    grant = budget.lease(100, 100 * 1000.0)
    assert (grant.requests, grant.tokens) == (5, 5000.0)  # 1,000,000 * 0.5 % / 1,000 tokens
    budget.claim("run-a", 600, 1_000_000)
    assert budget.lease(100, 100 * 10.0).requests == 3  # 600 * 0.5 %


def test_tokens_never_pass_the_limit_in_any_minute():
    clock = Clock()
    budget = SharedBudget(clock=clock)
    budget.claim("run-a", None, 100_000)
    times = greedy(budget, clock, 180.0, tokens=500.0)
    assert most_in_a_minute(times) * 500 <= 100_000
    assert len(times) * 500 >= 0.97 * 100_000 * 3


def test_the_stricter_of_two_runs_limits_applies_and_is_said():
    clock = Clock()
    budget = SharedBudget(clock=clock)
    assert budget.claim("run-a", 600, 90_000) is None
    note = budget.claim("run-b", 300, None)
    assert note == (
        "another run on this cluster limits it to rpm=300 tpm=90000 (this run asked rpm=300 "
        "tpm=none): the stricter limits apply to both"
    )
    assert (budget.limits.rpm, budget.limits.tpm) == (300, 90_000)
    assert budget.claim("run-a", 600, 90_000) is None  # same claim again: nothing new to say
    clock.now += CLAIM_TTL_S + 1
    budget.claim("run-a", 600, 90_000)  # run-b has not leased for two minutes: it is gone
    assert (budget.limits.rpm, budget.limits.tpm) == (600, 90_000)


def test_a_429_halves_the_rate_and_its_retry_after_is_honoured():
    clock = Clock()
    budget = SharedBudget(clock=clock)
    budget.claim("run-a", 600, None)
    budget.lease(6, 0)  # the burst is used up
    budget.rate_limited(retry_after_s=2.5)
    assert budget.scale == 0.5
    budget.rate_limited(retry_after_s=None)  # the same congestion: not halved again
    assert budget.scale == 0.5
    # nothing for 2.5 s, then half of 585/min: one request every 60/292.5 s, spread out
    assert budget.lease(1, 0).wait_s == pytest.approx(2.5 + 60 / 292.5)
    assert budget.lease(1, 0).wait_s == pytest.approx(2.5 + 60 / 292.5 * 2)
    clock.now += 2.0
    budget.rate_limited(retry_after_s=None)  # two seconds later: a new event
    assert budget.scale == 0.25
    budget.scale = 0.5
    budget.succeeded(35)  # recovery is gradual: 2 % per success
    assert budget.scale == pytest.approx(min(1.0, 0.5 * 1.02**35))


def test_an_empty_provider_window_pauses_for_one_request():
    clock = Clock()
    budget = SharedBudget(clock=clock)
    budget.claim("run-a", 600, None)
    budget.lease(6, 0)  # the burst is used up
    budget.headers(remaining_requests=0, remaining_tokens=None)
    assert budget.scale == pytest.approx(0.9)
    # 60 s / 600 of nothing, then one request at 90 % of 585/min
    assert budget.lease(1, 0).wait_s == pytest.approx(0.1 + 60 / (585 * 0.9))
    budget.headers(remaining_requests=5, remaining_tokens=None)  # something left: no change
    assert budget.scale == pytest.approx(0.9)


def test_usage_corrects_the_token_bucket_and_teaches_the_estimates():
    clock = Clock()
    budget = SharedBudget(clock=clock)
    budget.claim("run-a", None, 60_000)  # 1 % burst: 600 tokens
    assert budget.lease(1, 100).wait_s == 0.0
    budget.settle(charged=100, estimated_input=100, used_input=200, used_output=300)
    # 400 tokens more were used than charged: 600 - 100 - 400 = 100 are left
    assert budget.lease(1, 0).wait_s == 0.0
    # 588 more: 488 short, at 60,000 * 97.5 % per minute = 975 per second
    assert budget.lease(1, 588).wait_s == pytest.approx(488 / 975)
    assert budget.expected_output_tokens == 300.0  # the first observation is taken as is
    assert budget.input_ratio == pytest.approx(1.0 + 0.1 * (2.0 - 1.0))
    budget.settle(charged=0, estimated_input=100, used_input=100, used_output=100)
    assert budget.expected_output_tokens == pytest.approx(300 + 0.1 * (100 - 300))


def test_budgets_are_named_by_a_key_fingerprint_never_the_key():
    key = "sk-live-DO-NOT-LEAK-1234567890"
    fingerprint = key_fingerprint(key)
    assert len(fingerprint) == 12 and key not in fingerprint and "sk-" not in fingerprint
    assert fingerprint == key_fingerprint(key) != key_fingerprint(key + "x")
    assert key_fingerprint("") == "nokey"
    name = BudgetId("openai", "gpt-4o", fingerprint).name
    assert name == f"ratelimit:openai/gpt-4o@{fingerprint}"
