"""A judge checked against a person's verdicts: accuracy with Wilson's interval, Cohen's kappa
with a bootstrap over questions, worked out here."""

from __future__ import annotations

import numpy as np
import pytest

from evalfleet.metrics.agreement import KAPPA_DRAWS, agreement, kappa_interval
from evalfleet.metrics.intervals import wilson


def kappa(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    observed = np.mean(a == b)
    chance = a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean())
    return (observed - chance) / (1 - chance)


def test_accuracy_and_kappa_by_hand():
    judge = [True, True, False, False, True, False, True, True, False, False]
    human = [True, False, False, False, True, False, True, True, True, False]
    found = agreement(judge, human)
    assert (found.n, found.accuracy) == (10, 0.8)
    assert found.accuracy_interval == wilson(8, 10)
    assert found.kappa == pytest.approx(kappa(judge, human), abs=1e-12)  # 0.6
    assert round(found.kappa, 6) == 0.6


def test_the_kappa_interval_resamples_whole_questions():
    """Ten questions of four answers each: the documented draws (multinomial counts of the
    sorted clusters from default_rng(0)), the 2.5th and 97.5th percentiles."""
    rng = np.random.default_rng(4)
    questions = [f"q{i}" for i in range(10) for _ in range(4)]
    human = list(rng.random(40) < 0.5)
    judge = [h if rng.random() < 0.8 else not h for h in human]
    found = kappa_interval(judge, human, questions)
    names = sorted(set(questions))
    weights = np.random.default_rng(0).multinomial(10, [0.1] * 10, size=KAPPA_DRAWS)
    kappas = []
    for row in weights:
        picked_a, picked_b = [], []
        for name, times in zip(names, row, strict=True):
            rows = [i for i, q in enumerate(questions) if q == name]
            picked_a += [judge[i] for i in rows] * int(times)
            picked_b += [human[i] for i in rows] * int(times)
        kappas.append(kappa(picked_a, picked_b))
    low, high = np.percentile(kappas, [2.5, 97.5])
    assert (found.low, found.high) == pytest.approx((low, high), abs=1e-12)
    assert found.low < kappa(judge, human) < found.high


def test_no_kappa_interval_from_one_question_or_one_verdict():
    assert kappa_interval([True, False], [True, False], ["q", "q"]) is None
    assert kappa_interval([True] * 12, [True] * 12) is None  # kappa undefined everywhere
