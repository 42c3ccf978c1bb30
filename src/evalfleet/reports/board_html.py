"""The leaderboard's static HTML page (`leaderboard/index.html`), one file that stands alone:
a contents list and a search box at the top, then one section per benchmark with its tables
first and its plots folded under them, then the sections that follow the tables (what it
would take, unreadable runs, history, drift). `assets/board.js` sorts a table by a clicked
header and filters every table's rows by model or run id, the state kept in the URL's hash."""

from __future__ import annotations

import base64
import io
import re
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from evalfleet.core.escape import html_text
from evalfleet.reports import board_cells as shared

ASSETS = Path(__file__).resolve().parent / "assets"
HTML_RANKED = [*shared.RANKED, *shared.SPENT, "run"]
HTML_PARTIAL = [*shared.PARTIAL, "run"]
LEFT = ("model", "run")  # text columns, aligned left


def html_page(board, files: dict[str, bytes]) -> str:
    """The page; `files` holds the plots (embedded as data URIs)."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    sections: list[tuple[str, str, str]] = []  # (id, title, html)
    if board.new:
        sections.append(("new", "New models", _list("New models", board.new)))
    tables = _benchmark_tables(board.table)
    for benchmark, parts in tables.items():
        body = "".join(parts) + _plots(_benchmark_plots(files, benchmark))
        sections.append((_anchor(benchmark), benchmark, f"<h2>{html_text(benchmark)}</h2>{body}"))
    if board.close_calls:
        sections.append(
            ("close", "What it would take", _list("What it would take", board.close_calls))
        )
    if board.damaged:
        sections.append(
            (
                "damaged",
                "Runs left out, and why",
                _list("Runs left out, and why", board.damaged),
            )
        )
    history = [name for name in sorted(files) if name.startswith("history--")]
    if history:  # each model over time; `evalfleet drift` says what changed
        plots = _plots({name: files[name] for name in history})
        sections.append(("history", "History", f"<h2>History</h2>{plots}"))
    drift = drift_section(board.drift_csv)
    if drift:
        sections.append(("drift", "Drift", drift))
    contents = "".join(
        f"<li><a href='#{key}'>{html_text(title)}</a></li>" for key, title, _ in sections
    )
    return "\n".join(
        [
            "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
            "<title>evalfleet leaderboard</title>",
            f"<style>{(ASSETS / 'board.css').read_text()}</style></head><body>",
            f"<h1>evalfleet leaderboard</h1><p class='legend'>{html_text(stamp)}. "
            f"{html_text(shared.legend(board))} Each model links to its answers in its run's "
            "report, each run id to the run's report. Click a column's name to sort by it.</p>",
            "<div id='top'><nav id='contents' aria-label='contents'><ul>"
            f"{contents}</ul></nav><label>Search models and runs <input id='q' type='search' "
            "placeholder='model or run id' aria-label='search models and runs'></label> "
            "<span id='count'></span></div>",
            *(f"<section id='{key}'>{body}</section>" for key, _, body in sections),
            f"<script>{(ASSETS / 'board.js').read_text()}</script>",
            "</body></html>",
        ]
    )


def _anchor(benchmark: str) -> str:
    return "b-" + re.sub(r"[^A-Za-z0-9_-]", "-", benchmark)


def _list(title: str, lines: list[str]) -> str:
    items = "".join(f"<li>{html_text(line)}</li>" for line in lines)
    return f"<h2>{html_text(title)}</h2><ul>{items}</ul>"


def _benchmark_tables(frame: pd.DataFrame) -> dict[str, list[str]]:
    """Each benchmark's tables: per scoring mode a heading, then per item set its items,
    its ranked table and its partial rows apart."""
    found: dict[str, list[str]] = {}
    section = None
    for benchmark, scoring, label, complete, partial in shared.tables(frame):
        parts = found.setdefault(benchmark, [])
        if (benchmark, scoring) != section:
            section = (benchmark, scoring)
            parts.append(f"<h3>{html_text(scoring)}</h3>")
        parts.append(f"<p class='items'>Items: {html_text(label)}</p>")
        if not complete.empty:
            parts.append(_table(complete, HTML_RANKED))
        if not partial.empty:
            parts.append("<p>Partial results, not ranked:</p>")
            parts.append(_table(partial, HTML_PARTIAL, "partial"))
    return found


def _table(part: pd.DataFrame, columns: list[str], css: str = "") -> str:
    head = "".join(
        f"<th scope='col' tabindex='0'{' class=l' if c in LEFT else ''}>{html_text(c)}</th>"
        for c in columns
    )
    body = []
    for row in part.itertuples(index=False):
        shown = shared.cells(row)
        tds = []
        for column in columns:
            text = html_text(shown.get(column, row.run_id))
            if column == "model":
                link = html_text(shared.report_link(row))
                tds.append(f"<td class='l'><a href='{link}'>{text}</a></td>")
            elif column == "run":
                link = html_text(shared.run_link(row))
                tds.append(f"<td class='l run'><a href='{link}'>{text}</a></td>")
            elif column == "coverage":  # sorted by the share done
                share = int(row.done) / int(row.expected) if int(row.expected) else 0
                tds.append(f"<td data-v='{share:.6f}'>{text}</td>")
            else:
                tds.append(f"<td>{text}</td>")
        style = " ".join(c for c in (css, "new" if row.new else "") if c)
        body.append(
            f"<tr class='{style}'>{''.join(tds)}</tr>" if style else f"<tr>{''.join(tds)}</tr>"
        )
    return (
        f"<table class='board'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _benchmark_plots(files: dict[str, bytes], benchmark: str) -> dict[str, bytes]:
    from evalfleet.reports.plots import PLOT_STEMS

    return {
        name: files[name]
        for name in sorted(files)
        if name.endswith(".png")
        and name.startswith(PLOT_STEMS)
        and name.split("--")[1:2] == [benchmark]
    }


def _plots(plots: dict[str, bytes]) -> str:
    """The plots folded in one closed `<details>`; nothing when there are none."""
    if not plots:
        return ""
    images = "".join(
        f"<img alt='{html_text(name)}' src='data:image/png;base64,"
        f"{base64.b64encode(data).decode()}'>"
        for name, data in plots.items()
    )
    word = "plot" if len(plots) == 1 else "plots"
    return f"<details class='plots'><summary>{len(plots)} {word}</summary>{images}</details>"


DRIFT_SHOWN = ["model", "benchmark", "scoring", "run_before", "run_after", "before", "after"]


def drift_section(data: bytes | None) -> str:
    """The page's "Drift" section from `leaderboard/drift.csv` (`evalfleet drift`), its
    flagged rows marked; empty when drift has not been run."""
    if data is None:
        return ""
    try:
        table = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError):
        table = pd.DataFrame()
    head = "<h2>Drift</h2>"
    if table.empty or not set(DRIFT_SHOWN) <= set(table.columns):
        return f"{head}<p>leaderboard/drift.csv cannot be read: run `evalfleet drift` again.</p>"
    flagged = table.get("flagged", pd.Series(["False"] * len(table))).str.lower() == "true"
    columns = [*DRIFT_SHOWN, "diff", "95% interval", "p", "version", "judge", "flagged", "reason"]
    rows = []
    for (_, row), mark in zip(table.iterrows(), flagged, strict=True):
        shown = {c: row[c] for c in DRIFT_SHOWN}
        shown["diff"] = row.get("diff", "")
        low, high = row.get("low", ""), row.get("high", "")
        shown["95% interval"] = f"[{low}, {high}]" if low and high else ""
        shown["p"] = row.get("p", "")
        shown["version"] = _drift_change(row, "version")
        shown["judge"] = _drift_change(row, "judge")
        shown["flagged"] = "flagged" if mark else ""
        shown["reason"] = row.get("reason", "")
        tds = "".join(
            f"<td class='l'>{html_text(shown[c])}</td>"
            if c in ("model", "reason")
            else f"<td>{html_text(shown[c])}</td>"
            for c in columns
        )
        rows.append(f"<tr class='flagged'>{tds}</tr>" if mark else f"<tr>{tds}</tr>")
    count = int(flagged.sum())
    ths = "".join(f"<th scope='col' tabindex='0'>{html_text(c)}</th>" for c in columns)
    note = (
        f"<p>Each model's latest run against its previous one (`evalfleet drift`); "
        f"{count} of {len(table)} rows flagged.</p>"
    )
    table = f"<thead><tr>{ths}</tr></thead><tbody>{''.join(rows)}</tbody>"
    return f"{head}{note}<table class='board'>{table}</table>"


def _drift_change(row: pd.Series, what: str) -> str:
    before, after = row.get(f"{what}_before", ""), row.get(f"{what}_after", "")
    if str(row.get(f"{what}_changed", "")).lower() == "true":
        return f"{before} → {after}"
    return "same" if before or after else ""
