"""The leaderboard: every run of a store side by side.

For each (model, benchmark, scoring mode) it keeps the latest complete result (every answer
the run asked has a record, done or failed); a key no run completed keeps its latest partial
result, marked incomplete. Each row has the benchmark's headline metric (`Benchmark.headline`)
with its 95 % interval (value ± 1.96 SE), its coverage (answers done / expected, errors
apart), the mean output tokens per answer received, the cost (answers and judge) and the
cost per correct answer, and its rank within (benchmark, scoring). A model that was not on
the previous leaderboard is flagged `new`.

Written under `{store}/leaderboard/`: `leaderboard.parquet`, `.csv`, `.md`, three PNG plots
(`leaderboard_plots`), `index.html` (tables and plots in one page) and `latest.json`.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from benchmarks import registry
from core.types import ConfigError
from engine.identity import RunError
from engine.manifest import read_manifest
from reports.ranks import rank_rows, rank_text
from storage import layout
from storage.base import Store

PREFIX = "leaderboard"
Z95 = 1.959964
COLUMNS = [
    "benchmark",
    "scoring",
    "rank",
    "rank_low",
    "rank_high",
    "band",
    "ranked_among",
    "model",
    "metric",
    "value",
    "ci95_low",
    "ci95_high",
    "se",
    "n",
    "done",
    "expected",
    "errors",
    "coverage",
    "complete",
    "mean_output_tokens",
    "cost_usd",
    "correct",
    "cost_per_correct_usd",
    "new",
    "run_id",
    "version",
    "written_at",
]
PLOTS = ("accuracy_ci.png", "accuracy_vs_tokens.png", "cost_per_correct.png")


@dataclass
class Board:
    table: pd.DataFrame
    new: list[str]  # one line per model new since the last leaderboard
    runs: int  # runs with results
    files: dict[str, bytes]
    models_before: list[str] = field(default_factory=list)  # what `new` was relative to


def _read(store: Store, key: str) -> bytes | None:
    try:
        return store.get(key)
    except Exception:  # an unreadable object leaves that run out, it does not stop the board
        return None


def run_rows(
    store: Store, run_id: str, samples_of: dict[tuple[str, str], pd.DataFrame] | None = None
) -> list[dict[str, Any]]:
    """One row per (model, benchmark, scoring) of a run's latest results ([] without any);
    its samples table is kept in `samples_of` for the rank intervals."""
    try:
        manifest = read_manifest(store, run_id)
    except RunError:
        return []
    latest_blob = _read(store, layout.latest_results_key(run_id))
    if manifest is None or latest_blob is None:
        return []
    latest = json.loads(latest_blob)
    version = latest["version"]
    tables = {}
    for name in ("metrics.parquet", "usage.parquet", "samples.parquet"):
        blob = _read(store, layout.results_key(run_id, version, name))
        if blob is None:
            return []
        tables[name] = pd.read_parquet(io.BytesIO(blob))
    long, usage, samples = (
        tables["metrics.parquet"],
        tables["usage.parquet"],
        tables["samples.parquet"],
    )
    if samples_of is not None:
        samples_of[(run_id, version)] = samples
    identity = manifest["identity"]["benchmarks"]
    correct = samples.groupby(["model", "benchmark", "scoring"])["correct"].sum().to_dict()
    rows = []
    for spent in usage.itertuples(index=False):
        bench_identity = identity.get(spent.benchmark)
        if bench_identity is None or spent.benchmark not in registry.names():
            continue
        headline = registry.get(spent.benchmark).headline
        expected = bench_identity["data"]["samples"] * len(bench_identity["decodings"])
        mine = long[
            (long.model == spent.model)
            & (long.benchmark == spent.benchmark)
            & (long.metric == headline)
            & (long.group.fillna("") == "")
        ]
        for metric in mine.itertuples(index=False):
            cost = float(spent.cost_usd) + float(spent.judge_cost_usd)
            right = int(correct.get((spent.model, spent.benchmark, metric.scoring), 0))
            done = int(spent.answers) - int(spent.errors)
            rows.append(
                {
                    "benchmark": spent.benchmark,
                    "scoring": metric.scoring,
                    "model": spent.model,
                    "metric": headline,
                    "value": _number(metric.value),
                    "se": _number(metric.se),
                    "n": int(metric.n),
                    "done": done,
                    "expected": expected,
                    "errors": int(spent.errors),
                    "complete": int(spent.answers) >= expected,
                    # per answer received: a failed call has no output and no tokens
                    "mean_output_tokens": float(spent.output_tokens) / done if done else None,
                    "cost_usd": round(cost, 6),
                    "correct": right,
                    "cost_per_correct_usd": round(cost / right, 6) if right else None,
                    "run_id": run_id,
                    "version": version,
                    "written_at": latest.get("written_at", ""),
                }
            )
    return rows


def _number(value: Any) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)


def build(store: Store, latest: dict[str, Any] | None = None) -> Board:
    """The leaderboard of every run in a store; `latest` is the last one's latest.json."""
    rows: list[dict[str, Any]] = []
    samples_of: dict[tuple[str, str], pd.DataFrame] = {}
    with_results = 0
    for run_id in store.list_dirs(""):
        if run_id == PREFIX or run_id.startswith("_"):
            continue
        found = run_rows(store, run_id, samples_of)
        with_results += bool(found)
        rows += found
    if not rows:
        return Board(pd.DataFrame(columns=COLUMNS), [], with_results, {})
    frame = pd.DataFrame(rows)
    # the latest complete result per key; the latest partial one where none is complete
    frame = frame.sort_values(["complete", "written_at"], ascending=[False, False], kind="stable")
    frame = frame.drop_duplicates(["model", "benchmark", "scoring"], keep="first")
    # headline metrics are fractions: the Wald interval is clipped to [0, 1]
    frame["ci95_low"] = (frame["value"] - Z95 * frame["se"].fillna(0.0)).clip(lower=0.0)
    frame["ci95_high"] = (frame["value"] + Z95 * frame["se"].fillna(0.0)).clip(upper=1.0)
    frame["coverage"] = frame["done"].astype(str) + "/" + frame["expected"].astype(str)
    frame = rank_rows(frame, samples_of)
    models_before = compared_with(latest, set(frame["model"]))
    frame["new"] = ~frame["model"].isin(models_before)
    order = {name: i for i, name in enumerate(registry.names())}
    frame["_b"] = frame["benchmark"].map(order)
    pairs = zip(frame.benchmark, frame.scoring, strict=True)
    frame["_s"] = [_scoring_order(b, s) for b, s in pairs]
    frame["_p"] = ~frame["complete"]  # complete rows first, the partial ones ranked apart
    frame = frame.sort_values(["_b", "_s", "_p", "rank", "model"]).drop(columns=["_b", "_s", "_p"])
    table = frame[COLUMNS].reset_index(drop=True)
    headline = table[table.scoring == table.benchmark.map(_primary_scoring)]
    new = [_new_line(row, headline) for row in headline[headline.new].itertuples(index=False)]
    return Board(table, new, with_results, {}, sorted(models_before))


