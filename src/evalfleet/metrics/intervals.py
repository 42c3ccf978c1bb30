"""The 95 % intervals every page shows, one function per kind of figure.

A headline is the mean of per-unit values (`UnitValues`): a unit is what is sampled
independently (a question; a ZeroBench main question for its subquestions; a DatBench circular
group). Which interval it gets depends only on what its units hold:

- every unit one item scored 0 or 1 (a share of independent binary items): the Wilson score
  interval on (correct, n). Wald's value ± z·SE covers far less than 95 % at ZeroBench's
  0–5 % (Bowyer et al. 2025): 0 of 100 is 0.000–0.037 here, not 0.000–0.000;
- one unit: no interval ("—, one unit"): nothing varies that an interval could be drawn from;
- otherwise (means over epochs or over subquestions, fractional scores), from `SMALL` units
  up: a percentile bootstrap over the units, `DRAWS` draws from
  `numpy.random.default_rng(SEED)`; below `SMALL` units, where the percentile bootstrap
  covers too little (0.88 with 4 clusters, 0.92 with 10), Wilson's interval on the effective
  number of units, n_eff = m(1−m) / (s²/n) for the mean m of the n unit values of sample
  variance s², with t(0.975, n−1) in place of z (after Korn and Graubard 1998; a plain t
  interval covered 0.88 at p = 0.1 with 10 clusters). When every unit has the same value neither
  has anything to spread and Wilson on (sum, units) is used, so an interval from finite data
  is never zero-width. From `COUNTS_FROM` units holding at most `MAX_LEVELS` distinct values
  (a mean over a few 0/1 epochs takes few), each bootstrap draw is made as the counts of
  each distinct value (one multinomial draw): the same resampling distribution, without
  drawing an index per unit (a million answers' 10,000 draws of 80,000 units took 6 s).

Two rows are compared on the units both hold (`paired`): the difference of the means with
the same rule on the per-unit differences (Miller 2024: paired differences): a bootstrap from
`SMALL` shared units, a t interval below, none for one shared unit. When every shared unit
differs by the same v, no unit was seen departing from v: the share that could is at most
Wilson's upper bound w on 0 of n, and the interval is v moved by w towards each end of
[−1, 1] (0 of 120 identical units: −0.031 to +0.031), never a zero-width one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.959964  # two-sided 95 %
Z80 = 0.841621  # one-sided 80 %: power 0.8
DRAWS = 10_000
SEED = 0
SMALL = 30  # fewer units get a t interval, not the percentile bootstrap
_CELLS = 4_000_000  # draws x units resampled at once (memory bound, same stream)
COUNTS_FROM = 5_000  # units from which a bootstrap of few distinct values draws counts
MAX_LEVELS = 256


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: str  # "wilson", "bootstrap" or "small-sample Wilson"


@dataclass(frozen=True)
class UnitValues:
    """A headline's units: `ids[i]` has the mean value `values[i]` over `epochs[i]` epochs,
    with `epoch_var[i]` the variance of its per-epoch values (ddof 1; 0 with one epoch).
    `binary` when every unit is a single item scored 0 or 1."""

    ids: tuple[str, ...]
    values: np.ndarray
    epochs: np.ndarray
    epoch_var: np.ndarray
    binary: bool

    @classmethod
    def of(
        cls,
        ids: Sequence[str],
        values: Sequence[float],
        epochs: Sequence[int] | None = None,
        epoch_var: Sequence[float] | None = None,
        binary: bool = False,
    ) -> UnitValues:
        n = len(ids)
        return cls(
            tuple(ids),
            np.asarray(values, dtype=float),
            np.ones(n, dtype=int) if epochs is None else np.asarray(epochs, dtype=int),
            np.zeros(n) if epoch_var is None else np.asarray(epoch_var, dtype=float),
            binary,
        )

    def __len__(self) -> int:
        return len(self.ids)

    def mean(self) -> float | None:
        return float(self.values.mean()) if len(self) else None

    def interval(self) -> Interval | None:
        """The 95 % interval of the mean, by the rule of the module docstring. The bootstrap
        draws the units in the order of their sorted ids, whatever order they came in."""
        if len(self) < 2:
            return None
        if self.binary:
            return wilson(float(self.values.sum()), len(self))
        order = sorted(range(len(self)), key=self.ids.__getitem__)
        return unit_mean_interval(self.values[order])

    def restricted(self, ids: Sequence[str]) -> UnitValues:
        index = {u: i for i, u in enumerate(self.ids)}
        rows = np.array([index[u] for u in ids], dtype=int)
        return UnitValues(
            tuple(ids), self.values[rows], self.epochs[rows], self.epoch_var[rows], self.binary
        )


def wilson(k: float, n: float, z: float = Z95) -> Interval:
    """Wilson score interval of k successes in n (k may be a sum of fractional values)."""
    if n <= 0:
        raise ValueError(f"need n > 0, got {n}")
    p = k / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    # the ends are exact where the data are: centre − half is 4e-19, not 0, at 0 of 500
    low = 0.0 if k <= 0 else max(0.0, centre - half)
    high = 1.0 if k >= n else min(1.0, centre + half)
    return Interval(low, high, "wilson")


@functools.cache
def t975(df: int) -> float:
    """The 97.5th percentile of Student's t with `df` degrees of freedom: the inverse CDF
    `scipy.stats.t.ppf` calls, the same value, from `scipy.special` (0.15 s of CPU to import,
    imported here as most commands never draw a t interval) rather than `scipy.stats` (0.5 s)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.975))


