"""Item discrimination: how well one item separates strong models from weak ones."""

from __future__ import annotations

import math
from collections.abc import Sequence


def point_biserial(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Point-biserial correlation r_pb = ((M1 - M0)/s_y) * sqrt(p*q).

    x holds an item's 0/1 correctness per model, y each model's capability score; s_y is the
    population SD (ddof=0), so r_pb equals Pearson r(x, y). None when it is undefined: every
    model right or every model wrong (p in {0, 1}), or all y equal.
    """
    if len(x) != len(y):
        raise ValueError(f"x has {len(x)} values but y has {len(y)}")
    if any(v not in (0, 1) for v in x):
        raise ValueError("x must hold 0/1 correctness values")
    n = len(x)
    right = [b for a, b in zip(x, y, strict=True) if a == 1]
    wrong = [b for a, b in zip(x, y, strict=True) if a == 0]
    if not right or not wrong:
        return None
    mean_y = math.fsum(y) / n
    s_y = math.sqrt(math.fsum((v - mean_y) ** 2 for v in y) / n)
    if s_y == 0.0:
        return None
    p = len(right) / n
    m1 = math.fsum(right) / len(right)
    m0 = math.fsum(wrong) / len(wrong)
    return (m1 - m0) / s_y * math.sqrt(p * (1.0 - p))