def _new_line(row, headline: pd.DataFrame) -> str:
    peers = (headline.benchmark == row.benchmark) & (headline.ranked_among == row.ranked_among)
    among = " partial results" if row.ranked_among == "partial" else ""
    return (
        f"{row.model} is new: rank {rank_text(row.rank, row.rank_low, row.rank_high)} of "
        f"{int(peers.sum())}{among} on {row.benchmark} ({row.scoring})"
    )


def _primary_scoring(benchmark: str) -> str:
    return registry.get(benchmark).scorings[0]


def _scoring_order(benchmark: str, scoring: str) -> int:
    bench = registry.get(benchmark)
    names = [*bench.scorings, *(bench.judge.scorings if bench.judge else ())]
    return names.index(scoring) if scoring in names else len(names)


def render_files(board: Board) -> dict[str, bytes]:
    from engine.results import markdown
    from reports.plots import plots

    table = board.table
    files = {
        "leaderboard.parquet": _parquet(table),
        "leaderboard.csv": table.to_csv(index=False).encode(),
        "leaderboard.md": (markdown(shown_columns(table)) + "\n").encode(),
    }
    primary = table[table.scoring == table.benchmark.map(_primary_scoring)]
    files.update(plots(primary))
    files["index.html"] = html_page(board, files).encode()
    files["latest.json"] = json.dumps(
        {
            "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "models": sorted(set(table["model"])),
            "runs": board.runs,
            "new": board.new,
            "models_before": board.models_before,
        },
        indent=2,
    ).encode()
    return files


