"""How often the 95 % intervals hold the truth, and how often the paired tests claim a
difference that is not there, each from simulated runs (`--runs`, 2,000 by default):

- `coverage_wilson` / `coverage_wald`: 100 questions a model gets right with p = 0.03, each
  run's interval by Wilson (the leaderboard's, `evalfleet.metrics.intervals.wilson`) and by
  Wald (value ± 1.959964·SE, clipped). Exact binomial arithmetic gives 0.969 and 0.802
  (`reference/statistics.md`); the simulated figures scatter around those.
- `coverage_cluster_small`: 10 main questions of 4 subquestions, intra-cluster correlation
  0.3, p = 0.3; the interval of the grouped mean as the pages draw it (below 30 units a
  Wilson on the effective units; the percentile bootstrap gave 0.92 here).
- `coverage_wilson_p0_n500`: 0 of 500 right when p = 0: Wilson's lower end must be exactly 0.
- `type1_clustered_paired`: two equal models on 30 main questions of 4 subquestions (ICC
  0.3, p = 0.3; each model's chance on a question drawn on its own, equal on average): how
  often the paired test (`metrics.paired.paired_test`, the clustered McNemar) rejects at 5 %.
  Treating the subquestions as independent (plain McNemar): `type1_plain_mcnemar`.
- `fwer_ranks`: 8 equal models on 120 binary items (each item's difficulty shared by all):
  how often the leaderboard's ranks (`metrics.ranking.significance_ranks`, Holm) claim any
  difference; `fwer_unadjusted` the same without Holm.

    .venv/bin/python perf/coverage.py [--runs 2000] [--seed 0] [--smoke]

`--smoke`: 200 runs, the same code (a check that the script works, not a measurement).

Prints, last, every figure as `name=value` on one line.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalfleet.metrics.intervals import Z95, UnitValues, wilson  # noqa: E402
from evalfleet.metrics.paired import ALPHA, mcnemar_exact, paired_test  # noqa: E402
from evalfleet.metrics.ranking import NONE, significance_ranks  # noqa: E402

ICC = 0.3


def wald(k: int, n: int) -> tuple[float, float]:
    p = k / n
    half = Z95 * math.sqrt(p * (1 - p) / n)
    return max(0.0, p - half), min(1.0, p + half)


def difficulties(rng: np.random.Generator, clusters: int, p: float, icc: float) -> np.ndarray:
    """Each cluster's chance of a right answer: Beta with mean p and intra-cluster
    correlation icc (α + β = 1/icc − 1)."""
    total = 1 / icc - 1
    return rng.beta(p * total, (1 - p) * total, size=clusters)


def coverage_binary(rng: np.random.Generator, runs: int, p: float, n: int) -> tuple[float, float]:
    held_wilson = held_wald = 0
    for k in rng.binomial(n, p, size=runs):
        interval = wilson(int(k), n)
        held_wilson += interval.low <= p <= interval.high
        low, high = wald(int(k), n)
        held_wald += low <= p <= high
    return held_wilson / runs, held_wald / runs


def coverage_clustered(rng: np.random.Generator, runs: int, clusters: int, size: int) -> float:
    p, held = 0.3, 0
    ids = [f"m{i:03d}" for i in range(clusters)]
    for _ in range(runs):
        chance = difficulties(rng, clusters, p, ICC)
        values = rng.binomial(size, chance) / size
        interval = UnitValues.of(ids, values).interval()
        held += interval is not None and interval.low <= p <= interval.high
    return held / runs


def type1_paired(rng: np.random.Generator, runs: int, clusters: int, size: int) -> tuple:
    ids = [f"m{i:03d}" for i in range(clusters)]
    clustered = plain = 0
    for _ in range(runs):
        # each model's own chance on each question (per-question effects), equal on average
        a = rng.random(clusters * size) < np.repeat(difficulties(rng, clusters, 0.3, ICC), size)
        b = rng.random(clusters * size) < np.repeat(difficulties(rng, clusters, 0.3, ICC), size)
        a, b = a.astype(float), b.astype(float)
        ua = UnitValues.of(ids, a.reshape(clusters, size).mean(axis=1))
        ub = UnitValues.of(ids, b.reshape(clusters, size).mean(axis=1))
        clustered += paired_test(ua, ub).p < ALPHA
        plain += mcnemar_exact(int(np.sum(a > b)), int(np.sum(a < b))) < ALPHA
    return clustered / runs, plain / runs


def fwer(rng: np.random.Generator, runs: int, models: int, items: int) -> tuple[float, float]:
    ids = [f"q{i:04d}" for i in range(items)]
    adjusted = unadjusted = 0
    for _ in range(runs):
        chance = rng.random(items)  # each item's difficulty, shared by every model
        rows = [
            UnitValues.of(ids, (rng.random(items) < chance).astype(float), binary=True)
            for _ in range(models)
        ]
        adjusted += any(r.rank > 1 for r in significance_ranks(rows))
        unadjusted += any(r.rank > 1 for r in significance_ranks(rows, NONE))
    return adjusted / runs, unadjusted / runs


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="200 runs: a check, not a figure")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    if args.smoke:
        args.runs = 200
    rng = np.random.default_rng(args.seed)
    figures = {}
    figures["coverage_wilson"], figures["coverage_wald"] = coverage_binary(
        rng, args.runs, 0.03, 100
    )
    figures["coverage_cluster_small"] = coverage_clustered(rng, args.runs, 10, 4)
    figures["coverage_wilson_p0_n500"] = coverage_binary(rng, args.runs, 0.0, 500)[0]
    figures["type1_clustered_paired"], figures["type1_plain_mcnemar"] = type1_paired(
        rng, args.runs, 30, 4
    )
    figures["fwer_ranks"], figures["fwer_unadjusted"] = fwer(rng, args.runs, 8, 120)
    print(f"runs={args.runs} seed={args.seed}")
    print(" ".join(f"{name}={value:.3f}" for name, value in figures.items()))


if __name__ == "__main__":
    main()
