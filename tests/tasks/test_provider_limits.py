"""Limits a provider states, a window where it states none, retunes and wake-ups, as logic:
the budget follows the limit headers (less what others take), the window probes (slow start,
additive increase, halving on 429, never past its ceiling), a lease moves from its window to
the key's shared budget at the first stated limit, the control file retunes, and a call in
back-off goes again as soon as another call to its endpoint succeeds."""

from __future__ import annotations

import asyncio
import time

from evalfleet.providers.congestion import INITIAL, Window
from evalfleet.providers.ratelimit import SharedBudget
from evalfleet.providers.retry import RetryPolicy, Wake, call_with_retries
from evalfleet.providers.retry_after import limits_from_headers, remaining_from_headers
from evalfleet.providers.types import ErrorKind, ProviderError
from evalfleet.storage import open_store
from evalfleet.tasks.lease import Lease, LocalPort
from evalfleet.tasks.run_control import Retunes, read_limits, write_limits


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_limit_headers_of_openai_and_anthropic_are_read():
    openai = {"x-ratelimit-limit-requests": "600", "x-ratelimit-limit-tokens": "90000"}
    assert limits_from_headers(openai) == (600, 90000)
    anthropic = {
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-tokens-limit": "x",
    }
    assert limits_from_headers(anthropic) == (50, None)
    assert limits_from_headers({"retry-after": "3"}) == (None, None)
    assert remaining_from_headers({"x-ratelimit-remaining-requests": "7"}) == (7, None)


def test_a_budget_with_no_figures_follows_the_providers_limit():
    clock = Clock()
    budget = SharedBudget(clock=clock)
    budget.claim("run-a", None, None)
    assert budget.limits.rpm is None
    budget.observe(600, 599, None, None)
    assert budget.limits.rpm == 600.0
    assert budget.lease(1, 0.0).batch == 2  # 600/min for 0.2 s
    budget.claim("run-a", 300, None)  # a run's own figure, stricter, applies
    assert budget.limits.rpm == 300.0


def test_what_others_take_of_the_providers_window_is_left_to_them():
    clock = Clock()
    budget = SharedBudget(clock=clock)
    budget.observe(600, 600, None, None)
    for _ in range(40):  # this budget granted nothing; the provider says 200 are used
        budget.observe(600, 400, None, None)
        clock.now += 0.5
    assert 590 > budget.limits.rpm > 400  # smoothed towards 600 - 200
    for _ in range(200):
        budget.observe(600, 400, None, None)
    assert budget.limits.rpm == 400.0


def test_a_pause_carries_over_a_change_of_rate():
    clock = Clock()
    budget = SharedBudget(clock=clock)
    budget.claim("run-a", 600, None)
    budget.rate_limited(10.0)
    budget.claim("run-a", 300, None)  # retuned during the pause
    assert budget.lease(1, 0.0).wait_s >= 10.0


def test_the_window_doubles_each_round_then_grows_by_one_and_halves_on_429():
    clock = Clock()
    window = Window(clock=clock)
    assert window.allowed == INITIAL
    for _ in range(INITIAL):  # a full window answered: one round trip
        window.answered(held_back=True)
    assert window.allowed == 2 * INITIAL
    window.rate_limited()
    assert window.allowed == INITIAL
    window.rate_limited()  # the same congestion event
    assert window.allowed == INITIAL
    clock.now += 2.0
    window.rate_limited()
    assert window.allowed == INITIAL // 2
    for _ in range(INITIAL // 2 + 1):  # additive increase: one per window's worth
        window.answered(held_back=True)
    assert window.allowed == INITIAL // 2 + 1


def test_the_window_grows_only_when_full_and_never_past_its_ceiling():
    window = Window(ceiling=40)
    window.answered(held_back=False)
    assert window.allowed == INITIAL
    for _ in range(100):
        window.answered(held_back=True)
    assert window.allowed == 40
    window.set_ceiling(10)
    assert window.allowed == 10


def test_a_lease_keeps_its_window_until_an_answer_states_a_limit():
    budget = SharedBudget()
    opened: list[LocalPort] = []

    def open_shared() -> LocalPort:
        opened.append(LocalPort(budget))
        return opened[-1]

    async def scenario() -> tuple[int, bool, float | None]:
        lease = Lease("run-a", None, None, open_shared=open_shared, ceiling=3)
        slots = [await lease.acquire(0.0) for _ in range(3)]
        fourth = asyncio.ensure_future(lease.acquire(0.0))
        await asyncio.sleep(0.01)
        waited = not fourth.done()  # the window (ceiling 3) holds it back
        lease.answered(slots[0], 0, 10, 5, (600, 599, None, None))
        slot = await asyncio.wait_for(fourth, 1.0)
        return int(waited), slot.shared, budget.limits.rpm

    waited, shared, rpm = asyncio.run(scenario())
    assert (waited, shared, rpm, len(opened)) == (1, True, 600.0, 1)


def test_a_retune_gives_a_window_lease_the_shared_budget():
    budget = SharedBudget()
    lease = Lease("run-a", None, None, open_shared=lambda: LocalPort(budget))
    assert not lease.shared
    lease.retune(120, None, 8)
    assert lease.shared and lease.window.allowed == 8

    async def one() -> None:
        await lease.acquire(0.0)

    asyncio.run(one())
    assert budget.limits.rpm == 120.0


def test_a_call_in_back_off_goes_again_when_another_call_gets_through():
    policy = RetryPolicy(base_delay_s=20.0, max_delay_s=20.0)
    wake = Wake()
    down = {"up": False}

    async def flaky() -> str:
        if not down["up"]:
            raise ProviderError(ErrorKind.SERVER_ERROR, "503", status=503)
        return "ok"

    async def healthy() -> str:
        return "ok"

    async def scenario() -> tuple[float, int]:
        started = time.monotonic()
        waiting = asyncio.ensure_future(call_with_retries(flaky, policy, wake=wake))
        await asyncio.sleep(0.05)  # it failed and sleeps 10-20 s
        down["up"] = True
        await call_with_retries(healthy, policy, wake=wake)
        _, error, attempted = await asyncio.wait_for(waiting, 5.0)
        assert error is None
        return time.monotonic() - started, attempted.attempts

    elapsed, attempts = asyncio.run(scenario())
    assert attempts == 2 and elapsed < 1.0 and wake.wakes == 1


def test_a_success_with_nothing_failing_wakes_nobody():
    wake = Wake()
    wake.succeeded()
    assert wake.wakes == 0


def test_the_control_file_keeps_each_retune_and_readers_see_the_last(tmp_path):
    store = open_store(str(tmp_path))
    assert read_limits(store, "r1") is None
    retunes = Retunes(store, "r1", 64, every_s=0.0)
    assert retunes.max_in_flight() == 64
    write_limits(store, "r1", {"*": 300}, {}, None, "t1")
    limits = write_limits(store, "r1", {"openai/a": 100}, {"*": 9000}, 16, "t2")
    assert (limits.seq, limits.rpm_for("openai/a"), limits.rpm_for("openai/b")) == (2, 100, 300)
    assert (limits.tpm_for("openai/b"), retunes.max_in_flight()) == (9000, 16)
    assert read_limits(store, "r1") == limits