def shown_columns(table: pd.DataFrame) -> pd.DataFrame:
    """The columns a person reads first, compact enough for a terminal."""
    return pd.DataFrame(
        {
            "benchmark": table["benchmark"],
            "scoring": table["scoring"],
            "rank": [
                rank_text(r, lo, hi) + ("" if among == "complete" else " (partial)")
                for r, lo, hi, among in zip(
                    table["rank"],
                    table["rank_low"],
                    table["rank_high"],
                    table["ranked_among"],
                    strict=True,
                )
            ],
            "band": table["band"],
            "model": table["model"],
            "value": table["value"].round(4),
            "95% interval": [
                "" if pd.isna(lo) else f"{lo:.3f}-{hi:.3f}"
                for lo, hi in zip(table["ci95_low"], table["ci95_high"], strict=True)
            ],
            "coverage": table["coverage"] + ["" if c else " (partial)" for c in table["complete"]],
            "errors": table["errors"],
            "tokens/answer": table["mean_output_tokens"].round(1),
            "$/correct": table["cost_per_correct_usd"],
            "new": ["new" if n else "" for n in table["new"]],
        }
    )


def html_page(board: Board, files: dict[str, bytes]) -> str:
    """One static page: the tables and the plots (embedded, so the file stands alone)."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>evalfleet leaderboard</title>",
        "<style>body{font-family:sans-serif;margin:2em;color:#222}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
        "padding:3px 8px;text-align:right}th{background:#f0f0f0}td.l{text-align:left}"
        "img{max-width:100%;border:1px solid #ddd;margin:1em 0}.new{background:#fff4c2}"
        "</style></head><body>",
        f"<h1>evalfleet leaderboard</h1><p>{board.runs} runs, {stamp}. Values are the "
        "benchmark's headline metric with a 95 % interval; coverage is answers done / "
        "expected. A rank (low–high) is a 95 % interval from a paired bootstrap over the "
        "samples every model answered; models whose intervals overlap share a band. Partial "
        "results are ranked apart. Each model links to its answers in its run's report.</p>",
    ]
    if board.new:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in board.new)
        parts.append(f"<h2>New models</h2><ul>{items}</ul>")
    shown = shown_columns(board.table)
    links = [report_link(row) for row in board.table.itertuples(index=False)]
    shown["model"] = [
        f"<a href='{html.escape(link)}'>{html.escape(model)}</a>"
        for link, model in zip(links, shown["model"], strict=True)
    ]
    for (benchmark, scoring), part in shown.groupby(["benchmark", "scoring"], sort=False):
        parts.append(f"<h2>{html.escape(benchmark)} — {html.escape(scoring)}</h2>")
        parts.append(_html_table(part.drop(columns=["benchmark", "scoring"])))
    for name in PLOTS:
        if name in files:
            data = base64.b64encode(files[name]).decode()
            parts.append(f"<img alt='{name}' src='data:image/png;base64,{data}'>")
    parts.append("</body></html>")
    return "\n".join(parts)


def report_link(row) -> str:
    """From `{store}/leaderboard/index.html` to the row's items in its run's report."""
    query = urllib.parse.urlencode(
        {"model": row.model, "benchmark": row.benchmark, "scoring": row.scoring},
        quote_via=urllib.parse.quote,
    )
    return f"../{row.run_id}/results/{row.version}/report.html#{query}"


def _html_table(frame: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = []
    for row in frame.itertuples(index=False):
        cells = []
        for column, value in zip(frame.columns, row, strict=True):
            text = _cell(value)
            cls = " class='l'" if column == "model" else ""
            cells.append(f"<td{cls}>{text if column == 'model' else html.escape(text)}</td>")
        style = " class='new'" if row[-1] == "new" else ""
        body.append(f"<tr{style}>{''.join(cells)}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return ""
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def last_leaderboard(store: Store) -> dict[str, Any] | None:
    blob = _read(store, f"{PREFIX}/latest.json")
    try:
        latest = json.loads(blob) if blob is not None else None
    except ValueError:
        return None
    return latest if isinstance(latest, dict) and "models" in latest else None


def compared_with(latest: dict[str, Any] | None, models_now: set[str]) -> set[str]:
    """The models `new` is relative to: the last leaderboard's (none before it: nothing is
    new). A rebuild that finds the same models as the last one (the same change triggered
    twice) compares with what that one compared with, so its flags stay the same."""
    if latest is None:
        return models_now
    models = set(latest["models"])
    if models == models_now and "models_before" in latest:
        return set(latest["models_before"])
    return models


def update(store: Store) -> tuple[Board, str]:
    """Build the leaderboard of a store and write it under `leaderboard/`."""
    board = build(store, last_leaderboard(store))
    if board.table.empty:
        raise ConfigError(
            f"no run in {store.describe()} has results yet: run `evalfleet run` (or "
            "`evalfleet aggregate RUN_ID`) first"
        )
    board.files = render_files(board)
    for name, data in board.files.items():
        store.put(f"{PREFIX}/{name}", data)
    return board, f"{store.url.rstrip('/')}/{PREFIX}/"
