"""Ranks a leaderboard may claim: by paired significance, the test `compare` prints.

A row's rank is 1 plus the number of rows significantly better than it: rows whose paired
test on the units both hold (`metrics.paired.paired_test`: exact McNemar on binary units,
the clustered McNemar otherwise) rejects "no difference" at 5 % and whose mean is higher.
A board of N rows makes N(N−1)/2 comparisons: by default the p-values are adjusted by Holm's
step-down method, so the chance of claiming any difference among equal rows stays at 5 %
(`adjust="none"`: each pair at an unadjusted 5 %).
Rows that cannot be told apart share a band: a band is a set of rows linked by "not
significantly different" or "the same rank". So two rows in different bands always differ
significantly, by the very interval `compare` shows for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evalfleet.metrics.intervals import UnitValues
from evalfleet.metrics.paired import ALPHA, holm, paired_test

HOLM = "holm"
NONE = "none"
ADJUSTMENTS = (HOLM, NONE)


@dataclass(frozen=True)
class Ranked:
    rank: int
    band: int  # 1 for the band holding rank 1
    better_than: tuple[int, ...]  # the rows (by position) this one is significantly better than


def significance_ranks(rows: Sequence[UnitValues], adjust: str = HOLM) -> list[Ranked]:
    """Rank and band of each row, in the input's order; `adjust` is "holm" or "none"."""
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"adjust is one of {', '.join(ADJUSTMENTS)}, not {adjust!r}")
    n = len(rows)
    better = [[False] * n for _ in range(n)]  # better[i][j]: i significantly better than j
    tests = []
    for i in range(n):
        for j in range(i + 1, n):
            found = paired_test(rows[i], rows[j])
            if found is not None:
                tests.append((i, j, found))
    p_values = [t.p for _, _, t in tests]
    if adjust == HOLM:
        p_values = holm(p_values)
    for (i, j, found), p in zip(tests, p_values, strict=True):
        if p < ALPHA and found.difference != 0:
            if found.difference > 0:
                better[i][j] = True
            else:
                better[j][i] = True
    ranks = [1 + sum(better[j][i] for j in range(n)) for i in range(n)]
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            apart = better[i][j] or better[j][i]
            if not apart or ranks[i] == ranks[j]:
                parent[root(i)] = root(j)
    tops: dict[int, int] = {}
    for i in range(n):
        tops[root(i)] = min(tops.get(root(i), ranks[i]), ranks[i])
    order = sorted(tops, key=lambda r: (tops[r], r))
    band_of = {r: position + 1 for position, r in enumerate(order)}
    return [
        Ranked(ranks[i], band_of[root(i)], tuple(j for j in range(n) if better[i][j]))
        for i in range(n)
    ]
