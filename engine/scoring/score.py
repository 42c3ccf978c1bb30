"""Score a stored run: every answer by every scoring mode of its benchmark (judge modes from
the stored judgements), then each benchmark's metric set. Nothing here knows a benchmark:
it asks each one through the interface."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from benchmarks.interface import Answered, Judgement, scored_items
from core.record import Record
from core.types import Sample, Score
from engine.scoring.spend import judge_table, usage_table
from engine.store.stored import StoredRun
from storage.layout import ItemKey

SAMPLE_COLUMNS = [
    "model",
    "benchmark",
    "sample_id",
    "group_id",
    "cluster",  # what a bootstrap resamples together (`Benchmark.resampling_unit`)
    "epoch",
    "scoring",
    "target",
    "answer",
    "value",
    "correct",
    "judged",
    "score_error",
    "error",
    "finish_reason",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
]
LONG_COLUMNS = [
    "model",
    "benchmark",
    "scoring",
    "metric",
    "group",
    "value",
    "se",
    "ci95_low",  # the headline's 95 % interval (`metrics.intervals`), on its row only
    "ci95_high",
    "n",
    "note",  # why a value is missing, where it is (a footnote under the tables)
    "errors",
    "judged",
    "score_errors",
]
# The headline of each (model, benchmark, scoring) as per-unit values: what its interval, the
# leaderboard's ranks and `compare` resample (`Benchmark.headline_units`).
UNIT_COLUMNS = ["model", "benchmark", "scoring", "unit", "value", "epochs", "epoch_var", "binary"]


@dataclass
class Scored:
    samples: pd.DataFrame  # one row per (model, benchmark, sample, epoch, scoring)
    long: pd.DataFrame  # one row per metric (LONG_COLUMNS)
    units: pd.DataFrame  # one row per headline unit (UNIT_COLUMNS)
    usage: pd.DataFrame  # one row per (model, benchmark): tokens and cost, judge apart
    digest: str  # of the set of records scored
    extra_files: dict[str, bytes] = field(default_factory=dict)  # "<benchmark>/<path>"
    judges: pd.DataFrame | None = None  # per (model, benchmark, judge): judgements, cost


@dataclass(frozen=True)
class StoredAnswer:
    """One answer of the run that has a record, with the judgements of it there are."""

    benchmark: str
    sample: Sample
    epoch: int
    model: str
    key: str  # the record's store key
    record: Record
    wanted: bool  # the benchmark's judge wants to grade it (a run with judges)
    judged: tuple[tuple[str, str, Record], ...]  # (judge model, key, record) per judgement


def judge_scoring(scoring: str, judge_model: str, primary: bool) -> str:
    """A judge's scoring mode as the tables name it: the primary judge's as the benchmark
    names it ("judge"), an extra judge's with its model ("judge@anthropic/claude-x")."""
    return scoring if primary else f"{scoring}@{judge_model}"


def stored_answers(run: StoredRun, name: str) -> Iterator[StoredAnswer]:
    """A benchmark's answers that have a record, model by model in dataset and epoch order
    (an answer never asked yet lowers n; it is not an error)."""
    data = run.data[name]
    judge = data.benchmark.judge if run.judges else None
    for model in run.request.models:
        for sample in data.samples:
            for epoch in range(len(data.decodings)):
                key = ItemKey.answer(model, name, sample.id, epoch)
                record_key = run.answer_state.record_key.get(key)
                record = run.answer_state.records.get(record_key) if record_key else None
                if record is None:
                    continue
                response = record.response or ""
                wanted = (
                    judge is not None
                    and not record.failed
                    and judge.wants(sample, response, data.options)
                )
                judged = tuple(
                    (judge_model, found_key, found)
                    for judge_model in (run.judges if wanted else ())
                    if (found_key := run.judge_state.record_key.get(key.judged_by(judge_model)))
                    and (found := run.judge_state.records.get(found_key)) is not None
                )
                yield StoredAnswer(name, sample, epoch, model, record_key, record, wanted, judged)


def scores_of(run: StoredRun, answer: StoredAnswer) -> tuple[list[Score], dict[str, Judgement]]:
    """Every score of one answer (rule modes, then each judge's modes) and the judgements
    behind the judge modes, by scoring mode."""
    data = run.data[answer.benchmark]
    bench, options, sample = data.benchmark, data.options, answer.sample
    response = answer.record.response or ""
    scores = bench.score(sample, response, options)
    judgements: dict[str, Judgement] = {}
    judge = bench.judge if run.judges else None
    if judge is None:
        return scores, judgements
    found = {j: record for j, _, record in answer.judged}
    for position, judge_model in enumerate(run.judges):
        judgement = _judgement(found.get(judge_model)) if answer.wanted else None
        for score in judge.score(sample, response, options, judgement):
            scoring = judge_scoring(score.scoring, judge_model, position == 0)
            scores.append(replace(score, scoring=scoring))
            if judgement is not None:
                judgements[scoring] = judgement
    return scores, judgements


