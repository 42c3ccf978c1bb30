"""How far the judges agree: per benchmark, between each pair of judges and between each judge
and the benchmark's rule scorer (its headline rule mode), the percent agreement and Cohen's
kappa of their verdicts (correct or not) on the same answers.

An answer counts for a judge only where that judge gave a verdict (`judged`, no score error):
ZeroBench's judge reads only the answers whose format broke, so its agreement with the rules
is measured on those. A failed call (no answer) counts for nobody.
"""

from __future__ import annotations

import itertools
import math

import pandas as pd

from evalfleet.benchmarks.interface import Benchmark
from evalfleet.metrics.paired import cohens_kappa

COLUMNS = ["benchmark", "rater_a", "rater_b", "answers", "agreement_pct", "kappa"]
KEYS = ["model", "sample_id", "epoch"]


def judge_agreement(
    samples: pd.DataFrame, benchmarks: dict[str, Benchmark], judges: list[str]
) -> pd.DataFrame:
    from evalfleet.engine.scoring.shards import judge_scoring

    rows = []
    for name, bench in benchmarks.items():
        if bench.judge is None or not judges:
            continue
        mine = samples[(samples.benchmark == name) & samples.error.isna()]
        rule = bench.scorings[0]
        raters = {"rules": _verdicts(mine, rule, judged_only=False)}
        for position, judge in enumerate(judges):
            scoring = judge_scoring(bench.judge.scorings[0], judge, position == 0)
            raters[judge] = _verdicts(mine, scoring, judged_only=True)
        for (a, verdicts_a), (b, verdicts_b) in itertools.combinations(raters.items(), 2):
            both = verdicts_a.add_suffix("_a").join(verdicts_b.add_suffix("_b"), how="inner")
            if both.empty:
                continue
            agree, kappa = cohens_kappa(list(both.correct_a), list(both.correct_b))
            rows.append(
                {
                    "benchmark": name,
                    "rater_a": f"{a} ({rule})" if a == "rules" else a,
                    "rater_b": b,
                    "answers": len(both),
                    "agreement_pct": round(agree, 4),
                    "kappa": None if math.isnan(kappa) else round(kappa, 4),
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def _verdicts(samples: pd.DataFrame, scoring: str, *, judged_only: bool) -> pd.DataFrame:
    part = samples[(samples.scoring == scoring) & samples.score_error.isna()]
    if judged_only:
        part = part[part.judged]
    return part.set_index(KEYS)[["correct"]].astype(bool)
