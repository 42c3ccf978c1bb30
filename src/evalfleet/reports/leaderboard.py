"""The leaderboard: every run of a store side by side, like with like.

Rows are (model, benchmark, scoring mode, item set): a result counts only beside results on the
same items (`reports.item_sets`). For each, the latest complete result (every answer the run
asked has a record, done or failed) is kept; a key no run completed keeps its latest partial
result, which stands in a table of its own, not ranked. Each row has the benchmark's headline
metric with its 95 % interval (`evalfleet.metrics.intervals`: Wilson for a share of binary items, a
bootstrap over units otherwise), coverage, mean output tokens, cost and cost per correct answer;
complete rows have a rank and a band by paired significance (`evalfleet.reports.ranks`), the test
`compare` prints. A model that was not on the previous leaderboard is flagged `new`.

Written under `{store}/leaderboard/`: `leaderboard.parquet`, `.csv`, `.md`, the plots
(`evalfleet.reports.plots`), `index.html` and `latest.json`. A run whose files are damaged is shown
apart, with the line that names the file and its repair.

After a run, `update(store, run_id)` reads only that run's tables: the other runs' rows come
from `rows.json` (`reports.board_cache`), and only the plots whose rows changed are drawn
again. Without a run (`evalfleet leaderboard`) it reads the whole store.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from evalfleet.benchmarks import registry
from evalfleet.core.types import ConfigError
from evalfleet.metrics.intervals import UnitValues, paired
from evalfleet.metrics.paired import paired_test
from evalfleet.reports import board_cache
from evalfleet.reports.board_cells import tables
from evalfleet.reports.board_rows import StoreRows
from evalfleet.reports.drift import DRIFT_KEY
from evalfleet.reports.history import points
from evalfleet.reports.history_plots import history_plots
from evalfleet.reports.power import what_it_would_take
from evalfleet.reports.ranks import rank_rows, row_units
from evalfleet.storage.base import Store

PREFIX = "leaderboard"
COLUMNS = [
    "benchmark",
    "scoring",
    "item_set",
    "items",
    "rank",
    "band",
    "rank_unadjusted",
    "model",
    "metric",
    "value",
    "ci95_low",
    "ci95_high",
    "interval_method",
    "units",
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
KEY = ["model", "benchmark", "scoring", "item_set"]


@dataclass
class Board:
    table: pd.DataFrame
    new: list[str]  # one line per model new since the last leaderboard
    runs: int  # runs with results
    files: dict[str, bytes]
    models_before: list[str] = field(default_factory=list)  # what `new` was relative to
    damaged: list[str] = field(default_factory=list)  # one line per run that cannot be read
    close_calls: list[str] = field(default_factory=list)  # neighbours sharing a band
    drift_csv: bytes | None = None  # leaderboard/drift.csv as `evalfleet drift` last wrote it


def build(
    store: Store, latest: dict[str, Any] | None = None, read: StoreRows | None = None
) -> Board:
    """The leaderboard of every run in a store; `latest` is the last one's latest.json, and
    `read` what its runs hold (read from the store when not given)."""
    if read is None:
        read = board_cache.store_rows(board_cache.read_all(store))
    if not read.rows:
        return Board(pd.DataFrame(columns=COLUMNS), [], read.runs, {}, damaged=read.damaged)
    frame = pd.DataFrame(read.rows)
    # the newest run's complete result per key (by when the run began, not when its results
    # were last written); the newest partial one where none is complete
    newest = ["complete", "run_created_at", "written_at"]
    frame = frame.sort_values(newest, ascending=[False] * 3, kind="stable")
    frame = frame.drop_duplicates(KEY, keep="first").reset_index(drop=True)
    intervals = [read.units[row_units(r)].interval() for r in frame.itertuples(index=False)]
    frame["ci95_low"] = [i.low if i else None for i in intervals]
    frame["ci95_high"] = [i.high if i else None for i in intervals]
    frame["interval_method"] = [i.method if i else None for i in intervals]
    frame["coverage"] = frame["done"].astype(str) + "/" + frame["expected"].astype(str)
    frame = rank_rows(frame, read.units)
    models_before = compared_with(latest, set(frame["model"]))
    frame["new"] = ~frame["model"].isin(models_before)
    frame = _ordered(frame)
    primary = frame[frame.scoring == frame.benchmark.map(_primary_scoring)]
    new = [_new_line(row, primary) for row in primary[primary.new].itertuples(index=False)]
    table = frame[COLUMNS].reset_index(drop=True)
    close = close_calls(primary, read.units)
    return Board(table, new, read.runs, {}, sorted(models_before), read.damaged, close)


def _ordered(frame: pd.DataFrame) -> pd.DataFrame:
    """Benchmarks in registry order, scoring modes headline first, each benchmark's full
    item sets first (most samples first), complete rows by rank, then the partial ones."""
    order = {name: i for i, name in enumerate(registry.names())}
    frame = frame.assign(
        _b=frame["benchmark"].map(order),
        _s=[_scoring_order(b, s) for b, s in zip(frame.benchmark, frame.scoring, strict=True)],
        _f=~frame["full_set"],
        _n=-frame.groupby("item_set")["expected"].transform("max"),
        _p=~frame["complete"],
        _r=frame["rank"].fillna(0),
        _v=-frame["value"].fillna(-1.0),
    )
    keys = ["_b", "_s", "_f", "_n", "item_set", "_p", "_r", "_v", "model"]
    return frame.sort_values(keys, kind="stable").drop(columns=[k for k in keys if k[0] == "_"])


def _new_line(row, primary: pd.DataFrame) -> str:
    where = f"{row.benchmark} ({row.scoring}; {row.items})"
    if not row.complete:
        return f"{row.model} is new: a partial result ({row.coverage}) on {where}, not ranked"
    peers = (
        (primary.benchmark == row.benchmark) & (primary.item_set == row.item_set) & primary.complete
    )
    return f"{row.model} is new: rank {row.rank} of {int(peers.sum())} on {where}"


def new_lines_of_run(board: Board, run_id: str) -> list[str]:
    """The board's "is new" lines about the models run `run_id` holds: what that run's log
    says (a model stays new on later boards until another model comes; the later runs' logs
    do not say it again)."""
    table = board.table
    mine = set(table.loc[table["run_id"] == run_id, "model"]) if not table.empty else set()
    return [line for line in board.new if line.split(" is new: ", 1)[0] in mine]


def close_calls(primary: pd.DataFrame, units: dict[tuple, UnitValues]) -> list[str]:
    """For each pair of neighbouring complete rows that share a band: what it would take to
    tell them apart (`evalfleet.reports.power`)."""
    lines = []
    for benchmark, scoring, label, complete, _ in tables(primary):
        rows = list(complete.itertuples(index=False))
        for upper, lower in zip(rows, rows[1:], strict=False):
            if upper.band != lower.band:
                continue
            a, b = units[row_units(upper)], units[row_units(lower)]
            found = paired(a, b)
            if found is None:
                continue
            cost = _cost_per_unit(upper) + _cost_per_unit(lower)
            words = what_it_would_take(a, b, found, benchmark, cost, paired_test(a, b)).words
            lines.append(
                f"{benchmark} ({scoring}; {label}): {upper.model} vs {lower.model}: {words}"
            )
    return lines


def _cost_per_unit(row) -> float:
    return float(row.cost_usd) / row.units if row.units else 0.0


def _primary_scoring(benchmark: str) -> str:
    return registry.get(benchmark).scorings[0]


def _scoring_order(benchmark: str, scoring: str) -> int:
    bench = registry.get(benchmark)
    names = [*bench.scorings, *(bench.judge.scorings if bench.judge else ())]
    return names.index(scoring) if scoring in names else len(names)


def render_files(
    board: Board, kept: dict[str, bytes] | None = None, history: dict[str, bytes] | None = None
) -> dict[str, bytes]:
    """The leaderboard's files; `kept` are plots already drawn, of groups whose rows did not
    change (the others are drawn); `history` the history plots (`reports.history_plots`)."""
    from evalfleet.reports.board_html import html_page
    from evalfleet.reports.board_page import markdown_page

    table = board.table
    files = {
        "leaderboard.parquet": _parquet(table),
        "leaderboard.csv": table.to_csv(index=False).encode(),
        "leaderboard.md": markdown_page(board).encode(),
    }
    files.update(_plots(primary_rows(table), kept or {}))
    files.update(history or {})
    files["index.html"] = html_page(board, files).encode()
    files["latest.json"] = json.dumps(
        {
            "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "models": sorted(set(table["model"])),
            "runs": board.runs,
            "new": board.new,
            "models_before": board.models_before,
            "damaged": board.damaged,
        },
        indent=2,
    ).encode()
    return files


def primary_rows(table: pd.DataFrame) -> pd.DataFrame:
    return table[table.scoring == table.benchmark.map(_primary_scoring)]


def _plots(primary: pd.DataFrame, kept: dict[str, bytes]) -> dict[str, bytes]:
    """Each group's plots: those in `kept` as they are, the rest drawn."""
    from evalfleet.reports.plots import PLOT_STEMS, plots

    files: dict[str, bytes] = {}
    redraw = []
    for (benchmark, item_set), part in primary.groupby(["benchmark", "item_set"], sort=False):
        names = [f"{stem}--{benchmark}--{item_set}.png" for stem in PLOT_STEMS]
        if all(name in kept for name in names):
            files.update({name: kept[name] for name in names})
        else:
            redraw.append(part)
    if redraw:
        files.update(plots(pd.concat(redraw)))
    return files


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def last_leaderboard(store: Store) -> dict[str, Any] | None:
    try:
        blob = store.get(f"{PREFIX}/latest.json")
        latest = json.loads(blob) if blob is not None else None
    except ValueError:  # damaged: the next build writes it again; nothing is new meanwhile
        return None
    return latest if isinstance(latest, dict) and isinstance(latest.get("models"), list) else None


