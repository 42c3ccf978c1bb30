"""A run's items as plain rows for the exports (`export_inspect`, `export_hf`): one row per
(model, benchmark, sample, epoch) of a results version, with the prompt as sent, the target,
the response, each scoring mode's verdict and the usage, read from the version's
`samples.parquet` (so the exports hold exactly evalfleet's tables) and the answers' records."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from evalfleet.engine.store.manifest import require_manifest
from evalfleet.engine.store.results import read_version_table, results_about
from evalfleet.engine.store.stored import StoredRun, load_run
from evalfleet.storage.base import Store
from evalfleet.storage.layout import ItemKey


@dataclass
class ExportItem:
    """One answered item of a results version, as the exports write it."""

    model: str
    benchmark: str
    sample_id: str
    epoch: int  # evalfleet's, from 0
    input: str  # the prompt text as sent
    choices: list[str]
    target: str
    response: str | None
    reasoning: str | None
    error: str | None  # the call's error type, when it failed for good
    finish_reason: str | None
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cost_usd: float | None
    latency_s: float | None
    # each scoring mode's verdict: scoring, value, correct, answer, score_error, judged
    scores: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ExportRun:
    run_id: str
    version: str
    run: StoredRun
    items: list[ExportItem]  # one per (model, benchmark, sample, epoch), in table order
    # (model, benchmark) -> scoring -> metric -> value, for the rows of no group
    metrics: dict[tuple[str, str], dict[str, dict[str, float]]] = field(default_factory=dict)
    # (model, benchmark, sample, epoch) -> the answer's key in the run's records
    answer_keys: dict[tuple[str, str, str, int], ItemKey] = field(default_factory=dict)


def gather_export(store: Store, run_id: str, version: str | None = None) -> ExportRun:
    """The rows of `run_id`'s latest results (or `version`) and their metrics."""
    require_manifest(store, run_id)  # no such run: said as such, not as "no results yet"
    about = results_about(store, run_id, version)
    samples = read_version_table(store, run_id, about.version, "samples.parquet")
    metrics = read_version_table(store, run_id, about.version, "metrics.parquet")
    run = load_run(store, run_id)
    answer_keys = {
        (key.model, key.benchmark, key.sample_id, key.epoch): key
        for key in run.answer_state.record_key
        if key.stage == "answer"
    }
    records = {
        at: run.answer_state.records.get(run.answer_state.record_key[key])
        for at, key in answer_keys.items()
    }
    items: dict[tuple[str, str, str, int], ExportItem] = {}
    for row in samples.itertuples(index=False):
        key = (row.model, row.benchmark, str(row.sample_id), int(row.epoch))
        item = items.get(key)
        if item is None:
            item = items[key] = _item(run, key, row, records.get(key))
        item.scores.append(
            {
                "scoring": row.scoring,
                "value": plain(row.value),
                "correct": plain(row.correct),
                "answer": plain(row.answer),
                "score_error": plain(row.score_error),
                "judged": bool(row.judged),
            }
        )
    found: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    for m in metrics.itertuples(index=False):
        if m.group:
            continue
        by = found.setdefault((m.model, m.benchmark), {})
        by.setdefault(m.scoring, {})[m.metric] = plain(m.value)
    return ExportRun(run_id, about.version, run, list(items.values()), found, answer_keys)


def _item(run: StoredRun, key: tuple[str, str, str, int], row: Any, record: Any) -> ExportItem:
    model, benchmark, sample_id, epoch = key
    data = run.data.get(benchmark)
    sample = data.by_id.get(sample_id) if data is not None else None
    return ExportItem(
        model=model,
        benchmark=benchmark,
        sample_id=sample_id,
        epoch=epoch,
        input=data.prompts.get(sample_id, "") if data is not None else "",
        choices=list(sample.choices or []) if sample is not None else [],
        target=plain(row.target) or "",
        response=record.response if record is not None else None,
        reasoning=record.reasoning if record is not None else None,
        error=plain(row.error),
        finish_reason=plain(row.finish_reason),
        input_tokens=int(row.input_tokens),
        output_tokens=int(row.output_tokens),
        reasoning_tokens=int(row.reasoning_tokens),
        cost_usd=plain(record.cost_usd) if record is not None else None,
        latency_s=plain(record.latency_s) if record is not None else None,
    )


def plain(value: Any) -> Any:
    """A table cell as JSON has it: NaN and pandas' missing values are None, numpy's scalars
    Python's."""
    if value is None or type(value).__name__ == "NAType":
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
