"""How often the 95 % intervals hold the truth at ZeroBench's scores: 2,000 simulated runs of
100 questions a model gets right with p = 0.03, each run's interval by Wilson (the leaderboard's,
`evalfleet.metrics.intervals.wilson`) and by Wald (value ± 1.959964·SE, clipped to [0, 1]).

Exact binomial arithmetic gives 0.969 for Wilson and 0.802 for Wald
(`reference/statistics.md`); the simulated figures scatter around those.

    .venv/bin/python perf/coverage.py [--runs 2000] [--p 0.03] [--n 100] [--seed 0] [--smoke]

`--smoke`: 200 runs, the same code (a check that the script works, not a measurement).

Prints, last: `coverage_wilson=… coverage_wald=…`.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalfleet.metrics.intervals import Z95, wilson  # noqa: E402


def wald(k: int, n: int) -> tuple[float, float]:
    p = k / n
    half = Z95 * math.sqrt(p * (1 - p) / n)
    return max(0.0, p - half), min(1.0, p + half)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--p", type=float, default=0.03)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="200 runs: a check, not a figure")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    if args.smoke:
        args.runs = 200
    correct = np.random.default_rng(args.seed).binomial(args.n, args.p, size=args.runs)
    held_wilson = held_wald = 0
    for k in correct:
        interval = wilson(int(k), args.n)
        held_wilson += interval.low <= args.p <= interval.high
        low, high = wald(int(k), args.n)
        held_wald += low <= args.p <= high
    print(f"runs={args.runs} p={args.p} n={args.n} seed={args.seed}")
    print(
        f"coverage_wilson={held_wilson / args.runs:.3f} coverage_wald={held_wald / args.runs:.3f}"
    )


if __name__ == "__main__":
    main()
