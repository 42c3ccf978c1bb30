"""How many calls to send at once to a provider that states no limit: a congestion window.

Where a provider sends no rate-limit headers and neither the registry nor the run gives an
rpm/tpm, nothing says how much it takes. The window probes: it starts at `INITIAL` calls in
flight, grows by one per call answered (doubling each round trip) until the first 429, then by
one per window's worth of answers (additive increase); a 429 halves it (multiplicative
decrease; 429s within `COOLDOWN_S` of a decrease are one event). It grows only while it is what
holds the calls back (a window nobody fills says nothing about the provider), and never past
`ceiling` (the run's --max-in-flight, when known).

Pure logic with an injectable clock; a worker's `Lease` holds one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

INITIAL = 32  # calls in flight before anything is known: a small run goes out in one round
COOLDOWN_S = 2.0
FLOOR = 1.0


@dataclass
class Window:
    ceiling: int | None = None
    clock: Callable[[], float] = time.monotonic
    size: float = float(INITIAL)
    probing: bool = True  # slow start: no 429 seen yet
    in_flight: int = 0
    decreased_at: float = field(default=float("-inf"))
    decreases: int = 0

    def __post_init__(self) -> None:
        self.size = self._capped(self.size)

    @property
    def allowed(self) -> int:
        return max(1, int(self.size))

    def room(self) -> bool:
        return self.in_flight < self.allowed

    def take(self) -> None:
        self.in_flight += 1

    def release(self) -> None:
        self.in_flight = max(0, self.in_flight - 1)

    def answered(self, held_back: bool) -> None:
        """A call was answered: grow, if the window is what holds calls back (`held_back`:
        calls are waiting for room, or the window is full)."""
        if not held_back and self.in_flight < self.allowed:
            return
        self.size = self._capped(self.size + (1.0 if self.probing else 1.0 / self.size))

    def rate_limited(self) -> None:
        now = self.clock()
        self.probing = False
        if now - self.decreased_at < COOLDOWN_S:
            return
        self.decreased_at = now
        self.decreases += 1
        self.size = max(FLOOR, self.size / 2)

    def set_ceiling(self, ceiling: int | None) -> None:
        self.ceiling = ceiling
        self.size = self._capped(self.size)

    def _capped(self, size: float) -> float:
        return size if self.ceiling is None else min(size, float(self.ceiling))
