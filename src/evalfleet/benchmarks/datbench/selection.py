"""Rebuilding DatBench's discriminative selection from a fleet of models (paper §3.4, App. E).

For each item, x is its 0/1 correctness over the models and y each model's capability score
(accuracy on the item's capability pool, the item included; with `leave_one_out`, without it).
Its discrimination is the point-biserial correlation r_pb = (M1 - M0) / s_y * sqrt(p q) (s_y the
population SD), undefined when every model or no model solves it. Selection per capability:

1. up to `frontier_share` of k slots go to frontier items — flagged `eval_metrics.is_frontier`
   and failed by every model — in dataset order;
2. the rest, greedily by descending r_pb (negative ones naturally last, undefined ones after).

The report compares the subset's total discrimination with random subsets of the same size,
and the models' ranking on the subset with their ranking on the full set.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from evalfleet.metrics import point_biserial


@dataclass(frozen=True)
class Item:
    id: str
    capability: str
    is_frontier: bool
    correct: dict[str, float]  # model -> 1.0 / 0.0


@dataclass(frozen=True)
class Scored:
    item: Item
    r_pb: float | None  # None: undefined (p is 0 or 1, or y does not vary)
    p: float


def model_scores(items: Sequence[Item], models: Sequence[str]) -> dict[str, float]:
    return {m: sum(i.correct[m] for i in items) / len(items) for m in models}


def discrimination(
    items: Sequence[Item], models: Sequence[str], *, leave_one_out: bool = False
) -> list[Scored]:
    """r_pb of every item against its capability's model scores."""
    by_capability: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        by_capability[item.capability].append(item)
    totals = {
        cap: {m: sum(i.correct[m] for i in pool) for m in models}
        for cap, pool in by_capability.items()
    }
    out = []
    for item in items:
        pool = by_capability[item.capability]
        x = [item.correct[m] for m in models]
        if leave_one_out:
            n = len(pool) - 1
            y = [(totals[item.capability][m] - item.correct[m]) / n if n else 0.0 for m in models]
        else:
            y = [totals[item.capability][m] / len(pool) for m in models]
        out.append(Scored(item, point_biserial(x, y), sum(x) / len(x)))
    return out


def select(scored: Sequence[Scored], k: int, frontier_share: float) -> list[tuple[Scored, str]]:
    """(item, why) chosen per capability: "frontier" first, then "discriminative"."""
    chosen: list[tuple[Scored, str]] = []
    by_capability: dict[str, list[Scored]] = defaultdict(list)
    for s in scored:
        by_capability[s.item.capability].append(s)
    for pool in by_capability.values():
        reserve = math.floor(k * frontier_share)
        frontier = [s for s in pool if s.item.is_frontier and s.p == 0.0][:reserve]
        taken = {s.item.id for s in frontier}
        rest = [s for s in pool if s.item.id not in taken]
        # descending r_pb; undefined after every defined one; ties keep dataset order
        rest.sort(key=lambda s: (s.r_pb is None, -(s.r_pb or 0.0)))
        chosen += [(s, "frontier") for s in frontier]
        chosen += [(s, "discriminative") for s in rest[: k - len(frontier)]]
    return chosen


def total_discrimination(scored: Sequence[Scored]) -> float:
    return sum(s.r_pb for s in scored if s.r_pb is not None)


def random_baseline(
    scored: Sequence[Scored], sizes: dict[str, int], seed: int, draws: int
) -> float:
    """Mean total discrimination of random subsets with the same size per capability."""
    rng = random.Random(seed)
    by_capability: dict[str, list[Scored]] = defaultdict(list)
    for s in scored:
        by_capability[s.item.capability].append(s)
    totals = []
    for _ in range(draws):
        subset = [s for cap, n in sizes.items() for s in rng.sample(by_capability[cap], n)]
        totals.append(total_discrimination(subset))
    return sum(totals) / len(totals)


def rank_agreement(
    subset: Sequence[Item], full: Sequence[Item], models: Sequence[str]
) -> tuple[float, float]:
    """(Spearman, Kendall tau-b) of the models' accuracies on the subset against the full set."""
    from scipy.stats import kendalltau, spearmanr

    on_subset = model_scores(subset, models)
    on_full = model_scores(full, models)
    a = [on_subset[m] for m in models]
    b = [on_full[m] for m in models]
    return float(spearmanr(a, b).statistic), float(kendalltau(a, b).statistic)
