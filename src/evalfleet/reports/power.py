"""What it would take to tell two results apart (Miller 2024, power): the minimum detectable
difference with the units at hand, and how many more units (or epochs) would detect the
difference observed, at what cost; or that this benchmark cannot settle it.

All at 95 % confidence and 80 % power, from the observed SD of the paired per-unit
differences; "significant" is the paired test's verdict (`metrics.paired.paired_test`), the
one compare prints. Where the differences have no spread (every shared unit differs alike),
no power figure can be drawn from them and the words say what was seen instead. The pool a
difference is weighed against is the dataset the run used (`pool`): the benchmark's
published size for its published data, never fewer than the units measured. The cost is
this run's own: each side's cost per unit of its answers (and judgements), at the
registry's prices, as `evalfleet run --estimate` prices them.
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
    wilson,
)
from evalfleet.metrics.paired import ALPHA, PairedTest
from evalfleet.reports import formatting as fmt

PUBLISHED = -1  # `pool`: the benchmark's published size


@dataclass(frozen=True)
class Power:
    mde: float | None  # None: the differences have no spread to draw it from
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
    test: PairedTest | None = None,
    pool: int | None = PUBLISHED,
) -> Power:
    """`found` is `metrics.intervals.paired(a, b)` and `test` `metrics.paired.paired_test(a,
    b)` (None: judged by the interval); `cost_per_unit_usd` what one more unit costs both
    sides together (None: unknown); `pool` the units of the dataset the run used (None:
    unknown; by default the benchmark's published size)."""
    bench = registry.get(benchmark) if benchmark in registry.names() else None
    unit = bench.unit_name if bench else "item"
    if pool == PUBLISHED:
        pool = bench.pool_units if bench else None
    n, delta = found.units, found.difference
    if pool is not None:
        pool = max(pool, n)
    significant = test.p < ALPHA if test is not None else found.significant
    if found.sd == 0:
        return Power(None, n, None, None, _no_spread(n, unit, delta, significant))
    smallest = mde(found.sd, n)
    head = f"with {n} {unit}s the smallest difference 80 % power detects is {fmt.share(smallest)}"
    if smallest >= 1:
        head = f"with {n} {unit}s no difference can be detected at 80 % power"
    if delta == 0:
        return Power(smallest, n, None, None, f"{head}; the means are equal")
    needed = units_needed(found.sd, delta)
    assert needed is not None
    epochs = _epochs(a, b, found)
    if significant:
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
    if epochs is not None and not significant:
        words += f"; or {epochs} epochs per {unit} on the same {unit}s"
    return Power(smallest, n, needed, epochs, words)


def _no_spread(n: int, unit: str, delta: float, significant: bool) -> str:
    """Every shared unit differs by the same `delta`: the SD is 0 and a power figure drawn
    from it would claim any difference is detectable."""
    if n < 2:
        return f"one shared {unit}: nothing to size a difference from"
    if delta == 0:
        bound = wilson(0, n).high
        return (
            f"none of the {n} shared {unit}s differs: a difference smaller than about "
            f"{fmt.share(bound)} cannot be ruled out"
        )
    verdict = "significant" if significant else "not significant with so few"
    return (
        f"every one of the {n} shared {unit}s differs by {fmt.signed(delta)}: no spread to "
        f"size a power figure from; the difference is {verdict}"
    )


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
