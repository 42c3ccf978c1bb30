"""A run's results versions, written: the tables of one aggregation under a version of their
own, and a terminal-width Markdown rendering of them (`evalfleet.engine.store.results` reads them).

Each aggregation writes `{run}/results/{version}/` and then points `{run}/results/latest.json`
at it. The version is derived from the set of records scored and from the scoring code, so
aggregating the same set again with the same code rewrites the same version, and another set
or a changed scorer never overwrites the tables of another.
"""

from __future__ import annotations

import functools
import hashlib
import io
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalfleet.core.text_tables import markdown
from evalfleet.engine.store.about import ResultsAbout
from evalfleet.storage import layout
from evalfleet.storage.base import Store

if TYPE_CHECKING:  # loaded where a table is read: the command line starts without it
    import pandas as pd

    from evalfleet.engine.run.identity import Identity
    from evalfleet.engine.scoring.score import Scored

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


@functools.cache
def scorer_sha256() -> str:
    """A digest of the code that scores: the benchmarks, the statistics and the engine's
    scoring and tables (their sources, read here, so it holds without git too)."""
    from evalfleet import benchmarks, metrics
    from evalfleet.engine import scoring

    digest = hashlib.sha256()
    for package in (benchmarks, metrics, scoring):
        folder = Path(package.__file__ or "").resolve().parent
        for path in sorted(folder.rglob("*.py")):
            name = f"{package.__name__}/{path.relative_to(folder).as_posix()}"
            digest.update(name.encode() + b"\0" + path.read_bytes())
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
    identity: Identity | None = None,
    units: dict[str, str] | None = None,
) -> tuple[str, list[str]]:
    """Write one aggregation's tables under its version (with `version.json`: what scored
    them, and the run's identity then, so two versions of a grown run compare), then move
    `latest` to it. `extra`: more tables by file stem (judge agreement); `units`: what each
    summary's figures are, said above its Markdown table."""
    from evalfleet.engine.store.manifest import code_version

    version = version_of(scored)
    files: dict[str, bytes] = {
        "samples.parquet": scored.samples_parquet,
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
    about = ResultsAbout(
        version=version,
        written_at=datetime.now(UTC).isoformat(timespec="seconds"),
        records_scored_sha256=scored.digest,
        scorer_sha256=scorer_sha256(),
        code_version=code_version(),
        files=tuple(sorted([*files, "version.json"])),
        identity=identity,
    ).to_bytes()
    store.put(layout.results_key(run_id, version, "version.json"), about)
    written.append(layout.results_key(run_id, version, "version.json"))
    store.put(layout.latest_results_key(run_id), about)
    return version, written


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()
