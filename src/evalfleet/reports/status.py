"""`evalfleet runs` (every run of a store and how far it got: an ended run's counts as its
last aggregation listed them, while nothing has written since; else from a listing now) and
`evalfleet status` (one run, every record read: the exact view)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalfleet.engine.run.identity import RunError
from evalfleet.engine.run.state import STATES, answer_counts, list_records, quarantine
from evalfleet.engine.store import heartbeat
from evalfleet.engine.store.counts import recorded_counts
from evalfleet.engine.store.manifest import ManifestVersionError, read_manifest
from evalfleet.storage import layout
from evalfleet.storage.base import Store
from evalfleet.storage.tags import read_tags

if TYPE_CHECKING:  # pandas is imported by `status` only: `runs` starts faster without it
    import pandas as pd

LISTED_NOW = "listed now"


def run_progress(store: Store, run_id: str) -> dict[str, object] | None:
    """One row of `runs`. `done` counts the items with an answer record (a stale one too),
    `failed` those with only terminal errors. An ended run whose last aggregation recorded
    these counts, with nothing written since, shows them (`engine.store.counts`); any other
    run is listed now. `counted` says which."""
    try:
        manifest = read_manifest(store, run_id)
    except ManifestVersionError as exc:
        problem = "newer evalfleet" if exc.newer else "older evalfleet"
        return _unreadable(run_id, problem)
    except RunError:
        return _unreadable(run_id, "unreadable manifest")
    if manifest is None:
        return None
    identity = manifest.identity
    expected = identity.expected_answers
    state = heartbeat.liveness(manifest)
    recorded = recorded_counts(store, run_id, manifest, state)
    if recorded is None:
        done, failed = answer_counts(list_records(store, run_id, (layout.ANSWER,)))
        counted = LISTED_NOW
    else:
        done, failed = recorded.done, recorded.failed
        counted = f"aggregation {recorded.listed_at:%Y-%m-%d %H:%M:%S}Z"
    return {
        "run_id": run_id,
        "created_at": manifest.created_at or "?",
        "models": ", ".join(identity.models),
        "benchmarks": ", ".join(identity.benchmarks),
        "expected": expected,
        "done": done,
        "failed": failed,
        "progress": f"{100.0 * min(done, expected) / expected:.1f}%" if expected else "-",
        "state": state,
        "counted": counted,
    }


def _unreadable(run_id: str, problem: str) -> dict[str, object]:
    """The row of a run whose manifest does not read."""
    return {
        "run_id": run_id,
        **dict.fromkeys(("created_at", "models", "benchmarks"), "?"),
        "expected": None,
        "done": None,
        "failed": None,
        "progress": problem,
        "state": "?",
        "counted": "?",
    }


FROM_AGGREGATION = (
    'counted "aggregation T": the answers as the run\'s last aggregation listed them at T (UTC);\n'
    "the run has ended and none was written or moved since. `evalfleet status RUN` reads every "
    "record."
)


def list_runs(store: Store) -> str:
    """A table of the store's runs (from recorded counts or listings: a stale record counts
    as done here; `status` tells them apart)."""
    from tabulate import tabulate

    rows, needs, tagged = [], [], []
    for run_dir in store.list_dirs(""):
        progress = run_progress(store, run_dir.strip("/"))
        if progress is not None:
            rows.append(progress)
            if progress["expected"] is not None:  # its manifest reads
                needs += run_needs(store, str(progress["run_id"]))
            labels = read_tags(store, str(progress["run_id"]))  # `evalfleet tag`
            said = [f"tags: {', '.join(labels.tags)}"] if labels.tags else []
            if labels.metadata:
                said.append("metadata: " + ", ".join(f"{k}={v}" for k, v in labels.metadata))
            if said:
                tagged.append(f"run {progress['run_id']} {'; '.join(said)}")
    if not rows:
        return f"no runs in {store.describe()}"
    # what pandas' to_markdown gave (it calls tabulate so), without importing pandas
    table = tabulate(
        [list(row.values()) for row in rows],
        headers=list(rows[0]),
        tablefmt="pipe",
        showindex=False,
        missingval="?",
    )
    if any(row["counted"] not in (LISTED_NOW, "?") for row in rows):
        table += "\n\n" + FROM_AGGREGATION
    if needs:
        table += "\n\n" + "\n".join(needs)
    if tagged:
        table += "\n\n" + "\n".join(tagged)
    return table


def run_needs(store: Store, run_id: str) -> list[str]:
    """The line of a run that needs a benchmark not installed here (`reports.not_installed`),
    if it does."""
    from evalfleet.reports.not_installed import needs_line

    manifest = read_manifest(store, run_id)
    line = needs_line(manifest) if manifest is not None else None
    return [f"run {run_id} {line}"] if line else []


def run_status(
    store: Store, run_id: str, *, move_aside: bool = False
) -> tuple[pd.DataFrame, list[str]]:
    """Per (stage, model, benchmark): done / failed / stale / missing, plus undecodable
    records (every record is read; an undecodable one counts as missing). With
    `move_aside`, undecodable records are moved to {run}/quarantine/ now."""
    import pandas as pd

    from evalfleet.engine.store.stored import load_run

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
    import pandas as pd

    from evalfleet.engine.generation.batches import read_jobs

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
