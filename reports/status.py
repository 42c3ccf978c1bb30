"""`evalfleet runs` (every run of a store and how far it got, from listings) and
`evalfleet status` (one run, every record read: the exact view)."""

from __future__ import annotations

import pandas as pd

from engine.run.identity import RunError
from engine.run.state import STATES, list_records, quarantine
from engine.store import heartbeat
from engine.store.manifest import read_manifest
from engine.store.stored import load_run
from storage import layout
from storage.base import Store


def expected_answers(manifest: dict) -> int:
    """Answers the run asks: samples x epochs x models, per benchmark."""
    identity = manifest["identity"]
    models = len(identity["models"])
    return sum(
        b["data"]["samples"] * len(b["decodings"]) * models for b in identity["benchmarks"].values()
    )


def run_progress(store: Store, run_id: str) -> dict[str, object] | None:
    try:
        manifest = read_manifest(store, run_id)
    except RunError as exc:
        problem = "older evalfleet" if "older evalfleet" in str(exc) else "unreadable manifest"
        return {
            "run_id": run_id,
            **dict.fromkeys(("created_at", "models", "benchmarks"), "?"),
            "expected": None,
            "done": None,
            "failed": None,
            "progress": problem,
            "state": "?",
        }
    if manifest is None:
        return None
    expected = expected_answers(manifest)
    listing = list_records(store, run_id, (layout.ANSWER,))
    done = {k for k, hashes in listing.ok.items() if hashes}
    failed = {k for k, hashes in listing.failed.items() if hashes} - done
    return {
        "run_id": run_id,
        "created_at": manifest.get("created_at", "?"),
        "models": ", ".join(manifest["identity"]["models"]),
        "benchmarks": ", ".join(manifest["identity"]["benchmarks"]),
        "expected": expected,
        "done": len(done),
        "failed": len(failed),
        "progress": f"{100.0 * min(len(done), expected) / expected:.1f}%" if expected else "-",
        "state": heartbeat.liveness(manifest),
    }


def list_runs(store: Store) -> str:
    """A table of the store's runs (from listings: a stale record counts as done here;
    `status` tells them apart)."""
    rows = []
    for run_dir in store.list_dirs(""):
        progress = run_progress(store, run_dir.strip("/"))
        if progress is not None:
            rows.append(progress)
    if not rows:
        return f"no runs in {store.describe()}"
    return pd.DataFrame(rows, dtype=object).to_markdown(index=False, missingval="?")


def run_status(
    store: Store, run_id: str, *, move_aside: bool = False
) -> tuple[pd.DataFrame, list[str]]:
    """Per (stage, model, benchmark): done / failed / stale / missing, plus undecodable
    records (every record is read; an undecodable one counts as missing). With
    `move_aside`, undecodable records are moved to {run}/quarantine/ now."""
    run = load_run(store, run_id)
    bad = [*run.answer_state.undecodable, *run.judge_state.undecodable]
    if move_aside:
        quarantine(store, run_id, bad)
    bad_by_shard: dict[tuple[str, str, str, str], int] = {}
    for key in bad:
        name = layout.parse_record_key(run_id, key)
        if name is not None:
            item = name.item
            shard = (item.stage, item.judge, item.model, item.benchmark)
            bad_by_shard[shard] = bad_by_shard.get(shard, 0) + 1
    rows = []
    for state in (run.answer_state, run.judge_state):
        for shard, counts in sorted(state.counts().items()):
            stage, judge, model, benchmark = shard
            rows.append(
                {
                    "stage": stage,
                    # which judge, where the run has any (a row per judge)
                    **({"judge": judge or "-"} if run.judges else {}),
                    "model": model,
                    "benchmark": benchmark,
                    **{name: counts.get(name, 0) for name in STATES},
                    "unreadable": bad_by_shard.get(shard, 0),
                }
            )
    return pd.DataFrame(rows), bad


def batch_status(store: Store, run_id: str) -> pd.DataFrame:
    """The run's batch jobs: state, the provider's word and counts, what was written."""
    from engine.generation.batches import read_jobs

    rows = [
        {
            "job": job.job_id,
            "model": job.caller,
            "provider_id": job.provider_id or "-",
            "state": job.state,
            "detail": job.detail or "-",
            "lines": job.lines,
            "counts": ", ".join(f"{k} {n}" for k, n in job.counts.items() if n) or "-",
            "written": ", ".join(f"{k} {n}" for k, n in job.written.items() if n) or "-",
        }
        for job in read_jobs(store, run_id)
    ]
    return pd.DataFrame(rows)
