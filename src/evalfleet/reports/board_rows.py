"""What the leaderboard reads of each run: one row per (model, benchmark, scoring) of the run's
latest results, with the headline's per-unit values and the item set it was measured on.

A run whose files cannot be read is not left out in silence: `read_runs` returns it apart, as
the one line that names the damaged file and the command that repairs it (`engine.store.damage`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from evalfleet.benchmarks import registry
from evalfleet.engine.run.identity import RunError
from evalfleet.engine.store.manifest import check_plans, read_manifest, require_manifest
from evalfleet.engine.store.results import NoResults, read_version_table, results_about
from evalfleet.metrics.intervals import UnitValues
from evalfleet.reports.item_sets import item_set_of
from evalfleet.reports.not_installed import needs_line
from evalfleet.storage.base import Store

SKIPPED = "leaderboard"  # the store's own folder, not a run


@dataclass
class StoreRows:
    rows: list[dict[str, Any]] = field(default_factory=list)
    units: dict[tuple[str, str, str, str], UnitValues] = field(default_factory=dict)
    # one line per run that cannot be read, or that needs a benchmark not installed here
    damaged: list[str] = field(default_factory=list)
    runs: int = 0  # runs with results


def read_runs(store: Store) -> StoreRows:
    out = StoreRows()
    for run_id in store.list_dirs(""):
        if run_id == SKIPPED or run_id.startswith("_"):
            continue
        try:
            found = run_rows(store, run_id, out.units, out.damaged)
        except RunError as exc:
            out.damaged.append(" ".join(str(exc).split()))
            continue
        out.runs += bool(found)
        out.rows += found
    return out


def units_key(run_id: str, model: str, benchmark: str, scoring: str) -> tuple[str, str, str, str]:
    return (run_id, model, benchmark, scoring)


def run_rows(
    store: Store,
    run_id: str,
    units: dict[tuple[str, str, str, str], UnitValues],
    needs: list[str] | None = None,
) -> list[dict[str, Any]]:
    """One row per (model, benchmark, scoring) of a run's latest results ([] when the run has
    none yet); each row's per-unit values go into `units`, and into `needs` the line of a run
    with results that needs a benchmark not installed here (its rows of that benchmark are
    left out). RunError (a DamagedFile) when a file the results need cannot be read."""
    manifest = read_manifest(store, run_id)
    if manifest is None:
        if store.list_dirs(f"{run_id}/results"):  # results without the run that made them
            require_manifest(store, run_id)
        return []
    try:  # a damaged latest.json or version is named here, a damaged table as it is read
        about = results_about(store, run_id)
    except NoResults:
        return []
    check_plans(store, manifest)
    version = about.version
    long = read_version_table(store, run_id, version, "metrics.parquet")
    usage = read_version_table(store, run_id, version, "usage.parquet")
    samples = read_version_table(store, run_id, version, "samples.parquet")
    unit_table = read_version_table(store, run_id, version, "units.parquet")
    correct = samples.groupby(["model", "benchmark", "scoring"])["correct"].sum().to_dict()
    by_key = {key: part for key, part in unit_table.groupby(["model", "benchmark", "scoring"])}
    identity = manifest.identity.benchmarks
    rows = []
    for spent in usage.itertuples(index=False):
        bench_identity = identity.get(spent.benchmark)
        if bench_identity is None or spent.benchmark not in registry.names():
            continue
        headline = registry.get(spent.benchmark).headline
        items = item_set_of(manifest, spent.benchmark)
        expected = bench_identity.answers_per_model
        mine = long[
            (long.model == spent.model)
            & (long.benchmark == spent.benchmark)
            & (long.metric == headline)
            & (long.group.fillna("") == "")
        ]
        for metric in mine.itertuples(index=False):
            part = by_key.get((spent.model, spent.benchmark, metric.scoring))
            if part is None:
                continue
            units[units_key(run_id, spent.model, spent.benchmark, metric.scoring)] = UnitValues.of(
                list(part["unit"]),
                list(part["value"]),
                list(part["epochs"]),
                list(part["epoch_var"]),
                bool(part["binary"].all()),
            )
            cost = float(spent.cost_usd) + float(spent.judge_cost_usd)
            right = int(correct.get((spent.model, spent.benchmark, metric.scoring), 0))
            done = int(spent.answers) - int(spent.errors)
            rows.append(
                {
                    "benchmark": spent.benchmark,
                    "scoring": metric.scoring,
                    "item_set": items.key,
                    "items": items.label,
                    "full_set": items.full,
                    "model": spent.model,
                    "metric": headline,
                    "value": _number(metric.value),
                    "units": len(part),
                    "done": done,
                    "expected": expected,
                    "errors": int(spent.errors),
                    "complete": int(spent.answers) >= expected,
                    # per answer received: a failed call has no output and no tokens
                    "mean_output_tokens": float(spent.output_tokens) / done if done else None,
                    "cost_usd": round(cost, 6),
                    "answers": int(spent.answers),
                    "correct": right,
                    "cost_per_correct_usd": round(cost / right, 6) if right else None,
                    "run_id": run_id,
                    "version": version,
                    "written_at": about.written_at or "",
                    # when the run began: which of two runs is the newer (its results may be
                    # written again long after, by an `aggregate` of an old run)
                    "run_created_at": manifest.created_at or about.written_at or "",
                }
            )
    line = needs_line(manifest)
    if line is not None and needs is not None:
        needs.append(f"run {run_id} {line}")
    return rows


def _number(value: Any) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)
