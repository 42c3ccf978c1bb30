"""The shared rate budget of one (provider, model, API key): requests and tokens per minute.

Pure logic with an injectable clock; `evalfleet.tasks.limiter` hosts one in a named Ray actor per
budget, so every run and judge on a cluster draws from the same one, and workers lease
capacity from it in small batches.

Why the buckets hold so little: providers count a minute as a sliding window. A bucket that
refills at `(1 - HEADROOM) * limit` per minute, holds at most `BURST * limit` and releases at
most `LUMP * limit` at once (a lease paid for mostly before a window starts can land inside
it) never lets more than `(1 - HEADROOM + BURST + LUMP) * limit` = 99 % of the limit through
in any 60 s, so the budget's own traffic is never refused, while it uses about 97.5 % of it.

Where the provider states its limits (OpenAI's `x-ratelimit-limit-requests` and
`-remaining-requests`, Anthropic's `anthropic-ratelimit-requests-limit` and `-remaining`, the
same for tokens), the budget follows them (`observe`): the limit it applies is the stricter of
the runs' and the provider's, less what others using the same key take. That share is what the
provider says is used of its window (limit - remaining) beyond what this budget granted in the
last minute, smoothed.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

HEADROOM = 0.025  # the refill rate is 97.5 % of the limit
BURST = 0.01  # the most a bucket holds: 1 % of a minute's limit (at least one unit)
LUMP = 0.005  # the most one lease releases at once: 0.5 % of a minute's limit
DECREASE_COOLDOWN_S = 2.0  # 429s this close together are one congestion event, one halving
CLAIM_TTL_S = 120.0  # a run that has not leased for this long no longer constrains the budget
EWMA = 0.1  # weight of the newest observation in the token estimates
WINDOW_S = 60.0  # the providers' window: what this budget granted in it is its own use


@dataclass
class Bucket:
    """Refills `per_minute * (1 - HEADROOM) * scale` units per minute; holds a small burst."""

    per_minute: float
    clock: Callable[[], float] = time.monotonic
    level: float = field(init=False)
    stamp: float = field(init=False)

    def __post_init__(self) -> None:
        self.level = self.capacity
        self.stamp = self.clock()

    @property
    def capacity(self) -> float:
        return max(1.0, self.per_minute * BURST)

    def _rate(self, scale: float) -> float:
        """Units per second."""
        return self.per_minute * (1 - HEADROOM) * scale / 60.0

    def _refill(self, scale: float) -> None:
        now = self.clock()
        if now > self.stamp:
            self.level = min(self.capacity, self.level + (now - self.stamp) * self._rate(scale))
            self.stamp = now

    def reserve(self, units: float, scale: float) -> float:
        """Take `units` now (the level may go negative); return seconds until they are paid."""
        self._refill(scale)
        self.level -= min(units, self.per_minute)  # one oversized request must still get through
        held = max(0.0, self.stamp - self.clock())
        return held + max(0.0, -self.level) / self._rate(scale)

    def charge(self, units: float) -> None:
        """Correct the level once the real size is known (negative: a refund)."""
        self.level = min(self.capacity, self.level - units)

    def hold(self, seconds: float, scale: float) -> None:
        """Nothing more for `seconds`, and no credit saved up meanwhile: what is reserved during
        a pause is spread out after it, not released at once when it ends."""
        self._refill(scale)
        self.level = min(self.level, 0.0)
        self.stamp = max(self.stamp, self.clock() + seconds)


@dataclass(frozen=True)
class Grant:
    """Capacity a worker may use once `wait_s` has passed; sizes its next lease."""

    requests: int
    tokens: float
    wait_s: float
    batch: int  # how many requests the worker may ask for in its next lease
    expected_output_tokens: float
    input_ratio: float  # real input tokens / the worker's estimate, learned from usage


@dataclass
class Limits:
    rpm: float | None
    tpm: float | None

    def stricter(self, other: Limits) -> Limits:
        def low(a: float | None, b: float | None) -> float | None:
            return b if a is None else a if b is None else min(a, b)

        return Limits(low(self.rpm, other.rpm), low(self.tpm, other.tpm))


@dataclass
class SharedBudget:
    """One budget, any number of runs: the stricter of their limits applies.

    429s halve the rate (and honour Retry-After); a provider header saying nothing remains
    pauses it until one unit is back; successes restore it gradually.
    """

    clock: Callable[[], float] = time.monotonic
    lease_s: float = 0.2  # a lease covers about this much time at the current rate
    decrease: float = 0.5
    recover_per_success: float = 0.02
    floor_fraction: float = 0.05
    scale: float = 1.0
    expected_output_tokens: float = 0.0
    input_ratio: float = 1.0
    claims: dict[str, tuple[Limits, float]] = field(default_factory=dict)
    limits: Limits = field(default_factory=lambda: Limits(None, None))
    _requests: Bucket | None = None
    _tokens: Bucket | None = None
    rate_limited_count: int = 0
    granted_requests: int = 0
    request_tokens: float = 0.0  # mean tokens charged per request (sizes the leases)
    last_decrease: float = float("-inf")
    provider: Limits = field(default_factory=lambda: Limits(None, None))  # from its headers
    others_requests: float = 0.0  # of the provider's window, used by others with this key
    others_tokens: float = 0.0
    _granted: deque[tuple[float, int, float]] = field(
        default_factory=deque
    )  # (usable at, n, tokens)

    def claim(self, run_id: str, rpm: float | None, tpm: float | None) -> str | None:
        """Register (or refresh) a run's limits; return a note when they are not what applies."""
        now = self.clock()
        asked = Limits(rpm, tpm)
        previous = self.claims.get(run_id)
        self.claims[run_id] = (asked, now)
        for other, (_, seen) in list(self.claims.items()):
            if now - seen > CLAIM_TTL_S:
                del self.claims[other]
        effective = self._claimed()
        self._apply(self._effective())
        if previous is not None and previous[0] == asked:
            return None
        if effective != asked:
            return (
                f"another run on this cluster limits it to rpm={_num(effective.rpm)} "
                f"tpm={_num(effective.tpm)} (this run asked rpm={_num(rpm)} tpm={_num(tpm)}): "
                "the stricter limits apply to both"
            )
        return None

    def _claimed(self) -> Limits:
        effective = Limits(None, None)
        for limits, _ in self.claims.values():
            effective = effective.stricter(limits)
        return effective

    def _effective(self) -> Limits:
        """The runs' limits, and the provider's less what others take of it."""
        rpm, tpm = self.provider.rpm, self.provider.tpm
        stated = Limits(
            None if rpm is None else max(1.0, float(round(rpm - self.others_requests))),
            None if tpm is None else max(1.0, float(round(tpm - self.others_tokens))),
        )
        return self._claimed().stricter(stated)

    def _apply(self, limits: Limits) -> None:
        if limits == self.limits:
            return
        self.limits = limits
        self._requests = _rebucket(self._requests, limits.rpm, self.clock, self.scale)
        self._tokens = _rebucket(self._tokens, limits.tpm, self.clock, self.scale)

    def observe(
        self,
        limit_requests: int | None,
        remaining_requests: int | None,
        limit_tokens: int | None,
        remaining_tokens: int | None,
        sent: int = 0,
    ) -> None:
        """What a provider's answer said of its window: follow its limits, learn what others
        using the key take of them, and pause when nothing remains. `sent`: requests a
        worker sent before it drew on this budget (its own, not others')."""
        now = self.clock()
        if sent:
            self._granted.append((now, sent, 0.0))
        self._forget_granted(now)
        own_requests = sum(n for at, n, _ in self._granted if at <= now)
        own_tokens = sum(t for at, _, t in self._granted if at <= now)
        if limit_requests:
            self.provider = Limits(float(limit_requests), self.provider.tpm)
            if remaining_requests is not None:
                others = max(0.0, limit_requests - remaining_requests - own_requests)
                self.others_requests += EWMA * (others - self.others_requests)
        if limit_tokens:
            self.provider = Limits(self.provider.rpm, float(limit_tokens))
            if remaining_tokens is not None:
                others = max(0.0, limit_tokens - remaining_tokens - own_tokens)
                self.others_tokens += EWMA * (others - self.others_tokens)
        self._apply(self._effective())
        self.headers(remaining_requests, remaining_tokens)

    def _forget_granted(self, now: float) -> None:
        while self._granted and self._granted[0][0] <= now - WINDOW_S:
            self._granted.popleft()

    def lease(self, requests: int, tokens: float) -> Grant:
        """Reserve up to `requests` requests (and their share of `tokens` tokens); the grant
        says how many, and when to use them."""
        asked = max(1, requests)
        per_request = tokens / asked
        if per_request > 0:
            self.request_tokens += EWMA * (per_request - self.request_tokens)
        requests = min(asked, self._lump_requests(per_request))
        tokens = per_request * requests
        wait = 0.0
        if self._requests is not None:
            wait = max(wait, self._requests.reserve(requests, self.scale))
        if self._tokens is not None:
            wait = max(wait, self._tokens.reserve(tokens, self.scale))
        self.granted_requests += requests
        now = self.clock()
        self._granted.append((now + wait, requests, tokens))
        self._forget_granted(now)
        return Grant(
            requests=requests,
            tokens=tokens,
            wait_s=wait,
            batch=self.batch(),
            expected_output_tokens=self.expected_output_tokens,
            input_ratio=self.input_ratio,
        )

    def _lump_requests(self, per_request: float) -> int:
        """The most requests one lease may release at once."""
        most = 64
        if self.limits.rpm:
            most = min(most, int(self.limits.rpm * LUMP))
        if self.limits.tpm and per_request > 0:
            most = min(most, int(self.limits.tpm * LUMP / per_request))
        return max(1, most)

    def batch(self) -> int:
        """Requests per lease: about `lease_s` worth at the current rate, within the lump."""
        per_request = max(1.0, self.request_tokens)
        rates = []
        if self.limits.rpm:
            rates.append(self.limits.rpm / 60.0)
        if self.limits.tpm:
            rates.append(self.limits.tpm / 60.0 / per_request)
        if not rates:
            return self._lump_requests(per_request)
        wanted = int(min(rates) * self.scale * self.lease_s)
        return max(1, min(wanted, self._lump_requests(per_request)))

    def settle(self, charged: float, estimated_input: float, used_input: int, used_output: int):
        """The real usage of a call: correct the token bucket and learn the estimates."""
        if self._tokens is not None:
            self._tokens.charge(used_input + used_output - charged)
        if estimated_input > 0:
            ratio = used_input / estimated_input
            self.input_ratio += EWMA * (ratio - self.input_ratio)
        if self.expected_output_tokens:
            self.expected_output_tokens += EWMA * (used_output - self.expected_output_tokens)
        else:
            self.expected_output_tokens = float(used_output)

    def refund(self, charged: float) -> None:
        """A call that never reached the provider (refused before sending, cancelled)."""
        if self._tokens is not None:
            self._tokens.charge(-charged)

    def rate_limited(self, retry_after_s: float | None) -> None:
        self.rate_limited_count += 1
        now = self.clock()
        if now - self.last_decrease >= DECREASE_COOLDOWN_S:
            self.last_decrease = now
            self.scale = max(self.floor_fraction, self.scale * self.decrease)
        if retry_after_s:
            self._hold(self._requests, retry_after_s)
            self._hold(self._tokens, retry_after_s)

    def _hold(self, bucket: Bucket | None, seconds: float) -> None:
        if bucket is not None:
            bucket.hold(seconds, self.scale)

    def headers(self, remaining_requests: int | None, remaining_tokens: int | None) -> None:
        """A provider said what remains of its own window: nothing left means someone else is
        using this key too; wait for one unit to come back and slow down a little."""
        if remaining_requests == 0 and self.limits.rpm:
            self.scale = max(self.floor_fraction, self.scale * 0.9)
            self._hold(self._requests, 60.0 / self.limits.rpm)
        if remaining_tokens == 0 and self.limits.tpm:
            self.scale = max(self.floor_fraction, self.scale * 0.9)
            per_request = max(1.0, self.expected_output_tokens)
            self._hold(self._tokens, 60.0 * per_request / self.limits.tpm)

    def succeeded(self, calls: int = 1) -> None:
        for _ in range(calls):
            self.scale = min(1.0, self.scale + self.recover_per_success * self.scale)


def _rebucket(old: Bucket | None, per_minute: float | None, clock, scale: float) -> Bucket | None:
    """The bucket at a new rate: a debt and a pause carry over, credit beyond the new
    capacity does not."""
    if per_minute is None:
        return None
    if old is None:
        return Bucket(per_minute, clock)
    old._refill(scale)  # what accrued at the old rate
    old.per_minute = per_minute
    old.level = min(old.level, old.capacity)
    return old


def _num(value: float | None) -> str:
    return "none" if value is None else f"{value:g}"
