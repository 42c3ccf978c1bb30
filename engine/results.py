"""A run's results versions: the tables of one aggregation, written under a version of their
own, and a terminal-width Markdown rendering of them.

Each aggregation writes `{run}/results/{version}/` and then points `{run}/results/latest.json`
at it. The version is derived from the set of records scored and from the scoring code, so
aggregating the same set again with the same code rewrites the same version, and another set
or a changed scorer never overwrites the tables of another.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.escape import markdown_cell
from engine.identity import RunError
from storage import layout
from storage.base import Store

if TYPE_CHECKING:  # loaded where a table is read: the command line starts without it
    import pandas as pd

    from engine.scoring import Scored

WIDTH = 120
MISSING = "—"  # a figure that was not measured: never shown as 0 or left blank
SCORING_MODULES = ("scoring.py", "results.py", "agreement.py")
USAGE_IN_SUMMARY = [
    "errors",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cost_usd",  # the answers (the candidate model)
    "judge_cost_usd",
    "cached_input_cost_usd",  # part of cost_usd
    "reasoning_cost_usd",  # part of cost_usd
    "total_cost_usd",  # answers and judgements
]


def summaries(scored: Scored, benchmarks: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """Each benchmark's own wide table; usage columns join tables with one row per
    (model, benchmark, scoring)."""
    out = {}
    for name, bench in benchmarks.items():
        long = scored.long[scored.long["benchmark"] == name]
        if long.empty:
            continue
        table = bench.summary(long.reset_index(drop=True))
        if "breakdown" not in table.columns:
            usage = scored.usage[["model", "benchmark", *USAGE_IN_SUMMARY]]
            table = table.merge(usage, on=["model", "benchmark"], how="left")
        out[name] = table
    return out


def notes(long: pd.DataFrame, benchmark: str) -> list[str]:
    """Why a benchmark's tables show — where they do (`MetricRow.note`), each reason once."""
    if "note" not in long:
        return []
    mine = long[(long["benchmark"] == benchmark) & long["note"].fillna("").astype(bool)]
    return [f"— {text}" for text in dict.fromkeys(mine["note"])]


def markdown(frame: pd.DataFrame, width: int = WIDTH) -> str:
    """A Markdown table; one wider than `width` is split into several, each repeating the
    key columns (model, scoring, ... and what else tells the rows apart), never squeezed.
    Every name and value is escaped (`core.escape.markdown_cell`): a `|` stays in its cell,
    HTML shows as text."""
    if frame.empty:
        return "_no rows_"
    keys = [markdown_cell(str(c)) for c in key_columns(frame)]
    shown = frame.astype(object).where(frame.notna(), None).map(markdown_cell)
    shown.columns = [markdown_cell(str(c)) for c in shown.columns]
    rest = [c for c in shown.columns if c not in keys]
    # A pipe table is "| a | b |": each column adds its own width and 3, whatever is beside it.
    adds = {c: _width(_render(shown, [c])) - 1 for c in [*keys, *rest]}
    chunks: list[list[str]] = []
    current: list[str] = []
    used = 1 + sum(adds[c] for c in keys)
    for column in rest:
        if current and used + adds[column] > width:
            chunks.append(current)
            current = []
            used = 1 + sum(adds[c] for c in keys)
        current.append(column)
        used += adds[column]
    chunks.append(current)
    return "\n\n".join(_render(shown, [*keys, *chunk]) for chunk in chunks)


KEY_COLUMNS = ("model", "benchmark", "scoring", "breakdown", "group")


def key_columns(frame: pd.DataFrame) -> list[str]:
    """The columns every piece of a split table repeats: the usual keys, then as many of the
    text columns before the first figure as it takes to tell the rows apart (ROME's `task`)."""
    from pandas.api.types import is_numeric_dtype

    keys = [c for c in KEY_COLUMNS if c in frame.columns]
    leading = []
    for column in frame.columns:
        if is_numeric_dtype(frame[column]):
            break
        if column not in keys:
            leading.append(column)
    for column in leading:
        if not frame.duplicated(subset=keys or None).any():
            break
        keys.append(column)
    return [c for c in frame.columns if c in keys]


def _render(frame: pd.DataFrame, columns: list[str]) -> str:
    return frame[columns].to_markdown(index=False, floatfmt=".4f", missingval=MISSING)


