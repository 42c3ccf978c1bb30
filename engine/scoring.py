"""Score a stored run: every answer by every scoring mode of its benchmark (judge modes from
the stored judgements), then each benchmark's metric set. Nothing here knows a benchmark:
it asks each one through the interface."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from benchmarks.interface import Answered, Judgement, scored_items
from engine.stored import StoredRun
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
USAGE_COLUMNS = [
    "model",
    "benchmark",
    "answers",
    "errors",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cost_usd",
    "judgements",
    "judge_errors",
    "judge_input_tokens",
    "judge_output_tokens",
    "judge_cost_usd",
    # cost apart by kind of token (from each record's `cost`; records written before it
    # existed count in the totals above only)
    "cached_input_tokens",
    "input_cost_usd",  # uncached input
    "cached_input_cost_usd",
    "output_cost_usd",  # output without reasoning
    "reasoning_cost_usd",
    "judge_cached_input_tokens",
    "judge_reasoning_tokens",
    "judge_cached_input_cost_usd",
    "judge_reasoning_cost_usd",
    "batch_calls",  # answers and judgements answered in batch jobs (at the batch price)
    "batch_cost_usd",
    "total_cost_usd",  # answers and judgements
]
COST_COLUMNS = [c for c in USAGE_COLUMNS if c.endswith("cost_usd")]


@dataclass
class Scored:
    samples: pd.DataFrame  # one row per (model, benchmark, sample, epoch, scoring)
    long: pd.DataFrame  # one row per metric (LONG_COLUMNS)
    units: pd.DataFrame  # one row per headline unit (UNIT_COLUMNS)
    usage: pd.DataFrame  # one row per (model, benchmark): tokens and cost, judge apart
    digest: str  # of the set of records scored
    extra_files: dict[str, bytes] = field(default_factory=dict)  # "<benchmark>/<path>"
    judges: pd.DataFrame | None = None  # per (model, benchmark, judge): judgements, cost


JUDGE_USAGE_COLUMNS = [
    "model",
    "benchmark",
    "judge",
    "judgements",
    "errors",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cost_usd",
]


def judge_scoring(scoring: str, judge_model: str, primary: bool) -> str:
    """A judge's scoring mode as the tables name it: the primary judge's as the benchmark
    names it ("judge"), an extra judge's with its model ("judge@anthropic/claude-x")."""
    return scoring if primary else f"{scoring}@{judge_model}"


def _judgement(run: StoredRun, key: ItemKey, judge_model: str) -> Judgement:
    found = _judge_record(run, key, judge_model)
    if found is None:
        return Judgement(reply=None, error="not judged yet")
    record = found[1]
    if record.get("error"):
        return Judgement(reply=None, error=f"judge call failed: {record['error'].get('type')}")
    return Judgement(reply=record.get("response") or "")