def small_interval(values: np.ndarray) -> Interval:
    """Wilson on the effective number of units with t(0.975, n−1) for z (n ≥ 2, values in
    [0, 1] not all equal): the rule below `SMALL` units."""
    n = len(values)
    mean = float(values.mean())
    spread = float(values.var(ddof=1)) / n
    effective = mean * (1 - mean) / spread
    found = wilson(mean * effective, effective, t975(n - 1))
    return Interval(found.low, found.high, "small-sample Wilson")


def t_interval(values: np.ndarray, low: float = 0.0, high: float = 1.0) -> Interval:
    """mean ± t(0.975, n−1)·sd/√n, clipped to [low, high] (n ≥ 2, sd > 0)."""
    n = len(values)
    half = t975(n - 1) * float(values.std(ddof=1)) / math.sqrt(n)
    mean = float(values.mean())
    return Interval(max(low, mean - half), min(high, mean + half), "t")


def bootstrap_means(values: np.ndarray, draws: int = DRAWS, seed: int = SEED) -> np.ndarray:
    """The mean of each of `draws` resamples (with replacement) of `values`."""
    n = len(values)
    rng = np.random.default_rng(seed)
    if n >= COUNTS_FROM:
        levels, counts = np.unique(values, return_counts=True)
        if len(levels) <= MAX_LEVELS:
            # n units drawn with replacement hold each distinct value a multinomial number
            # of times: the resample's mean is those counts times the values, over n
            picks = rng.multinomial(n, counts / n, size=draws)
            return picks @ levels / n
    per_chunk = max(1, _CELLS // max(n, 1))
    out = np.empty(draws)
    for start in range(0, draws, per_chunk):
        rows = min(per_chunk, draws - start)
        out[start : start + rows] = values[rng.integers(0, n, size=(rows, n))].mean(axis=1)
    return out


def unit_mean_interval(values: Sequence[float] | np.ndarray) -> Interval | None:
    """The interval of the mean of per-unit values by the module's rule: none for one unit,
    Wilson on (sum, units) when every value is the same, a t interval below `SMALL` units, a
    percentile bootstrap from there."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return None
    if np.all(values == values[0]):
        return wilson(float(values.sum()), len(values))
    if len(values) < SMALL:
        return small_interval(values)
    low, high = np.percentile(bootstrap_means(values), [2.5, 97.5])
    return Interval(float(low), float(high), "bootstrap")


@dataclass(frozen=True)
class PairedDifference:
    """mean(a) − mean(b) on the units both hold, with its 95 % interval (None, and `why`,
    when there is no interval to give: one shared unit), the SD of the per-unit differences
    and how the interval was drawn (`method`)."""

    a: float
    b: float
    difference: float
    units: int
    low: float | None
    high: float | None
    sd: float
    why: str | None = None
    method: str | None = None  # "bootstrap", "t" or "none differs" (see `paired`)

    @property
    def significant(self) -> bool:
        """The interval excludes 0."""
        return self.low is not None and (self.low > 0 or (self.high or 0) < 0)

    @property
    def a_better(self) -> bool:
        """a is significantly better than b: the interval lies above 0."""
        return self.low is not None and self.low > 0


def shared_units(a: UnitValues, b: UnitValues) -> list[str]:
    """The unit ids both hold, sorted: `paired(b, a)` then draws the same units as
    `paired(a, b)` and gives exactly the negated interval."""
    return sorted(set(a.ids) & set(b.ids))


def paired(a: UnitValues, b: UnitValues) -> PairedDifference | None:
    """The paired difference on the shared units (None when none is shared), its interval by
    the module's rule."""
    common = shared_units(a, b)
    if not common:
        return None
    va, vb = a.restricted(common).values, b.restricted(common).values
    d = va - vb
    n = len(d)
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    low = high = None
    why = method = None
    if n < 2:
        why = "one shared unit"
    elif np.all(d == d[0]):
        low, high = same_difference_interval(float(d[0]), n)
        method = "none differs" if d[0] == 0 else "all differ alike"
    elif n < SMALL:
        found = t_interval(d, -1.0, 1.0)
        low, high, method = found.low, found.high, "t"
    else:
        low, high = (float(x) for x in np.percentile(bootstrap_means(d), [2.5, 97.5]))
        method = "bootstrap"
    return PairedDifference(
        float(va.mean()), float(vb.mean()), float(d.mean()), n, low, high, sd, why, method
    )


def same_difference_interval(value: float, n: int) -> tuple[float, float]:
    """Every one of n shared units differs by `value`: the share of units that could differ
    otherwise is at most w = Wilson's upper bound on 0 of n, and each could move the mean at
    most to an end of [−1, 1]."""
    w = wilson(0, n).high
    return max(-1.0, value - w * (value + 1.0)), min(1.0, value + w * (1.0 - value))


def mde(sd: float, n: int) -> float:
    """Minimum detectable difference at 95 % confidence and 80 % power (Miller 2024):
    (z_{α/2} + z_β) · sd(d) / sqrt(n)."""
    return (Z95 + Z80) * sd / math.sqrt(n) if n > 0 else math.inf


def units_needed(sd: float, delta: float) -> int | None:
    """Units needed to detect a difference `delta` at 80 % power: ((z_{α/2}+z_β)·sd/δ)²;
    None when delta is 0 (no difference to detect)."""
    if delta == 0:
        return None
    return max(1, math.ceil(((Z95 + Z80) * sd / abs(delta)) ** 2))


def epochs_needed(between_var: float, within_var: float, n: int, delta: float) -> int | None:
    """Epochs per unit that would detect `delta` with `n` units, when a unit's value is a mean
    over epochs: Var(d̄) = (σ²_between + σ²_within / E) / n. None when more epochs cannot get
    there (the spread between units alone hides the difference) or delta is 0."""
    if delta == 0 or n <= 0:
        return None
    room = delta * delta * n / (Z95 + Z80) ** 2 - max(between_var, 0.0)
    if room <= 0:
        return None
    return max(1, math.ceil(within_var / room))


def units_from_observations(
    observations: Sequence[tuple[str, int, float]],
) -> UnitValues:
    """Per-unit values from (unit, epoch, value) observations: a unit's value in an epoch is
    the mean of its items there (a main question's subquestions), and its value the mean over
    its epochs. Units keep the order in which they first appear; binary when every unit is one
    observation of 0 or 1."""
    per_epoch: dict[str, dict[int, list[float]]] = {}
    for unit, epoch, value in observations:
        per_epoch.setdefault(unit, {}).setdefault(epoch, []).append(float(value))
    ids, values, epochs, spread = [], [], [], []
    binary = True
    for unit, by_epoch in per_epoch.items():
        means = [math.fsum(v) / len(v) for v in by_epoch.values()]
        ids.append(unit)
        values.append(math.fsum(means) / len(means))
        epochs.append(len(means))
        spread.append(_sample_variance(means))
        only = next(iter(by_epoch.values()))
        binary = binary and len(by_epoch) == 1 and len(only) == 1 and only[0] in (0.0, 1.0)
    return UnitValues.of(ids, values, epochs, spread, binary and bool(ids))


def _sample_variance(values: list[float]) -> float:
    """`np.var(values, ddof=1)` (0 for one value), in plain Python below NumPy's pairwise
    block of 8, where it sums in order too: a run has a unit per question, and NumPy's call
    costs more than the arithmetic."""
    n = len(values)
    if n < 2:
        return 0.0
    if n >= 8:
        return float(np.var(values, ddof=1))
    mean = sum(values) / n
    return sum((x - mean) * (x - mean) for x in values) / (n - 1)
