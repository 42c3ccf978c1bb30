"""What the leaderboard read of each run, kept beside it: a run adds or replaces its own rows.

Rebuilding the leaderboard from the whole store reads every run's result tables (4-13 s on a
store of a few dozen runs). `leaderboard/rows.json` keeps each run's rows and per-unit values as
`board_rows.run_rows` read them, so that a run that has just written its results updates the
leaderboard by reading its own tables only (`runs_with`), and the plots of the groups whose
rows did not change are kept as they are (`plot_digests`).

`evalfleet leaderboard` (and any update without a run) reads the whole store again and writes
this file anew: a run removed or repaired by hand is seen then.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from evalfleet.engine.run.identity import RunError
from evalfleet.metrics.intervals import UnitValues
from evalfleet.reports.board_rows import SKIPPED, StoreRows, run_rows
from evalfleet.storage.base import Store

FORMAT = 2  # 2: each row has its run's run_created_at
CACHE = "rows.json"
PLOTTED = [  # the columns a group's plots are drawn from
    "model",
    "value",
    "ci95_low",
    "ci95_high",
    "rank",
    "band",
    "complete",
    "coverage",
    "new",
    "mean_output_tokens",
    "cost_per_correct_usd",
    "scoring",
    "items",
]


@dataclass
class RunEntry:
    rows: list[dict[str, Any]] = field(default_factory=list)
    units: dict[tuple[str, str, str, str], UnitValues] = field(default_factory=dict)
    damaged: str | None = None
    needs: list[str] = field(default_factory=list)  # a benchmark not installed: one line


@dataclass
class Cache:
    runs: dict[str, RunEntry] = field(default_factory=dict)
    plots: dict[str, str] = field(default_factory=dict)  # group -> digest of its plotted rows


def read_run(store: Store, run_id: str) -> RunEntry:
    """One run as the leaderboard reads it (as `board_rows.read_runs` does)."""
    entry = RunEntry()
    try:
        entry.rows = run_rows(store, run_id, entry.units, entry.needs)
    except RunError as exc:
        entry = RunEntry(damaged=" ".join(str(exc).split()))
    return entry


def read_all(store: Store) -> Cache:
    return Cache(
        {
            run_id: read_run(store, run_id)
            for run_id in store.list_dirs("")
            if run_id != SKIPPED and not run_id.startswith("_")
        }
    )


def runs_with(store: Store, cache: Cache, run_id: str) -> Cache:
    """The cache with `run_id` read again (added, or its rows replaced)."""
    runs = dict(cache.runs)
    runs[run_id] = read_run(store, run_id)
    return Cache(runs, dict(cache.plots))


def store_rows(cache: Cache) -> StoreRows:
    """What `board_rows.read_runs` returns for the same store (runs in the store's order)."""
    out = StoreRows()
    for run_id in sorted(cache.runs):
        entry = cache.runs[run_id]
        if entry.damaged is not None:
            out.damaged.append(entry.damaged)
            continue
        rows, needs = installed_rows(run_id, entry)
        out.damaged += needs
        out.runs += bool(rows)
        out.rows += rows
        out.units.update(entry.units)
    return out


def installed_rows(run_id: str, entry: RunEntry) -> tuple[list[dict[str, Any]], list[str]]:
    """The run's kept rows of the benchmarks installed here, and the lines of those that are
    not (kept when it was read, or a package uninstalled since its rows were kept)."""
    from evalfleet.benchmarks import registry
    from evalfleet.reports.not_installed import not_installed

    here = set(registry.names())
    gone = sorted({row["benchmark"] for row in entry.rows} - here)
    needs = list(entry.needs)
    for name in gone:
        if not any(f"'{name}'" in line for line in needs):
            needs.append(f"run {run_id} {not_installed(name)}")
    return [row for row in entry.rows if row["benchmark"] in here], needs


def load(store: Store, prefix: str) -> Cache | None:
    """The kept rows, or None (none yet, another format, unreadable: rebuild from the store)."""
    try:
        blob = store.get(f"{prefix}/{CACHE}")
        data = json.loads(blob) if blob is not None else None
    except (ValueError, OSError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    try:
        runs = {run_id: _entry(raw) for run_id, raw in data["runs"].items()}
        return Cache(runs, dict(data.get("plots") or {}))
    except (KeyError, TypeError, ValueError):
        return None


def save(store: Store, prefix: str, cache: Cache) -> None:
    data = {
        "format": FORMAT,
        "runs": {run_id: _raw(entry) for run_id, entry in sorted(cache.runs.items())},
        "plots": cache.plots,
    }
    store.put(f"{prefix}/{CACHE}", json.dumps(data, separators=(",", ":")).encode())


def _raw(entry: RunEntry) -> dict[str, Any]:
    return {
        "rows": entry.rows,
        "damaged": entry.damaged,
        "needs": entry.needs,
        "units": [
            {
                "key": list(key),
                "ids": list(values.ids),
                "values": values.values.tolist(),
                "epochs": values.epochs.tolist(),
                "epoch_var": values.epoch_var.tolist(),
                "binary": values.binary,
            }
            for key, values in entry.units.items()
        ],
    }


def _entry(raw: dict[str, Any]) -> RunEntry:
    units = {
        tuple(unit["key"]): UnitValues.of(
            unit["ids"], unit["values"], unit["epochs"], unit["epoch_var"], unit["binary"]
        )
        for unit in raw["units"]
    }
    return RunEntry(list(raw["rows"]), units, raw.get("damaged"), list(raw.get("needs") or []))


def plot_digests(primary: pd.DataFrame) -> dict[str, str]:
    """For each (benchmark, item set) the plots draw: a digest of the rows they draw."""
    digests = {}
    for (benchmark, item_set), part in primary.groupby(["benchmark", "item_set"], sort=False):
        shown = part[[c for c in PLOTTED if c in part.columns]].to_json(orient="split")
        digests[f"{benchmark}--{item_set}"] = hashlib.sha256(shown.encode()).hexdigest()[:16]
    return digests