def score_run(run: StoredRun) -> Scored:
    rows: list[dict[str, Any]] = []
    usage: dict[tuple[str, str], dict[str, Any]] = {}
    judge_usage: dict[tuple[str, str, str], dict[str, Any]] = {}
    scored_keys: list[str] = []
    extra_files: dict[str, bytes] = {}
    for name, data in run.data.items():
        bench, options = data.benchmark, data.options
        judge = bench.judge if run.judges else None
        answered: list[Answered] = []
        for model in run.request.models:
            spent = usage.setdefault((model, name), dict.fromkeys(USAGE_COLUMNS[2:], 0))
            for sample in data.samples:
                for epoch in range(len(data.decodings)):
                    key = ItemKey.answer(model, name, sample.id, epoch)
                    record_key = run.answer_state.record_key.get(key)
                    record = run.answer_state.records.get(record_key) if record_key else None
                    if record is None:
                        continue  # never answered yet: lowers n, is not an error
                    scored_keys.append(record_key)
                    tokens = record.get("usage") or {}
                    error = (record.get("error") or {}).get("type")
                    response = record.get("response") or ""
                    _spend(spent, "", record, error)
                    scores = bench.score(sample, response, options)
                    cluster = bench.resampling_unit(sample)
                    judgements: dict[str, Judgement] = {}
                    for position, judge_model in enumerate(run.judges if judge else []):
                        judgement = None
                        if not error and judge.wants(sample, response, options):
                            judgement = _judgement(run, key, judge_model)
                            found = _judge_record(run, key, judge_model)
                            if found is not None:
                                scored_keys.append(found[0])
                                _spend(spent, "judge_", found[1], None)
                                _spend_judge(judge_usage, model, name, judge_model, found[1])
                        for score in judge.score(sample, response, options, judgement):
                            scoring = judge_scoring(score.scoring, judge_model, position == 0)
                            scores.append(replace(score, scoring=scoring))
                            if judgement is not None:
                                judgements[scoring] = judgement
                    answered.append(
                        Answered(
                            model,
                            sample.id,
                            epoch,
                            None if error else response,
                            tuple(scores),
                            judgements,
                        )
                    )
                    for score in scores:
                        rows.append(
                            {
                                "model": model,
                                "benchmark": name,
                                "sample_id": sample.id,
                                "group_id": sample.group_id or sample.id,
                                "cluster": cluster,
                                "epoch": epoch,
                                "scoring": score.scoring,
                                "target": sample.target,
                                "answer": None if error else score.answer,
                                "value": 0.0 if error else float(score.value),
                                "correct": bool(score.correct) and not error,
                                "judged": score.judged,
                                "score_error": None if error else score.error,
                                "error": error,
                                "finish_reason": record.get("finish_reason"),
                                "input_tokens": int(tokens.get("input_tokens") or 0),
                                "output_tokens": int(tokens.get("output_tokens") or 0),
                                "reasoning_tokens": int(tokens.get("reasoning_tokens") or 0),
                            }
                        )
        for path, blob in bench.extra_files(answered, data.by_id, options).items():
            extra_files[f"{name}/{path}"] = blob
    samples = pd.DataFrame(rows, columns=SAMPLE_COLUMNS)
    long, units = metric_table(run, samples)
    usage_frame = pd.DataFrame(
        [{"model": m, "benchmark": b, **spent} for (m, b), spent in usage.items()],
        columns=USAGE_COLUMNS,
    )
    usage_frame["total_cost_usd"] = usage_frame["cost_usd"] + usage_frame["judge_cost_usd"]
    for column in COST_COLUMNS:
        usage_frame[column] = usage_frame[column].astype(float).round(6)
    judges_frame = pd.DataFrame(
        [{"model": m, "benchmark": b, "judge": j, **v} for (m, b, j), v in judge_usage.items()],
        columns=JUDGE_USAGE_COLUMNS,
    )
    judges_frame["cost_usd"] = judges_frame["cost_usd"].astype(float).round(6)
    digest = hashlib.sha256("\n".join(sorted(scored_keys)).encode()).hexdigest()
    return Scored(samples, long, units, usage_frame, digest, extra_files, judges_frame)


def _judge_record(
    run: StoredRun, key: ItemKey, judge_model: str
) -> tuple[str, dict[str, Any]] | None:
    record_key = run.judge_state.record_key.get(key.judged_by(judge_model))
    record = run.judge_state.records.get(record_key) if record_key else None
    return (record_key, record) if record is not None else None


def _spend_judge(table, model: str, benchmark: str, judge: str, record: dict[str, Any]) -> None:
    """One judgement in the per-judge usage table (each judge priced apart)."""
    row = table.setdefault((model, benchmark, judge), dict.fromkeys(JUDGE_USAGE_COLUMNS[3:], 0))
    tokens = record.get("usage") or {}
    row["judgements"] += 1
    row["errors"] += 1 if record.get("error") else 0
    for name in ("input_tokens", "output_tokens", "reasoning_tokens"):
        row[name] += int(tokens.get(name) or 0)
    row["cost_usd"] += float(record.get("cost_usd") or 0.0)


def _spend(spent: dict[str, Any], prefix: str, record: dict[str, Any], error: str | None) -> None:
    tokens = record.get("usage") or {}
    spent["judgements" if prefix else "answers"] += 1
    spent[f"{prefix}errors"] += 1 if (error or record.get("error")) else 0
    spent[f"{prefix}input_tokens"] += int(tokens.get("input_tokens") or 0)
    spent[f"{prefix}output_tokens"] += int(tokens.get("output_tokens") or 0)
    spent[f"{prefix}reasoning_tokens"] += int(tokens.get("reasoning_tokens") or 0)
    spent[f"{prefix}cached_input_tokens"] += int(tokens.get("cached_input_tokens") or 0)
    spent[f"{prefix}cost_usd"] += float(record.get("cost_usd") or 0.0)
    cost = record.get("cost") or {}
    spent[f"{prefix}cached_input_cost_usd"] += float(cost.get("cached_input") or 0.0)
    spent[f"{prefix}reasoning_cost_usd"] += float(cost.get("reasoning") or 0.0)
    if not prefix:
        spent["input_cost_usd"] += float(cost.get("input") or 0.0)
        spent["output_cost_usd"] += float(cost.get("output") or 0.0)
    if record.get("batch"):
        spent["batch_calls"] += 1
        spent["batch_cost_usd"] += float(record.get("cost_usd") or 0.0)


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
