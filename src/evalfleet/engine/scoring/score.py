"""Score a stored run: every answer by every scoring mode of its benchmark (judge modes from
the stored judgements), then each benchmark's metric set. Nothing here knows a benchmark:
it asks each one through the interface.

A run is scored shard by shard (`engine.scoring.shards`): a large one in worker processes, the
samples table written as Parquet row groups as the shards come back, and only the few
columns the metrics read kept for them (dictionary-encoded), so that a million answers never
sit in memory as records, dicts or rows at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evalfleet.benchmarks.interface import Answered, Benchmark, ScoredItem
from evalfleet.core.record import Record
from evalfleet.engine.run.ledger import unrecorded
from evalfleet.engine.run.state import Listing, Reconciled
from evalfleet.engine.scoring.shards import SAMPLES_SCHEMA, Shard, score_shard
from evalfleet.engine.scoring.spend import UsageSums
from evalfleet.engine.scoring.workers import WorkerPool
from evalfleet.engine.store.stored import StoredRun
from evalfleet.storage.layout import ItemKey

log = logging.getLogger("evalfleet")

SHARD_ANSWERS = 4_000
# Below this many answers a run is scored in this process: starting worker processes (each
# imports pandas, pyarrow and the benchmarks) costs more than it saves.
PARALLEL_FROM = 30_000
MAX_WORKERS = 4
ROW_GROUP_ROWS = 131_072  # of samples.parquet
# What the metrics read of the samples table (`ScoredItem`), kept for every row.
METRIC_COLUMNS = [
    "model",
    "benchmark",
    "scoring",
    "sample_id",
    "group_id",
    "epoch",
    "value",
    "correct",
    "judged",
    "score_error",
    "error",
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
    "ci95_low",  # the headline's 95 % interval (`evalfleet.metrics.intervals`), on its row only
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
    samples_parquet: bytes  # one row per (model, benchmark, sample, epoch, scoring)
    long: pd.DataFrame  # one row per metric (LONG_COLUMNS)
    units: pd.DataFrame  # one row per headline unit (UNIT_COLUMNS)
    usage: pd.DataFrame  # one row per (model, benchmark): tokens and cost, judge apart
    digest: str  # of the set of records scored
    extra_files: dict[str, bytes] = field(default_factory=dict)  # "<benchmark>/<path>"
    judges: pd.DataFrame | None = None  # per (model, benchmark, judge): judgements, cost
    judged_samples: pd.DataFrame | None = None  # the metric columns of judged benchmarks
    undecodable: list[str] = field(default_factory=list)  # answer records, then judgements
    undecodable_states: Counter[str] = field(default_factory=Counter)  # of the answers
    judge_states: Counter[str] = field(default_factory=Counter)


def score_run(run: StoredRun, pool: WorkerPool | None = None) -> Scored:
    """Score every stored answer of a run, shard by shard (in `pool`'s processes where there
    is one: `scoring_pool`), then each benchmark's metrics, usage and files. The run's item
    states are let go once its answers are read."""
    usage = UsageSums()
    scored_keys: list[str] = []
    undecodable: list[str] = []
    undecodable_states: Counter[str] = Counter()
    judge_undecodable: list[str] = []
    judge_states: Counter[str] = Counter()
    answered: dict[str, list[Answered]] = {name: [] for name in run.data}
    kept: list[pa.RecordBatch] = []
    with tempfile.TemporaryFile() as spool:
        with pq.ParquetWriter(spool, SAMPLES_SCHEMA) as writer:
            pending: list[pa.RecordBatch] = []
            pending_rows = 0
            shards = list_shards(run)
            started, records = time.monotonic(), 0
            scored = pool.map(shards) if pool else (score_shard(run, s) for s in shards)
            for part in scored:
                records += len(part.scored_keys)
                usage.merge(part.usage)
                scored_keys += part.scored_keys
                undecodable += part.undecodable
                undecodable_states.update(part.undecodable_states)
                judge_undecodable += part.judge_undecodable
                judge_states.update(part.judge_states)
                answered[part.benchmark] += part.answered
                kept.append(_metric_columns(part.rows))
                pending.append(part.rows)
                pending_rows += part.rows.num_rows
                if pending_rows >= ROW_GROUP_ROWS:
                    writer.write_table(pa.Table.from_batches(pending, SAMPLES_SCHEMA))
                    pending, pending_rows = [], 0
            if pending or not kept:
                writer.write_table(pa.Table.from_batches(pending, SAMPLES_SCHEMA))
        log.info("scored %d records in %.1f s", records, time.monotonic() - started)
        spool.seek(0)
        samples_parquet = spool.read()
        # A million answers' keys and states are most of this process's memory by now, and
        # the metrics need none of them: what they free makes room for each group's items.
        run.answer_state, run.judge_listing = Reconciled(), Listing()
        columns = pa.Table.from_batches(kept) if kept else None
        started = time.monotonic()
        long, units = metric_table(run, columns, pool)
        log.info("metrics in %.1f s", time.monotonic() - started)
    extra_files: dict[str, bytes] = {}
    for name, data in run.data.items():
        if _writes_files(data.benchmark):
            files = data.benchmark.extra_files(answered[name], data.by_id, data.options)
            for path, blob in files.items():
                extra_files[f"{name}/{path}"] = blob
    # Billed calls no table scores cost the run too: records of failures answered again
    # later or of requests asked differently before, and the ledger entries of calls that
    # stored no record.
    for key, stored in run.store.get_many(run.unscored).items():
        record = Record.read(stored)
        if record is not None:
            usage.add_unscored(record)
            scored_keys.append(f"billed:{key}")
    for entry in unrecorded(run.store, run.run_id):
        usage.add_unrecorded(entry)
        scored_keys.append(f"ledger:{entry.call_id}-{entry.attempt.number}")
    digest = hashlib.sha256("\n".join(sorted(scored_keys)).encode()).hexdigest()
    judged = None
    if run.judges and columns is not None:
        judged = _judged_samples(columns, run)
    return Scored(
        samples_parquet,
        long,
        units,
        usage.usage_table([(m, name) for name in run.data for m in run.request.models]),
        digest,
        extra_files,
        usage.judge_table(),
        judged,
        undecodable + judge_undecodable,
        undecodable_states,
        judge_states,
    )


@contextlib.contextmanager
def scoring_pool(run: StoredRun) -> Iterator[WorkerPool | None]:
    """Worker processes for a large run (its shards, then its metric groups), None for a
    small one (scored here). Large by its plan: the pool starts before the store is listed."""
    answers = sum(len(d.samples) * len(d.decodings) for d in run.data.values()) * len(run.models)
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    if answers < PARALLEL_FROM or workers < 2:
        yield None
        return
    log.info("scoring up to %d answers in %d processes", answers, workers)
    with WorkerPool(run.store, run.run_id, workers) as pool:
        yield pool


def list_shards(run: StoredRun) -> Iterator[Shard]:
    """The run's stored answers (done or failed) in shards of one benchmark, in the run's
    order: model, then sample, then epoch; made as they are scored."""
    state, record_key = run.answer_state.state, run.answer_state.record_key
    for name, data in run.data.items():
        keep = _writes_files(data.benchmark)
        batch: list[tuple[ItemKey, str, str]] = []
        for model in run.request.models:
            for sample in data.samples:
                for epoch in range(len(data.decodings)):
                    key = ItemKey.answer(model, name, sample.id, epoch)
                    found = record_key.get(key)
                    if found is None:
                        continue
                    batch.append((key, found, state[key]))
                    if len(batch) >= SHARD_ANSWERS:
                        yield _shard(run, name, batch, keep)
                        batch = []
        if batch:
            yield _shard(run, name, batch, keep)


def _shard(run: StoredRun, name: str, answers: list[tuple[ItemKey, str, str]], keep: bool) -> Shard:
    """A shard, with the listing of the judge records of its answers (a run with judges)."""
    judgements = Listing()
    for key, _, _ in answers:
        for judge in run.judges:
            judged = key.judged_by(judge)
            if judged in run.judge_listing.ok:
                judgements.ok[judged] = run.judge_listing.ok[judged]
            if judged in run.judge_listing.failed:
                judgements.failed[judged] = run.judge_listing.failed[judged]
    if run.judges:
        judgements.empty = run.judge_listing.empty
    return Shard(name, answers, judgements, keep)


def _writes_files(bench: Benchmark) -> bool:
    """The benchmark writes files of its own from every answer (`Benchmark.extra_files`)."""
    return type(bench).extra_files is not Benchmark.extra_files


def _metric_columns(rows: pa.RecordBatch) -> pa.RecordBatch:
    """What the metrics read of a shard's rows, its texts dictionary-encoded (a run's
    million rows share a few models, scorings and errors, and each sample's id), with the
    (model, benchmark, scoring) group each row belongs to."""
    group = pc.binary_join_element_wise(
        rows.column("model"), rows.column("benchmark"), rows.column("scoring"), GROUP_SEPARATOR
    )
    arrays = [group]
    for name in METRIC_COLUMNS:
        column = rows.column(name)
        arrays.append(pc.dictionary_encode(column) if pa.types.is_string(column.type) else column)
    return pa.RecordBatch.from_arrays(arrays, names=["group", *METRIC_COLUMNS])


GROUP_SEPARATOR = "\x00"


Group = tuple[str, str, str]  # (model, benchmark, scoring)


def groups_of(columns: pa.Table | None) -> Iterator[tuple[Group, pa.Table]]:
    """The metric columns of each (model, benchmark, scoring), groups in order of first
    appearance and rows in the table's order."""
    if columns is None:
        return
    group = columns.column("group")
    for name in pc.unique(group).to_pylist():  # in order of first appearance
        model, benchmark, scoring = name.split(GROUP_SEPARATOR)
        yield (model, benchmark, scoring), columns.filter(pc.equal(group, name))