def compared_with(latest: dict[str, Any] | None, models_now: set[str]) -> set[str]:
    """The models `new` is relative to: the last leaderboard's (none before it: nothing is
    new). A rebuild that finds the same models as the last one (the same change triggered
    twice) compares with what that one compared with, so its flags stay the same."""
    if latest is None:
        return models_now
    models = set(latest["models"])
    if models == models_now and isinstance(latest.get("models_before"), list):
        return set(latest["models_before"])
    return models


def update(store: Store, run_id: str | None = None) -> tuple[Board, str]:
    """Build the leaderboard of a store and write it under `leaderboard/`: after run `run_id`
    wrote its results, from the kept rows of the others and its own (see the module's
    docstring); without one, from the whole store. One rebuild of a local store at a time
    (`_one_at_a_time`)."""
    with _one_at_a_time(store):
        return _update(store, run_id)


@contextlib.contextmanager
def _one_at_a_time(store: Store) -> Iterator[None]:
    """Hold a lock on a local store's folder (flock of the directory: no file is made) while
    a rebuild reads the store and writes the board. Two rebuilds side by side (a run's, from
    the stack's launcher, and another run's, from the served deployment) each wrote what it
    had read, and the one that read first and wrote last left the other run off the board
    until the next rebuild. The one that takes the lock last reads what the others wrote. An
    S3 store has no such lock: the last rebuild to write wins there."""
    from evalfleet.storage.local import LocalStore

    if not isinstance(store, LocalStore) or not os.path.isdir(store.root):
        yield
        return
    folder = os.open(store.root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        yield
    finally:
        os.close(folder)  # the lock goes with it


def _update(store: Store, run_id: str | None) -> tuple[Board, str]:
    cache = board_cache.load(store, PREFIX) if run_id is not None else None
    if cache is None:
        cache = board_cache.read_all(store)
    else:
        cache = board_cache.runs_with(store, cache, run_id)  # type: ignore[arg-type]
    found = board_cache.store_rows(cache)
    board = build(store, last_leaderboard(store), found)
    if board.table.empty and not board.damaged:
        raise ConfigError(
            f"no run in {store.describe()} has results yet: run `evalfleet run` (or "
            "`evalfleet aggregate RUN_ID`) first"
        )
    digests = board_cache.plot_digests(primary_rows(board.table))
    kept = _unchanged_plots(store, cache.plots, digests) if run_id is not None else {}
    history = history_plots(points(store, found=found, versions=False))
    board.drift_csv = store.get(DRIFT_KEY)
    board.files = render_files(board, kept, history)
    for name, data in board.files.items():
        store.put(f"{PREFIX}/{name}", data)
    cache.plots = digests
    board_cache.save(store, PREFIX, cache)
    from evalfleet.reports.store_index import write_index

    write_index(store)  # leaderboard/runs.html: every run of the store, its state, its report
    return board, f"{store.url.rstrip('/')}/{PREFIX}/"


def _unchanged_plots(store: Store, before: dict[str, str], now: dict[str, str]) -> dict[str, bytes]:
    """The stored plots of the groups whose rows are as they were when they were drawn."""
    from evalfleet.reports.plots import PLOT_STEMS

    kept: dict[str, bytes] = {}
    for group, digest in now.items():
        if before.get(group) != digest:
            continue
        for stem in PLOT_STEMS:
            blob = store.get(f"{PREFIX}/{stem}--{group}.png")
            if blob is not None:
                kept[f"{stem}--{group}.png"] = blob
    return kept
