"""Aggregating: read a run's records, score them, compute each benchmark's metrics, write
versioned tables. The `aggregate` flow wraps `aggregate_run`."""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Any

from evalfleet.core.text_tables import markdown
from evalfleet.engine.scoring.agreement import judge_agreement
from evalfleet.engine.scoring.score import score_run, scoring_pool
from evalfleet.engine.scoring.tables import notes, summaries, write_results
from evalfleet.engine.store import counts
from evalfleet.engine.store.stored import plan_run, read_states
from evalfleet.storage.base import Store

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger("evalfleet")


def aggregate_run(store: Store, run_id: str) -> dict[str, Any]:
    """Score every stored record of a run and write its tables under a new results version,
    and the answer counts of its listing beside its manifest (what `evalfleet runs` shows of
    an ended run: `evalfleet.engine.store.counts`)."""
    run = plan_run(store, run_id)
    # Worker processes (a large run) start now: each plans the run while this one lists it.
    with scoring_pool(run) as pool:
        listed = counts.before_listing(store, run_id)
        read_states(run, read=False)
        states = Counter(run.answer_state.state.values())
        scored = score_run(run, pool)
    unreadable = len(scored.undecodable)
    states.subtract(scored.undecodable_states)  # asked again by the next run: missing
    states["missing"] += sum(scored.undecodable_states.values())
    log.info(
        "run %s: %d answers done, %d failed, %d stale, %d missing, %d unreadable",
        run_id,
        states["done"],
        states["failed"],
        states["stale"],
        states["missing"],
        unreadable,
    )
    benchmarks = {name: d.benchmark for name, d in run.data.items()}
    tables = summaries(scored, benchmarks)
    extra = {}
    if run.judges:
        extra["judges"] = scored.judges
        extra["judge_agreement"] = judge_agreement(scored.judged_samples, benchmarks, run.judges)
    identity = run.manifest.identity
    units = {name: bench.summary_unit for name, bench in benchmarks.items()}
    version, written = write_results(store, run_id, scored, tables, extra, identity, units)
    if listed is not None and run.listed is not None:
        counts.record(store, run_id, listed, run.listed)
    return {
        "run_id": run_id,
        "store": store.url,
        "version": version,
        "summaries": {name: _records(t) for name, t in tables.items()},
        "notes": {name: notes(scored.long, name) for name in tables},
        "spend": _records(scored.usage),
        "markdown": "\n\n".join(f"### {n}\n\n{markdown(t)}" for n, t in tables.items()),
        "written": written,
        "missing": states["missing"],
        "done": states["done"],
        "failed": states["failed"],  # answers whose record keeps a terminal error
        "stale": states["stale"],
        "unreadable": unreadable,
        "judgements": dict(scored.judge_states),
        "judge_agreement": _records(extra["judge_agreement"]) if "judge_agreement" in extra else [],
    }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = (
        frame.astype(object).where(frame.notna(), None).to_dict("records")
    )
    return records