def _items(part: pa.Table) -> list[ScoredItem]:
    """A group's rows as ScoredItems (their fields in order)."""
    column = {name: _plain(part.column(name)).to_pylist() for name in METRIC_COLUMNS[3:]}
    errored = [error is not None for error in column["error"]]
    fields = ["sample_id", "group_id", "epoch", "value", "correct"]
    rest = ["judged", "score_error", "output_tokens", "reasoning_tokens"]
    rows = zip(*(column[f] for f in fields), errored, *(column[f] for f in rest), strict=True)
    return [ScoredItem(*row) for row in rows]


def _plain(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A dictionary-encoded column decoded (its `to_pylist` is many times slower)."""
    if pa.types.is_dictionary(column.type):
        return column.cast(column.type.value_type)
    return column


def _judged_samples(columns: pa.Table, run: StoredRun) -> pd.DataFrame:
    """The metric columns of the benchmarks a judge grades, for the judges' agreement."""
    judged = [name for name, d in run.data.items() if d.benchmark.judge is not None]
    part = columns.filter(pc.is_in(columns.column("benchmark").cast(pa.string()), pa.array(judged)))
    return part.drop_columns(["group"]).to_pandas()


@dataclass(frozen=True)
class GroupTask:
    """The metric columns of one (model, benchmark, scoring), for `group_rows`."""

    group: Group
    part: pa.Table


def metric_table(
    run: StoredRun, columns: pa.Table | None, pool: WorkerPool | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each benchmark's metric set per (model, scoring mode), as long-table rows, and its
    headline as per-unit values; the headline's row carries their 95 % interval. Groups are
    computed in `pool`'s processes where there is one."""
    tasks = (GroupTask(group, part) for group, part in groups_of(columns))
    done = pool.map(tasks) if pool else (group_rows(run, task) for task in tasks)
    out: list[dict[str, Any]] = []
    unit_rows: list[dict[str, Any]] = []
    for long_rows, units in done:
        out += long_rows
        unit_rows += units
    return pd.DataFrame(out, columns=LONG_COLUMNS), pd.DataFrame(unit_rows, columns=UNIT_COLUMNS)


def group_rows(
    run: StoredRun, task: GroupTask
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One group's long-table rows and headline units."""
    (model, name, scoring), items = task.group, _items(task.part)
    data = run.data[name]
    bench = data.benchmark
    errors = sum(item.errored for item in items)
    judged = sum(item.judged for item in items)
    score_errors = sum(item.score_error is not None for item in items)
    units = bench.headline_units(items, data.by_id, data.protocol)
    interval = units.interval()
    unit_rows = [
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
        for i, unit in enumerate(units.ids)
    ]
    out = []
    for metric in bench.metrics(items, data.by_id, data.protocol, len(data.decodings)):
        headline = interval is not None and (metric.metric, metric.group) == (bench.headline, "")
        out.append(
            {
                "model": model,
                "benchmark": name,
                "scoring": scoring,
                "metric": metric.metric,
                "group": metric.group,
                "value": metric.value,
                "se": metric.se,
                "ci95_low": interval.low if headline and interval else None,
                "ci95_high": interval.high if headline and interval else None,
                "n": metric.n,
                "note": metric.note,
                "errors": errors,
                "judged": judged,
                "score_errors": score_errors,
            }
        )
    return out, unit_rows
