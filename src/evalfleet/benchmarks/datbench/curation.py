"""DatBench's curation steps rebuilt from a stored run's scores (`evalfleet datbench ...`).

Every command reads the run's latest results (`samples.parquet`) and plan (the rows' metadata),
and works on units: a row, or a circular group counted as one (`benchmarks.datbench.units.unit_of`).
A unit's value is its score (fractional for ANLS and the like; a circular group is 1 only if
every rotation is right), averaged over epochs; "solved" means a value of at least 0.5.

- `select`: r_pb of every unit over the run's models, greedy selection with the frontier
  reserve, and the report (Σ r_pb against random subsets, rank agreement, speed-up).
- `delta`: the vision delta per model and capability, from `datbench` and `datbench_blind`.
- `blind-filter`: units solved blind by more than τ models, for removal.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from evalfleet.benchmarks.datbench import blind, selection
from evalfleet.benchmarks.datbench.units import unit_of, unit_values
from evalfleet.benchmarks.interface import StoredResults, scored_items
from evalfleet.core.types import ConfigError, Sample


@dataclass
class Units:
    """One benchmark of a run at unit level."""

    benchmark: str
    scoring: str
    models: list[str]
    values: dict[str, dict[str, float]]  # model -> unit -> value
    rows: dict[str, list[str]]  # unit -> its row ids, in dataset order
    first: dict[str, Sample]  # unit -> its first row (capability, dataset, metadata)

    def solved(self, model: str, unit: str) -> bool:
        return self.values[model][unit] >= 0.5

    def complete_units(self) -> list[str]:
        """The units every model has a value for, in dataset order."""
        return [u for u in self.rows if all(u in self.values[m] for m in self.models)]


def load_units(results: StoredResults, run_id: str, benchmark: str, scoring: str | None) -> Units:
    frame = results.samples(run_id)
    frame = frame[frame["benchmark"] == benchmark]
    if frame.empty:
        raise ConfigError(
            f"run {run_id} has no {benchmark} scores: evaluate it with --benchmark {benchmark}"
        )
    scorings = list(dict.fromkeys(frame["scoring"]))
    chosen = scoring or ("judge" if "judge" in scorings else "default")
    if chosen not in scorings:
        raise ConfigError(
            f"run {run_id} has no {chosen!r} scores for {benchmark}: use one of "
            f"{', '.join(scorings)}"
        )
    samples = results.plan(run_id, benchmark)
    by_id = {s.id: s for s in samples}
    rows: dict[str, list[str]] = defaultdict(list)
    first: dict[str, Sample] = {}
    for sample in samples:
        unit = unit_of(sample)
        rows[unit].append(sample.id)
        first.setdefault(unit, sample)
    models = list(dict.fromkeys(frame["model"]))
    values: dict[str, dict[str, float]] = {}
    grouped = scored_items(frame[frame["scoring"] == chosen])
    for model in models:
        units = unit_values(grouped.get((model, benchmark, chosen), []), by_id, circular=True)
        values[model] = {unit: value for unit, (value, _) in units.items()}
    return Units(benchmark, chosen, models, values, dict(rows), first)


# --- select --------------------------------------------------------------------------------


def select_subset(
    results: StoredResults,
    run_id: str,
    *,
    k: int,
    frontier_share: float,
    leave_one_out: bool,
    scoring: str | None,
    output: str | None,
    seed: int = 0,
    draws: int = 1000,
) -> dict[str, Any]:
    if k < 1:
        raise ConfigError(f"--k must be at least 1 (got {k})")
    if not 0.0 <= frontier_share <= 1.0:
        raise ConfigError(f"--frontier-share must be within [0, 1] (got {frontier_share})")
    units = load_units(results, run_id, "datbench", scoring)
    if len(units.models) < 2:
        raise ConfigError(
            f"run {run_id} has {len(units.models)} model: discrimination needs at least two "
            "(evaluate more models in the run, with --extend)"
        )
    items = [
        selection.Item(
            id=unit,
            capability=units.first[unit].metadata["capability"],
            is_frontier=bool(units.first[unit].metadata["eval_metrics"].get("is_frontier")),
            correct={m: float(units.solved(m, unit)) for m in units.models},
        )
        for unit in units.complete_units()
    ]
    if not items:
        raise ConfigError(f"run {run_id} has no DatBench unit answered by every model yet")
    scored = selection.discrimination(items, units.models, leave_one_out=leave_one_out)
    chosen = selection.select(scored, k, frontier_share)
    why = {s.item.id: reason for s, reason in chosen}
    sizes: dict[str, int] = defaultdict(int)
    for s, _ in chosen:
        sizes[s.item.capability] += 1
    subset_items = [s.item for s, _ in chosen]
    spearman, kendall = selection.rank_agreement(subset_items, items, units.models)
    subset_rows = [row for s, _ in chosen for row in units.rows[s.item.id]]
    full_rows = sum(len(units.rows[i.id]) for i in items)
    report = {
        "run_id": run_id,
        "scoring": units.scoring,
        "models": len(units.models),
        "units": len(items),
        "rows": full_rows,
        "subset_units": len(chosen),
        "subset_rows": len(subset_rows),
        "frontier_units": sum(1 for _, reason in chosen if reason == "frontier"),
        "sum_rpb_subset": round(selection.total_discrimination([s for s, _ in chosen]), 6),
        "sum_rpb_random": round(selection.random_baseline(scored, sizes, seed, draws), 6),
        "spearman": _round(spearman),
        "kendall": _round(kendall),
        "speedup": round(full_rows / len(subset_rows), 4),
    }
    out = Path(output or f"datbench-subset-{run_id}")
    out.mkdir(parents=True, exist_ok=True)
    subset = {
        **report,
        "k": k,
        "frontier_share": frontier_share,
        "leave_one_out": leave_one_out,
        "ids": subset_rows,
    }
    (out / "subset.json").write_text(json.dumps(subset, indent=1) + "\n")
    rank = {s.item.id: i for i, (s, _) in enumerate(chosen)}
    table = pd.DataFrame(
        [
            {
                "unit": s.item.id,
                "row_ids": units.rows[s.item.id],
                "capability": s.item.capability,
                "dataset": units.first[s.item.id].metadata["dataset"],
                "p": s.p,
                "r_pb": s.r_pb,
                "is_frontier": s.item.is_frontier,
                "selected": s.item.id in why,
                "why": why.get(s.item.id),
                "rank": rank.get(s.item.id),
            }
            for s in scored
        ]
    )
    table.to_parquet(out / "discrimination.parquet", index=False)
    return {**report, "output": str(out)}


def _round(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 6)


# --- delta ---------------------------------------------------------------------------------


def vision_delta(
    results: StoredResults,
    run_id: str,
    *,
    blind_run_id: str | None = None,
    scoring: str | None = None,
) -> pd.DataFrame:
    seen = load_units(results, run_id, "datbench", scoring)
    unseen = load_units(results, blind_run_id or run_id, "datbench_blind", seen.scoring)
    capability = {u: s.metadata["capability"] for u, s in {**unseen.first, **seen.first}.items()}
    rows = []
    for model in seen.models:
        if model not in unseen.values:
            continue
        for d in blind.vision_delta(seen.values[model], unseen.values[model], capability):
            rows.append({"model": model, "scoring": seen.scoring, **d.__dict__})
    if not rows:
        raise ConfigError(
            "no model answered the same DatBench units with and without the image: evaluate "
            "datbench and datbench_blind with the same models and data"
        )
    return pd.DataFrame(rows)


# --- blind-filter --------------------------------------------------------------------------


def blind_solvable(
    results: StoredResults,
    run_id: str,
    *,
    comparator: blind.Comparator = "gt",
    default_tau: int | None = None,
    scoring: str | None = None,
    output: str | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """(per-dataset summary, the filter file) from the run's `datbench_blind` scores."""
    units = load_units(results, run_id, "datbench_blind", scoring)
    complete = units.complete_units()
    verdicts = blind.blind_filter(
        {u: [units.solved(m, u) for m in units.models] for u in complete},
        {u: units.first[u].metadata["dataset"] for u in complete},
        {u: units.first[u].metadata["row_metadata"] for u in complete},
        comparator,
        default_tau,
    )
    summary: dict[str, dict[str, Any]] = {}
    for v in verdicts:
        row = summary.setdefault(
            v.dataset, {"dataset": v.dataset, "tau": v.tau, "units": 0, "removed": 0}
        )
        row["units"] += 1
        row["removed"] += int(v.remove)
    removed = [row for v in verdicts if v.remove for row in units.rows[v.unit]]
    kept = [row for v in verdicts if not v.remove for row in units.rows[v.unit]]
    filter_file = {
        "run_id": run_id,
        "scoring": units.scoring,
        "models": len(units.models),
        "comparator": comparator,
        "default_tau": default_tau,
        "untested_datasets": sorted({v.dataset for v in verdicts if v.tau is None}),
        "remove": removed,
        "ids": kept,  # usable as a --datbench-subset file
    }
    out = Path(output or f"datbench-blind-filter-{run_id}.json")
    out.write_text(json.dumps(filter_file, indent=1) + "\n")
    table = pd.DataFrame(list(summary.values()), columns=["dataset", "tau", "units", "removed"])
    table["tau"] = table["tau"].astype("Int64")  # None: no τ for that dataset
    return table, {**filter_file, "output": str(out)}
