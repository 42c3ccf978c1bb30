"""ZeroBench (jonathan-roberts1/zerobench): 100 main questions and 334 subquestions, scored as
inspect_evals does (`upstream`, the official number), by our forgiving reading (`robust`), and,
with a judge model, by the paper's fallback parser (`judge`).

Two registry entries share this package: `zerobench` (main questions) and
`zerobench_subquestions` (grouped by main question).
"""

from evalfleet.benchmarks.zerobench.benchmark import (
    ZEROBENCH,
    ZEROBENCH_SUBQUESTIONS,
    ZeroBench,
    ZeroBenchMain,
    ZeroBenchSubquestions,
)

__all__ = [
    "ZEROBENCH",
    "ZEROBENCH_SUBQUESTIONS",
    "ZeroBench",
    "ZeroBenchMain",
    "ZeroBenchSubquestions",
]