def _judgement(record: Record | None) -> Judgement:
    if record is None:
        return Judgement(reply=None, error="not judged yet")
    if record.error is not None:
        return Judgement(reply=None, error=f"judge call failed: {record.error.type}")
    return Judgement(reply=record.response or "")


def sample_rows(answer: StoredAnswer, scores: list[Score], cluster: str) -> list[dict[str, Any]]:
    """The samples table's rows of one answer, one per scoring mode."""
    record, sample = answer.record, answer.sample
    error = record.error.type if record.error else None
    tokens = record.tokens
    return [
        {
            "model": answer.model,
            "benchmark": answer.benchmark,
            "sample_id": sample.id,
            "group_id": sample.group_id or sample.id,
            "cluster": cluster,
            "epoch": answer.epoch,
            "scoring": score.scoring,
            "target": sample.target,
            "answer": None if error else score.answer,
            "value": 0.0 if error else float(score.value),
            "correct": bool(score.correct) and not error,
            "judged": score.judged,
            "score_error": None if error else score.error,
            "error": error,
            "finish_reason": record.finish_reason,
            "input_tokens": tokens.input_tokens,
            "output_tokens": tokens.output_tokens,
            "reasoning_tokens": tokens.reasoning_tokens,
        }
        for score in scores
    ]


def score_run(run: StoredRun) -> Scored:
    """Score every stored answer of a run, then each benchmark's metrics, usage and files."""
    rows: list[dict[str, Any]] = []
    extra_files: dict[str, bytes] = {}
    everything: list[StoredAnswer] = []
    for name, data in run.data.items():
        answered: list[Answered] = []
        for answer in stored_answers(run, name):
            everything.append(answer)
            scores, judgements = scores_of(run, answer)
            response = None if answer.record.failed else answer.record.response or ""
            answered.append(
                Answered(
                    answer.model,
                    answer.sample.id,
                    answer.epoch,
                    response,
                    tuple(scores),
                    judgements,
                )
            )
            rows += sample_rows(answer, scores, data.benchmark.resampling_unit(answer.sample))
        for path, blob in data.benchmark.extra_files(answered, data.by_id, data.options).items():
            extra_files[f"{name}/{path}"] = blob
    samples = pd.DataFrame(rows, columns=SAMPLE_COLUMNS)
    long, units = metric_table(run, samples)
    graded = [(a, judge, key, rec) for a in everything for judge, key, rec in a.judged]
    usage = usage_table(
        [(m, name) for name in run.data for m in run.request.models],
        [(a.model, a.benchmark, a.record) for a in everything],
        [(a.model, a.benchmark, rec) for a, _, _, rec in graded],
    )
    judges = judge_table([(a.model, a.benchmark, judge, rec) for a, judge, _, rec in graded])
    scored_keys = [a.key for a in everything] + [key for _, _, key, _ in graded]
    digest = hashlib.sha256("\n".join(sorted(scored_keys)).encode()).hexdigest()
    return Scored(samples, long, units, usage, digest, extra_files, judges)


def metric_table(run: StoredRun, samples: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each benchmark's metric set per (model, scoring mode), as long-table rows, and its
    headline as per-unit values; the headline's row carries their 95 % interval."""
    out: list[dict[str, Any]] = []
    unit_rows: list[dict[str, Any]] = []
    grouped = scored_items(samples)
    for (model, name, scoring), items in grouped.items():
        data = run.data[name]
        bench = data.benchmark
        errors = sum(item.errored for item in items)
        judged = sum(item.judged for item in items)
        score_errors = sum(item.score_error is not None for item in items)
        units = bench.headline_units(items, data.by_id, data.protocol)
        interval = units.interval()
        for i, unit in enumerate(units.ids):
            unit_rows.append(
                {
                    "model": model,
                    "benchmark": name,
                    "scoring": scoring,
                    "unit": unit,
                    "value": float(units.values[i]),
                    "epochs": int(units.epochs[i]),
                    "epoch_var": float(units.epoch_var[i]),
                    "binary": units.binary,
                }
            )
        for metric in bench.metrics(items, data.by_id, data.protocol, len(data.decodings)):
            headline = interval is not None and (metric.metric, metric.group) == (
                bench.headline,
                "",
            )
            out.append(
                {
                    "model": model,
                    "benchmark": name,
                    "scoring": scoring,
                    "metric": metric.metric,
                    "group": metric.group,
                    "value": metric.value,
                    "se": metric.se,
                    "ci95_low": interval.low if headline else None,
                    "ci95_high": interval.high if headline else None,
                    "n": metric.n,
                    "note": metric.note,
                    "errors": errors,
                    "judged": judged,
                    "score_errors": score_errors,
                }
            )
    return pd.DataFrame(out, columns=LONG_COLUMNS), pd.DataFrame(unit_rows, columns=UNIT_COLUMNS)
