"""The scheduled re-run of what is ranked (`reevaluate` in mode "ranked"): every model on the
leaderboard (or the ones named) asked again on the item set it was ranked on, under a dated
run id, so `drift` can pair the new run with the last one.

A model's latest run is its source: the new run repeats that run's request (benchmarks,
limit, dataset copies and options, protocol, epochs, judges, endpoint) for the models whose
latest run it is, and asks fresh (never `--reuse-from`: the point is to see what changed).
"""

from __future__ import annotations

from evalfleet.core.types import ConfigError
from evalfleet.engine.run.request import EvalRequest, check_run_id
from evalfleet.engine.store.manifest import read_manifest
from evalfleet.reports.history import points
from evalfleet.storage.base import Store


def ranked_requests(store: Store, models: list[str], stamp: str) -> list[EvalRequest]:
    """One request per source run (run id `weekly-{stamp}`, `-2`, ... after the first), for
    `models` (empty: every model with results in the store). A model named that has no
    results is one line."""
    latest: dict[str, str] = {}  # model -> its latest run
    for point in points(store, models or None):  # in time order
        latest[point.model] = point.run_id
    missing = [m for m in models if m not in latest]
    if missing:
        raise ConfigError(
            f"no results of {', '.join(missing)} in {store.describe()}: name models on the "
            "leaderboard (`evalfleet leaderboard`), or none for all of them"
        )
    by_source: dict[str, list[str]] = {}
    for model, run_id in latest.items():
        by_source.setdefault(run_id, []).append(model)
    out = []
    for n, (source, chosen) in enumerate(sorted(by_source.items()), 1):
        manifest = read_manifest(store, source)
        if manifest is None:
            continue  # removed since it was listed
        asked = manifest.request
        run_id = check_run_id(f"weekly-{stamp}" + (f"-{n}" if n > 1 else ""))
        out.append(
            asked.model_copy(
                update={
                    "models": sorted(chosen),
                    "endpoints": {m: e for m, e in asked.endpoints.items() if m in chosen},
                    "run_id": run_id,
                    "reuse_from": [],
                    "extend": False,
                }
            )
        )
    return out
