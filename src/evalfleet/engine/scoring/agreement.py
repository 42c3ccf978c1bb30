"""How far the judges agree: per benchmark, between each pair of judges and between each judge
and the benchmark's rule scorer (its headline rule mode), the percent agreement and Cohen's
kappa of their verdicts (correct or not) on the same answers, kappa with its 95 % interval
(a bootstrap over questions, `metrics.agreement.kappa_interval`).

`slice_agreement` measures each judge (and the rules) against a labelled slice: stored
answers of the run a person gave a verdict, by (model, sample id, epoch), read from a JSON
Lines file (`read_labels`). A panel of judges (`panel_verdicts`) gives the majority verdict of
its members on the answers every member judged (a tie counts as wrong); it is built from the
members' own stored judgements, so it is checkpointed and resumed with them.

An answer counts for a judge only where that judge gave a verdict (`judged`, no score error):
ZeroBench's judge reads only the answers whose format broke, so its agreement with the rules
is measured on those. A failed call (no answer) counts for nobody.
"""

from __future__ import annotations

import itertools
import math

import pandas as pd

from evalfleet.benchmarks.interface import Benchmark
from evalfleet.metrics.agreement import agreement, kappa_interval
from evalfleet.metrics.paired import cohens_kappa

COLUMNS = [
    "benchmark",
    "rater_a",
    "rater_b",
    "answers",
    "agreement_pct",
    "kappa",
    "kappa_low",
    "kappa_high",
]
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
            questions = list(both.index.get_level_values("sample_id"))
            spread = kappa_interval(list(both.correct_a), list(both.correct_b), questions)
            rows.append(
                {
                    "benchmark": name,
                    "rater_a": f"{a} ({rule})" if a == "rules" else a,
                    "rater_b": b,
                    "answers": len(both),
                    "agreement_pct": round(agree, 4),
                    "kappa": None if math.isnan(kappa) else round(kappa, 4),
                    "kappa_low": None if spread is None else round(spread.low, 4),
                    "kappa_high": None if spread is None else round(spread.high, 4),
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def _verdicts(samples: pd.DataFrame, scoring: str, *, judged_only: bool) -> pd.DataFrame:
    part = samples[(samples.scoring == scoring) & samples.score_error.isna()]
    if judged_only:
        part = part[part.judged]
    return part.set_index(KEYS)[["correct"]].astype(bool)


SLICE_COLUMNS = [
    "benchmark",
    "rater",
    "labelled",
    "accuracy",
    "accuracy_low",
    "accuracy_high",
    "kappa",
    "kappa_low",
    "kappa_high",
]
LABEL_FIELDS = ("model", "sample_id", "epoch", "correct")


def read_labels(text: str, source: str) -> pd.DataFrame:
    """A labelled slice: one JSON object a line, {"model", "sample_id", "epoch", "correct"} (a
    person's verdict on that stored answer), and "benchmark" where one run's benchmarks share
    sample ids (other fields, such as the answer read, are for the person). ValueError naming
    the line for anything else."""
    import json

    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{source} line {number} is not JSON ({exc.msg})") from None
        if not isinstance(row, dict) or not all(f in row for f in LABEL_FIELDS):
            raise ValueError(
                f"{source} line {number} needs the fields {', '.join(LABEL_FIELDS)}: "
                '{"model": "openai/gpt-4o", "sample_id": "q1", "epoch": 0, "correct": true}'
            )
        epoch = row["epoch"]
        whole = isinstance(epoch, int) and not isinstance(epoch, bool) and epoch >= 0
        if not isinstance(row["correct"], bool) or not whole:
            raise ValueError(
                f"{source} line {number}: correct must be true or false, epoch a whole number "
                "from 0"
            )
        rows.append(
            {
                "benchmark": None if row.get("benchmark") is None else str(row["benchmark"]),
                "model": str(row["model"]),
                "sample_id": str(row["sample_id"]),
                "epoch": row["epoch"],
                "human": row["correct"],
            }
        )
    if not rows:
        raise ValueError(f"{source} has no labelled answer")
    return pd.DataFrame(rows).drop_duplicates(["benchmark", *KEYS], keep="last")


PANELS = ("majority",)


def panel_name(members: list[str]) -> str:
    return f"panel (majority of {len(members)})"


def panel_verdicts(
    samples: pd.DataFrame, bench: Benchmark, judges: list[str], members: list[str]
) -> pd.DataFrame:
    """The panel's verdict (`correct`) per answer (KEYS as index) on the answers every member
    judged: right when more than half the members say so. `judges` are the run's judges in
    order (the first is the primary one), `members` those on the panel."""
    from evalfleet.engine.scoring.shards import judge_scoring

    assert bench.judge is not None
    votes = []
    for judge in members:
        scoring = judge_scoring(bench.judge.scorings[0], judge, judges.index(judge) == 0)
        mine = _verdicts(samples, scoring, judged_only=True)
        votes.append(mine.rename(columns={"correct": judge}))
    if not votes:
        return pd.DataFrame(columns=["correct"])
    table = pd.concat(votes, axis=1, join="inner")
    return (table.sum(axis=1) * 2 > len(members)).to_frame("correct")


def slice_agreement(
    samples: pd.DataFrame,
    labels: pd.DataFrame,
    benchmarks: dict[str, Benchmark],
    judges: list[str],
    panel: list[str] | None = None,
) -> pd.DataFrame:
    """Each judge's (and the rules') accuracy and Cohen's kappa against the labelled answers
    it gave a verdict on, matched by (model, sample id, epoch), with 95 % intervals (Wilson;
    a bootstrap over questions); with `panel` (judges of the run), the panel's majority
    verdict as one more rater."""
    from evalfleet.engine.scoring.shards import judge_scoring

    rows = []
    for name, bench in benchmarks.items():
        if bench.judge is None:
            continue
        mine = samples[(samples.benchmark == name) & samples.error.isna()]
        labelled = labels[labels.benchmark.isna() | (labels.benchmark == name)]
        labelled = labelled[[*KEYS, "human"]]
        rules = f"rules ({bench.scorings[0]})"
        raters = {rules: _verdicts(mine, bench.scorings[0], judged_only=False)}
        for position, judge in enumerate(judges):
            scoring = judge_scoring(bench.judge.scorings[0], judge, position == 0)
            raters[judge] = _verdicts(mine, scoring, judged_only=True)
        if panel:
            raters[panel_name(panel)] = panel_verdicts(mine, bench, judges, panel)
        for rater, verdicts in raters.items():
            both = verdicts.reset_index().merge(labelled, on=KEYS, how="inner")
            if both.empty:
                continue
            found = agreement(
                list(both.correct.astype(bool)), list(both.human), list(both.sample_id)
            )
            kappa = found.kappa_interval
            rows.append(
                {
                    "benchmark": name,
                    "rater": rater,
                    "labelled": found.n,
                    "accuracy": round(found.accuracy, 4),
                    "accuracy_low": round(found.accuracy_interval.low, 4),
                    "accuracy_high": round(found.accuracy_interval.high, 4),
                    "kappa": None if math.isnan(found.kappa) else round(found.kappa, 4),
                    "kappa_low": None if kappa is None else round(kappa.low, 4),
                    "kappa_high": None if kappa is None else round(kappa.high, 4),
                }
            )
    return pd.DataFrame(rows, columns=SLICE_COLUMNS)
