"""`evalfleet runs`: the runs in a store and how far each has got (from listings only)."""

from __future__ import annotations

import json
from collections import Counter

import pandas as pd

from flows.request import EvalRequest
from storage import layout, open_store


def run_progress(store, run_id: str) -> dict[str, object] | None:
    data = store.get(layout.manifest_key(run_id))
    if data is None:
        return None
    try:
        manifest = json.loads(data)
        request = EvalRequest(**manifest["request"])
    except (ValueError, KeyError, TypeError):
        return {
            "run_id": run_id,
            "created_at": "?",
            "models": "?",
            "benchmarks": "?",
            "expected": None,
            "done": None,
            "failed": None,
            "progress": "unreadable manifest",
        }
    per_model = sum(d["samples"] for d in manifest["datasets"].values())
    expected = per_model * len(request.epoch_decodings()) * len(request.models)
    done: set[tuple[str, str, str, int]] = set()
    failed: set[tuple[str, str, str, int]] = set()
    for key in store.list(layout.completions_prefix(run_id)):
        name = layout.parse_completion_key(run_id, key)
        if name is not None:
            ident = (name.model, name.benchmark, name.sample_id, name.epoch)
            (failed if name.failed else done).add(ident)
    failed -= done
    return {
        "run_id": run_id,
        "created_at": manifest.get("created_at", "?"),
        "models": ", ".join(request.models),
        "benchmarks": ", ".join(request.benchmarks),
        "expected": expected,
        "done": len(done),
        "failed": len(failed),
        "progress": f"{100.0 * len(done) / expected:.1f}%" if expected else "-",
    }


def list_runs(store_url: str, *, s3_endpoint_url: str | None = None) -> str:
    store = open_store(store_url, s3_endpoint_url=s3_endpoint_url)
    rows = []
    for run_dir in store.list_dirs(""):
        run_id = run_dir.strip("/")
        progress = run_progress(store, run_id)
        if progress is not None:
            rows.append(progress)
    if not rows:
        return f"no runs in {store.describe()}"
    return pd.DataFrame(rows, dtype=object).to_markdown(index=False, missingval="?")


def run_status(
    run_id: str,
    store_url: str,
    *,
    s3_endpoint_url: str | None = None,
    quarantine: bool = False,
) -> tuple[pd.DataFrame, list[str]]:
    """Per (model, benchmark): done / failed / stale / missing, plus undecodable records.

    Every done or failed record is read and decoded; an undecodable one counts as missing.
    With `quarantine`, it is moved to {run}/quarantine/ so the next resume requests it again.
    """
    from flows import plan as planning
    from tasks.records import decode_record

    store = open_store(store_url, s3_endpoint_url=s3_endpoint_url)
    reconciled = planning.load_run(store, run_id).reconciled
    blobs = store.get_many(list(reconciled.record_key.values()))
    bad: list[str] = []
    for ident, key in reconciled.record_key.items():
        if decode_record(blobs.get(key) or b"") is None:
            bad.append(key)
            reconciled.state[ident] = "missing"
    if quarantine:
        for key in bad:
            data = blobs.get(key)
            if data is not None:
                store.put(f"{run_id}/quarantine/{key[len(run_id) + 1 :]}", data)
            store.delete(key)
    bad_by_shard = Counter(
        (n.model, n.benchmark)
        for n in (layout.parse_completion_key(run_id, k) for k in bad)
        if n is not None
    )
    rows = []
    for (model, benchmark), counts in sorted(reconciled.counts().items()):
        rows.append(
            {
                "model": model,
                "benchmark": benchmark,
                **{state: counts.get(state, 0) for state in planning.STATES},
                "unreadable": bad_by_shard.get((model, benchmark), 0),
            }
        )
    return pd.DataFrame(rows), bad
