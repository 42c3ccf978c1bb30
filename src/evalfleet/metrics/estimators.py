"""Per-sample estimators over repeated epochs: pass@k and k/k reliability.

Both take n (scored epochs) and c (correct epochs, value >= threshold) for one sample.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def count_correct(values: Iterable[float], threshold: float = 1.0) -> tuple[int, int]:
    """Return (n, c): the number of epoch values and how many reach `threshold`."""
    items = list(values)
    return len(items), sum(1 for v in items if v >= threshold)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al.), computed exactly as inspect_ai >= 0.3.285.

    NaN when n < k (too few epochs); 1.0 when every k-subset must hold a correct epoch;
    otherwise 1 - C(n-c, k)/C(n, k), evaluated as 1 - prod_{i=n-c+1..n}(1 - k/i) so the
    floating-point result matches upstream bit for bit (c=1, n=5, k=1 gives 0.19999999999999996).
    """
    _check_counts(n, c)
    if n < k:
        return math.nan
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def reliability_at_k(n: int, c: int, k: int) -> float:
    """k/k reliability: the chance that k epochs drawn without replacement are all correct.

    C(c, k)/C(n, k) as inspect_evals `reliability_at` (not the naive (c/n)**k). NaN when
    n < k: k of k was never measured (inspect_evals gives 0, which reads as "never reliable").
    """
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    _check_counts(n, c)
    if k > n:
        return math.nan
    if k > c:
        return 0.0
    return math.comb(c, k) / math.comb(n, k)


def _check_counts(n: int, c: int) -> None:
    if n < 0 or c < 0 or c > n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
