"""A run's results versions, read: what scored one (`version.json`, `latest.json`) and its
tables, each failure one line, a damaged file named with its repair (`engine.store.damage`).
`evalfleet.engine.scoring.tables` writes them."""

from __future__ import annotations

import io
import shlex
from typing import TYPE_CHECKING

from evalfleet.engine.run.identity import RunError
from evalfleet.engine.store.about import ResultsAbout, UnreadableAbout
from evalfleet.storage import layout
from evalfleet.storage.base import Store

if TYPE_CHECKING:  # loaded where a table is read: the command line starts without it
    import pandas as pd


class NoResults(RunError):
    """The run has not been aggregated yet."""


def read_result(store: Store, run_id: str, name: str) -> pd.DataFrame:
    """A table of the run's latest results (`summary_zerobench.parquet`, ...)."""
    return read_version_table(store, run_id, results_about(store, run_id).version, name)


def read_version_table(store: Store, run_id: str, version: str, name: str) -> pd.DataFrame:
    """One Parquet table of a results version; DamagedFile when it is missing or unreadable
    (`evalfleet aggregate` writes it again)."""
    table = read_optional_table(store, run_id, version, name)
    if table is None:
        from evalfleet.engine.store.damage import results_damaged

        key = layout.results_key(run_id, version, name)
        raise results_damaged(store, key, "missing from its results version")
    return table


def read_optional_table(store: Store, run_id: str, version: str, name: str) -> pd.DataFrame | None:
    """A table a results version may not have (judges, judge agreement): None without it;
    DamagedFile when it is there but unreadable."""
    from evalfleet.engine.store.damage import problem_of, results_damaged

    key = layout.results_key(run_id, version, name)
    blob = store.get(key)
    if blob is None:
        return None
    import pandas as pd

    try:
        return pd.read_parquet(io.BytesIO(blob))
    except (ValueError, OSError) as exc:  # ArrowInvalid is a ValueError
        raise results_damaged(store, key, f"not Parquet: {problem_of(exc)}") from None


def results_about(store: Store, run_id: str, version: str | None = None) -> ResultsAbout:
    """What scored a results version (its `version.json`): the latest one, or `version`.
    Versions written before it was kept say only their name. One line if there is none;
    DamagedFile when `latest.json` or `version.json` is unreadable, or names a version that
    is gone."""
    if version is None:
        key = layout.latest_results_key(run_id)
        blob = store.get(key)
        if blob is None and any(
            map(layout.is_results_version, store.list_dirs(f"{run_id}/results"))
        ):
            from evalfleet.engine.store.damage import results_damaged

            raise results_damaged(store, key, "missing, though results versions are there")
        if blob is None and "results" in store.not_folders(run_id):
            raise results_in_the_way(store, run_id)
        if blob is None:
            raise NoResults(
                f"run {run_id} has no results in {store.describe()}: run `evalfleet aggregate "
                f"{run_id}` (or finish the run) first"
            )
        about = _about(store, key, blob)
        if not _version_exists(store, run_id, about.version):
            from evalfleet.engine.store.damage import results_damaged

            raise results_damaged(store, key, f"it names {about.version}, which is missing")
        return about
    key = layout.results_key(run_id, version, "version.json")
    blob = store.get(key)
    if blob is not None:
        return _about(store, key, blob)
    if store.get(layout.results_key(run_id, version, "samples.parquet")) is None:
        raise RunError(f"run {run_id} has no results version {version} in {store.describe()}")
    return ResultsAbout(version)


def results_in_the_way(store: Store, run_id: str) -> RunError:
    """`{run}/results` is a file (or a link to nothing) where its folder belongs."""
    from evalfleet.engine.store.damage import DamagedFile

    key = f"{run_id}/results"
    where = shlex.quote(f"{store.url.rstrip('/')}/{key}")
    return DamagedFile(
        store,
        key,
        "not a folder",
        f"move it aside (`mv {where} {where}.moved`), then `evalfleet aggregate {run_id}` "
        "writes the results again",
    )


def check_results(store: Store, run_id: str) -> ResultsAbout | None:
    """What scored the run's latest results (`results_about`), after checking that
    `latest.json` names a version that is there and that each of its Parquet tables is whole
    (its footer reads); None before the first aggregation. DamagedFile otherwise."""
    import pyarrow.parquet as pq

    from evalfleet.engine.store.damage import problem_of, results_damaged

    try:
        about = results_about(store, run_id)
    except NoResults:
        return None
    version = about.version
    names = about.files or ("samples.parquet", "metrics.parquet", "usage.parquet")
    own = layout.results_key(run_id, version, "version.json")  # latest.json is its copy
    blob = store.get(own)
    if blob is not None:
        _about(store, own, blob)
    elif "version.json" in names:
        raise results_damaged(store, own, "missing from its results version")
    for name in names:
        if not name.endswith(".parquet"):
            continue
        key = layout.results_key(run_id, version, name)
        blob = store.get(key)
        if blob is None:
            raise results_damaged(store, key, "missing from its results version")
        try:
            pq.read_metadata(io.BytesIO(blob))
        except (ValueError, OSError) as exc:
            raise results_damaged(store, key, f"not Parquet: {problem_of(exc)}") from None
    return about


def _about(store: Store, key: str, blob: bytes) -> ResultsAbout:
    from evalfleet.engine.store.damage import results_damaged

    try:
        return ResultsAbout.from_bytes(blob, key)
    except UnreadableAbout as exc:
        raise results_damaged(store, key, exc.problem) from None


def _version_exists(store: Store, run_id: str, version: str) -> bool:
    return any(
        store.get(layout.results_key(run_id, version, name)) is not None
        for name in ("version.json", "samples.parquet")
    )
