"""Token buckets for requests and tokens per minute, lowered on 429 and recovered slowly.

Pure logic with an injectable clock; `tasks.limiter` hosts one per (provider, model) in a
named Ray actor so the limit holds across the whole cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Bucket:
    """A bucket that refills `per_minute` units per minute and holds at most one minute's worth."""

    per_minute: float
    clock: Callable[[], float] = time.monotonic
    level: float = field(init=False)
    stamp: float = field(init=False)

    def __post_init__(self) -> None:
        # Start with a small burst so a cold start does not stampede the provider.
        self.level = max(1.0, self.per_minute / 10)
        self.stamp = self.clock()

    def _refill(self, rate: float) -> None:
        now = self.clock()
        self.level = min(self.per_minute, self.level + (now - self.stamp) * rate / 60.0)
        self.stamp = now

    def reserve(self, units: float, rate: float) -> float:
        """Take `units` now (possibly going negative); return seconds to wait before using them."""
        self._refill(rate)
        units = min(units, self.per_minute)  # one oversized request must still get through
        self.level -= units
        return 0.0 if self.level >= 0 else -self.level * 60.0 / rate


@dataclass
class AdaptiveLimiter:
    """Requests- and tokens-per-minute limits with multiplicative decrease on 429."""

    rpm: float | None
    tpm: float | None
    clock: Callable[[], float] = time.monotonic
    decrease: float = 0.5
    recover_per_success: float = 0.02
    floor_fraction: float = 0.05
    pause_until: float = 0.0
    scale: float = field(default=1.0, init=False)

    def __post_init__(self) -> None:
        self._requests = Bucket(self.rpm, self.clock) if self.rpm else None
        self._tokens = Bucket(self.tpm, self.clock) if self.tpm else None

    def acquire(self, tokens: float) -> float:
        """Reserve one request and `tokens` tokens; return how long the caller must wait."""
        wait = max(0.0, self.pause_until - self.clock())
        if self._requests:
            wait = max(wait, self._requests.reserve(1, self.rpm * self.scale))
        if self._tokens:
            wait = max(wait, self._tokens.reserve(tokens, self.tpm * self.scale))
        return wait

    def on_rate_limited(self, retry_after_s: float | None) -> None:
        self.scale = max(self.floor_fraction, self.scale * self.decrease)
        if retry_after_s:
            self.pause_until = max(self.pause_until, self.clock() + retry_after_s)

    def on_success(self) -> None:
        self.scale = min(1.0, self.scale + self.recover_per_success * self.scale)
