"""McNemar's exact test and Cohen's kappa against values worked out here."""

from __future__ import annotations

import math

import pytest

from evalfleet.metrics.paired import cohens_kappa, mcnemar_exact


def test_mcnemar_exact_by_hand():
    # 7 discordant pairs one way, 2 the other: 2 * (C(9,0) + C(9,1) + C(9,2)) / 2^9
    assert mcnemar_exact(7, 2) == pytest.approx(2 * (1 + 9 + 36) / 512, abs=1e-15)
    assert mcnemar_exact(2, 7) == mcnemar_exact(7, 2)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == 1.0  # 2 * P(X <= 3 | n=6) = 2 * 42/64 > 1
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 1024, abs=1e-15)


def test_cohens_kappa_by_hand():
    a = [1, 1, 1, 0, 0, 0, 1, 0, 1, 1]
    b = [1, 1, 0, 0, 0, 1, 1, 0, 1, 1]
    agree, kappa = cohens_kappa([bool(x) for x in a], [bool(x) for x in b])
    # agreement 8/10; both say yes 6/10 of the time: chance 0.6*0.6 + 0.4*0.4 = 0.52
    assert agree == pytest.approx(80.0)
    assert kappa == pytest.approx((0.8 - 0.52) / (1 - 0.52), abs=1e-12)
    assert cohens_kappa([True, False], [False, True]) == (0.0, -1.0)
    assert math.isnan(cohens_kappa([True, True], [True, True])[1])
