"""What it would take to tell two results apart (Miller 2024, power): the minimum detectable
difference with the units at hand, and how many more units (or epochs) would detect the
difference observed, at what cost; or that this benchmark cannot settle it.

All at 95 % confidence and 80 % power, from the observed SD of the paired per-unit
differences. The cost is this run's own: each side's cost per unit of its answers (and
judgements), at the registry's prices, as `evalfleet run --estimate` prices them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalfleet.benchmarks import registry
from evalfleet.metrics.intervals import (
    PairedDifference,
    UnitValues,
    epochs_needed,
    mde,
    units_needed,
)
from evalfleet.reports import formatting as fmt


@dataclass(frozen=True)
class Power:
    mde: float
    units: int
    needed: int | None  # units that would detect the observed difference
    epochs: int | None  # epochs per unit that would, where a unit is a mean over epochs
    words: str


def what_it_would_take(
    a: UnitValues,
    b: UnitValues,
    found: PairedDifference,
    benchmark: str,
    cost_per_unit_usd: float | None,
) -> Power:
    """`found` is `metrics.intervals.paired(a, b)`; `cost_per_unit_usd` what one more unit
    costs both sides together (None: unknown)."""
    bench = registry.get(benchmark) if benchmark in registry.names() else None
    unit = bench.unit_name if bench else "item"
    pool = bench.pool_units if bench else None
    n, delta = found.units, found.difference
    smallest = mde(found.sd, n)
    head = f"with {n} {unit}s the smallest difference 80 % power detects is {fmt.share(smallest)}"
    if smallest >= 1:
        head = f"with {n} {unit}s no difference can be detected at 80 % power"
    if delta == 0 or found.sd == 0:
        return Power(smallest, n, None, None, f"{head}; no difference was observed")
    needed = units_needed(found.sd, delta)
    assert needed is not None
    epochs = _epochs(a, b, found)
    if found.significant:
        words = f"{head}; the observed {fmt.signed(delta)} is already significant"
    elif needed <= n:
        words = (
            f"{head}; {n} {unit}s should detect {fmt.signed(delta)} at 80 % power, but this "
            "sample did not: more epochs or a re-run would tell"
        )
    elif pool is not None and needed > pool:
        words = (
            f"{head}; detecting {fmt.signed(delta)} needs about {needed:,} {unit}s and "
            f"{benchmark} has {pool:,}: it cannot be settled on this benchmark"
        )
    else:
        more = needed - n
        cost = "" if cost_per_unit_usd is None else f", about {fmt.money(more * cost_per_unit_usd)}"
        words = (
            f"{head}; about {more:,} more {unit}s ({needed:,} in all) would detect "
            f"{fmt.signed(delta)}{cost} at this run's prices"
        )
    if epochs is not None and not found.significant:
        words += f"; or {epochs} epochs per {unit} on the same {unit}s"
    return Power(smallest, n, needed, epochs, words)


def _epochs(a: UnitValues, b: UnitValues, found: PairedDifference) -> int | None:
    """Epochs per unit that would detect the difference, where units are means over several
    epochs: the per-epoch spread within units shrinks with epochs, the spread between units
    does not."""
    from evalfleet.metrics.intervals import shared_units

    common = shared_units(a, b)
    ra, rb = a.restricted(common), b.restricted(common)
    epochs = int(min(ra.epochs.min(), rb.epochs.min()))
    if epochs < 2:
        return None
    within = float(np.mean(ra.epoch_var + rb.epoch_var))
    between = found.sd**2 - within / epochs
    wanted = epochs_needed(between, within, found.units, found.difference)
    return wanted if wanted is not None and wanted > epochs else None