def _width(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


@functools.cache
def scorer_sha256() -> str:
    """A digest of the code that scores: the benchmarks, the statistics and the engine's
    scoring and tables (their sources, read here, so it holds without git too)."""
    root = Path(__file__).resolve().parent.parent
    sources = [
        *sorted((root / "benchmarks").rglob("*.py")),
        *sorted((root / "metrics").rglob("*.py")),
    ]
    sources += [root / "engine" / name for name in SCORING_MODULES]
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def version_of(scored: Scored) -> str:
    """A results version is named after the records it scored and the code that scored
    them: the same records scored again by the same code rewrite it; a scorer change or
    another set of records makes a new one."""
    return "v-" + hashlib.sha256(f"{scored.digest}\n{scorer_sha256()}".encode()).hexdigest()[:12]


def write_results(
    store: Store,
    run_id: str,
    scored: Scored,
    tables: dict[str, pd.DataFrame],
    extra: dict[str, pd.DataFrame] | None = None,
    identity: dict[str, Any] | None = None,
    units: dict[str, str] | None = None,
) -> tuple[str, list[str]]:
    """Write one aggregation's tables under its version (with `version.json`: what scored
    them, and the run's identity then, so two versions of a grown run compare), then move
    `latest` to it. `extra`: more tables by file stem (judge agreement); `units`: what each
    summary's figures are, said above its Markdown table."""
    from engine.manifest import code_version

    version = version_of(scored)
    files: dict[str, bytes] = {
        "samples.parquet": _parquet(scored.samples),
        "metrics.parquet": _parquet(scored.long),
        "units.parquet": _parquet(scored.units),
        "metrics.csv": scored.long.to_csv(index=False).encode(),
        "usage.csv": scored.usage.to_csv(index=False).encode(),
        "usage.parquet": _parquet(scored.usage),
    }
    files.update(scored.extra_files)
    for stem, table in (extra or {}).items():
        files[f"{stem}.parquet"] = _parquet(table)
        files[f"{stem}.csv"] = table.to_csv(index=False).encode()
        files[f"{stem}.md"] = (markdown(table) + "\n").encode()
    for name, table in tables.items():
        files[f"summary_{name}.parquet"] = _parquet(table)
        files[f"summary_{name}.csv"] = table.to_csv(index=False).encode()
        footnotes = "".join(f"\n- {line}" for line in notes(scored.long, name))
        unit = f"{units[name]}\n\n" if units and name in units else ""
        files[f"summary_{name}.md"] = (unit + markdown(table) + "\n" + footnotes).encode()
    written = []
    for name, data in files.items():
        key = layout.results_key(run_id, version, name)
        store.put(key, data)
        written.append(key)
    latest = {
        "version": version,
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "records_scored_sha256": scored.digest,
        "scorer_sha256": scorer_sha256(),
        "code_version": code_version(),
        "files": sorted([*files, "version.json"]),
        **({"identity": identity} if identity is not None else {}),
    }
    about = json.dumps(latest, indent=2).encode()
    store.put(layout.results_key(run_id, version, "version.json"), about)
    written.append(layout.results_key(run_id, version, "version.json"))
    store.put(layout.latest_results_key(run_id), about)
    return version, written


class NoResults(RunError):
    """The run has not been aggregated yet."""


def read_result(store: Store, run_id: str, name: str) -> pd.DataFrame:
    """A table of the run's latest results (`summary_zerobench.parquet`, ...)."""
    return read_version_table(store, run_id, results_about(store, run_id)["version"], name)


def read_version_table(store: Store, run_id: str, version: str, name: str) -> pd.DataFrame:
    """One Parquet table of a results version; DamagedFile when it is missing or unreadable
    (`evalfleet aggregate` writes it again)."""
    table = read_optional_table(store, run_id, version, name)
    if table is None:
        from engine.damage import results_damaged

        key = layout.results_key(run_id, version, name)
        raise results_damaged(store, key, "missing from its results version")
    return table


def read_optional_table(store: Store, run_id: str, version: str, name: str) -> pd.DataFrame | None:
    """A table a results version may not have (judges, judge agreement): None without it;
    DamagedFile when it is there but unreadable."""
    from engine.damage import problem_of, results_damaged

    key = layout.results_key(run_id, version, name)
    blob = store.get(key)
    if blob is None:
        return None
    import pandas as pd

    try:
        return pd.read_parquet(io.BytesIO(blob))
    except (ValueError, OSError) as exc:  # ArrowInvalid is a ValueError
        raise results_damaged(store, key, f"not Parquet: {problem_of(exc)}") from None


def results_about(store: Store, run_id: str, version: str | None = None) -> dict[str, Any]:
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
            from engine.damage import results_damaged

            raise results_damaged(store, key, "missing, though results versions are there")
        if blob is None:
            raise NoResults(
                f"run {run_id} has no results in {store.describe()}: run `evalfleet aggregate "
                f"{run_id}` (or finish the run) first"
            )
        about = _about(store, key, blob)
        if not _version_exists(store, run_id, about["version"]):
            from engine.damage import results_damaged

            raise results_damaged(store, key, f"it names {about['version']}, which is missing")
        return about
    key = layout.results_key(run_id, version, "version.json")
    blob = store.get(key)
    if blob is not None:
        return _about(store, key, blob)
    if store.get(layout.results_key(run_id, version, "samples.parquet")) is None:
        raise RunError(f"run {run_id} has no results version {version} in {store.describe()}")
    return {"version": version}


def check_results(store: Store, run_id: str) -> dict[str, Any] | None:
    """What scored the run's latest results (`results_about`), after checking that
    `latest.json` names a version that is there and that each of its Parquet tables is whole
    (its footer reads); None before the first aggregation. DamagedFile otherwise."""
    import pyarrow.parquet as pq

    from engine.damage import problem_of, results_damaged

    try:
        about = results_about(store, run_id)
    except NoResults:
        return None
    version = about["version"]
    names = about.get("files") or ["samples.parquet", "metrics.parquet", "usage.parquet"]
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


def _about(store: Store, key: str, blob: bytes) -> dict[str, Any]:
    from engine.damage import problem_of, results_damaged

    try:
        about = json.loads(blob)
    except ValueError as exc:
        raise results_damaged(store, key, f"not JSON: {problem_of(exc)}") from None
    version = about.get("version") if isinstance(about, dict) else None
    if not isinstance(version, str) or not layout.is_results_version(version):
        raise results_damaged(store, key, "no results version named in it")
    return about


def _version_exists(store: Store, run_id: str, version: str) -> bool:
    return any(
        store.get(layout.results_key(run_id, version, name)) is not None
        for name in ("version.json", "samples.parquet")
    )


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()
