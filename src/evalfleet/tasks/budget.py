"""A run's cost cap (`--max-cost-usd`): each call reserves what it is expected to cost while it
is in flight, and settles to what it really cost when it lands.

A reservation that would take the real spend plus the reservations in flight past the cap is
refused; the dispatcher then waits for calls in flight to settle and asks again, and stops
only when a reservation is refused with nothing in flight. While nothing is known of what a
model's calls really cost, only `PROBE` of them are in flight: a first estimate far below
the real cost cannot send a whole wave of calls past the cap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalfleet.storage.layout import ItemKey
from evalfleet.tasks.work import WorkItem

PROBE = 3  # landed calls of a model (or a model on a benchmark) before their mean stands
PAID = ("ok", "failed", "write_failed")  # outcomes of a call made by this run
EPSILON_USD = 1e-12  # sums of floats that equal the cap on paper may pass it by a hair


class Budget:
    """What a run may still spend. `cost_of(item, prompt)` is an item's expected cost before
    any of its model's calls landed (the estimate's figure, `evalfleet.engine.prepare.estimate`)."""

    def __init__(
        self, cap_usd: float, spent_usd: float, cost_of: Callable[[WorkItem, Any], float]
    ) -> None:
        self.cap_usd = cap_usd
        self.spent_usd = spent_usd  # real: the stored records' and this run's landed calls
        self._cost_of = cost_of
        self._reserved: dict[ItemKey, float] = {}
        self.reserved_usd = 0.0  # the sum of `_reserved`
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}  # (caller, bench|"") -> USD, n

    def expected(self, item: WorkItem, prompt: Any) -> float:
        """The mean real cost of this model's calls on this benchmark once `PROBE` landed, else
        on any benchmark, else the estimate."""
        for scope in (item.key.benchmark, ""):
            total, calls = self._seen.get((item.key.caller, scope), (0.0, 0))
            if calls >= PROBE:
                return total / calls
        return self._cost_of(item, prompt)

    def limit(self, caller: str) -> int | None:
        """How many calls of `caller` may be in flight: `PROBE` until that many landed."""
        return None if self._seen.get((caller, ""), (0.0, 0))[1] >= PROBE else PROBE

    def reserve(self, item: WorkItem, prompt: Any) -> bool:
        """Reserve `item`'s expected cost, unless spend plus reservations would pass the cap."""
        cost = self.expected(item, prompt)
        if self.spent_usd + self.reserved_usd + cost > self.cap_usd + EPSILON_USD:
            return False
        self._reserved[item.key] = cost
        self.reserved_usd += cost
        return True

    def settle(self, key: ItemKey, paid: tuple[str, float] | None) -> None:
        """Release `key`'s reservation; `paid` is (status, real cost) of the call that landed,
        None when its worker was lost (it is sent again and reserves again)."""
        self.reserved_usd -= self._reserved.pop(key, 0.0)
        if not self._reserved:
            self.reserved_usd = 0.0  # no float residue once nothing is in flight
        if paid is None:
            return
        status, cost = paid
        self.spent_usd += cost
        if status in PAID:
            for scope in (key.benchmark, ""):
                total, calls = self._seen.get((key.caller, scope), (0.0, 0))
                self._seen[(key.caller, scope)] = (total + cost, calls + 1)

    def left_usd(self) -> float:
        return max(0.0, self.cap_usd - self.spent_usd)
