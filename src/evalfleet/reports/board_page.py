"""The leaderboard as people read it: one Markdown document (the `.md` file, the terminal, the
Prefect artifact) and one static HTML page, laid out alike and written with the same cells
(`reports.formatting`): per benchmark and scoring mode, one table per item set, its complete
rows ranked, its partial rows apart and not ranked."""

from __future__ import annotations

import base64
import io
import urllib.parse
from datetime import UTC, datetime

import pandas as pd

from evalfleet.core.escape import html_text
from evalfleet.reports import formatting as fmt

RANKED = ["rank", "band", "model", "value", "95% interval", "coverage", "errors"]
SPENT = ["tokens/answer", "$/correct", "new"]
PARTIAL = ["model", "value", "95% interval", "coverage", "errors", *SPENT]
METHODS = "docs/results.md, “Intervals and ranks”"  # where the table of methods is


def tables(frame: pd.DataFrame):
    """(benchmark, scoring, item set label, complete rows, partial rows), in page order."""
    for (benchmark, scoring, _), part in frame.groupby(
        ["benchmark", "scoring", "item_set"], sort=False
    ):
        yield (
            benchmark,
            scoring,
            part["items"].iloc[0],
            part[part["complete"]],
            part[~part["complete"]],
        )


def legend(board, unadjusted: bool = False) -> str:
    if unadjusted:
        family = (
            "each pair at an unadjusted 5 % (no correction for the table's many pairs: with "
            "8 equal models some pair differs by chance 4 times in 10); rows share a band as "
            "the adjusted ranks do"
        )
    else:
        family = (
            "at 5 % after Holm's adjustment across the table's pairs, so equal models are told "
            "apart by chance at most 1 time in 20 (`evalfleet leaderboard --unadjusted`, or "
            "the `rank_unadjusted` column: each pair at an unadjusted 5 %); rows that cannot "
            "be told apart share a band"
        )
    return (
        f"{board.runs} runs. A value is the benchmark's headline metric, a fraction of 1, with "
        f"its 95 % interval (methods: {METHODS}); “—, one unit”: one unit has no interval. "
        "Rows are compared only on the same items: each table is one item set. A rank is 1 "
        "plus the number of rows significantly better by the paired test `evalfleet compare` "
        "prints (exact McNemar on independent binary items, the clustered McNemar on grouped "
        f"units), {family}. Errors marked {fmt.MARK}: more than {fmt.ERROR_MARK:.0%} of the "
        "row's calls failed (they count as wrong). Partial results are not ranked."
    )


def cells(row, unadjusted: bool = False) -> dict[str, str]:
    """One row's cells, as both pages write them."""
    rank = row.rank_unadjusted if unadjusted else row.rank
    units = getattr(row, "units", None)
    interval = fmt.interval(row.ci95_low, row.ci95_high)
    return {
        "rank": "" if pd.isna(rank) else str(int(rank)),
        "band": "" if pd.isna(row.band) or unadjusted else str(int(row.band)),
        "model": row.model,
        "value": fmt.share(row.value),
        "95% interval": "—, one unit" if units == 1 else interval,
        "coverage": row.coverage,
        "errors": fmt.errors(int(row.errors), int(row.done) + int(row.errors)),
        "tokens/answer": fmt.tokens(row.mean_output_tokens),
        "$/correct": fmt.money(row.cost_per_correct_usd),
        "new": "new" if row.new else "",
    }


def markdown_page(board, unadjusted: bool = False) -> str:
    """The Markdown page; `unadjusted`: ranked without Holm's adjustment (band left blank)."""
    lines = ["# evalfleet leaderboard", "", legend(board, unadjusted), ""]
    if board.new:
        lines += ["## New models", "", *(f"- {fmt.md_text(n)}" for n in board.new), ""]
    section = None
    for benchmark, scoring, label, complete, partial in tables(board.table):
        if (benchmark, scoring) != section:
            section = (benchmark, scoring)
            lines += [f"## {fmt.md_text(benchmark)} — {fmt.md_text(scoring)}", ""]
        lines += [f"Items: {fmt.md_text(label)}", ""]
        if not complete.empty:
            lines += [_md_table(complete, [*RANKED, *SPENT], unadjusted), ""]
        if not partial.empty:
            lines += ["Partial results, not ranked:", "", _md_table(partial, PARTIAL), ""]
    if board.close_calls:
        lines += ["## What it would take", ""]
        lines += [f"- {fmt.md_text(line)}" for line in board.close_calls] + [""]
    if board.damaged:
        lines += ["## Runs that cannot be read", ""]
        lines += [f"- {fmt.md_text(line)}" for line in board.damaged] + [""]
    return "\n".join(lines)


def _md_table(part: pd.DataFrame, columns: list[str], unadjusted: bool = False) -> str:
    rows = [cells(r, unadjusted) for r in part.itertuples(index=False)]
    head = "| " + " | ".join(columns) + " |"
    rule = "|" + "|".join(":---" if c == "model" else "---:" for c in columns) + "|"
    body = ["| " + " | ".join(fmt.md_text(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join([head, rule, *body])


def html_page(board, files: dict[str, bytes]) -> str:
    """One static page: the tables and the plots (embedded, so the file stands alone)."""
    from evalfleet.reports.plots import PLOT_STEMS

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>evalfleet leaderboard</title>",
        "<style>body{font-family:sans-serif;margin:2em;color:#222;max-width:72em}"
        "table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ccc;"
        "padding:3px 8px;text-align:right}th{background:#f0f0f0}td.l{text-align:left}"
        "img{max-width:100%;border:1px solid #ddd;margin:1em 0;display:block}"
        ".new{background:#fff4c2}.flagged{background:#fde2e1}.items{color:#555}"
        ".partial td{color:#777}</style>"
        "</head><body>",
        f"<h1>evalfleet leaderboard</h1><p>{html_text(stamp)}. {html_text(legend(board))}"
        " Each model links to its answers in its run's report.</p>",
    ]
    if board.new:
        items = "".join(f"<li>{html_text(line)}</li>" for line in board.new)
        parts.append(f"<h2>New models</h2><ul>{items}</ul>")
    section = None
    for benchmark, scoring, label, complete, partial in tables(board.table):
        if (benchmark, scoring) != section:
            section = (benchmark, scoring)
            parts.append(f"<h2>{html_text(benchmark)} — {html_text(scoring)}</h2>")
        parts.append(f"<p class='items'>Items: {html_text(label)}</p>")
        if not complete.empty:
            parts.append(_html_table(complete, [*RANKED, *SPENT]))
        if not partial.empty:
            parts.append("<p>Partial results, not ranked:</p>")
            parts.append(_html_table(partial, PARTIAL, "partial"))
    if board.close_calls:
        items = "".join(f"<li>{html_text(line)}</li>" for line in board.close_calls)
        parts.append(f"<h2>What it would take</h2><ul>{items}</ul>")
    if board.damaged:
        items = "".join(f"<li>{html_text(line)}</li>" for line in board.damaged)
        parts.append(f"<h2>Runs that cannot be read</h2><ul>{items}</ul>")
    for name in sorted(files):
        if name.endswith(".png") and name.startswith(PLOT_STEMS):
            data = base64.b64encode(files[name]).decode()
            parts.append(f"<img alt='{html_text(name)}' src='data:image/png;base64,{data}'>")
    history = [name for name in sorted(files) if name.startswith("history--")]
    if history:  # each model over time; `evalfleet drift` says what changed
        parts.append("<h2>History</h2>")
    for name in history:
        data = base64.b64encode(files[name]).decode()
        parts.append(f"<img alt='{html_text(name)}' src='data:image/png;base64,{data}'>")
    parts.append(drift_section(board.drift_csv))
    parts.append("</body></html>")
    return "\n".join(parts)


def _html_table(part: pd.DataFrame, columns: list[str], css: str = "") -> str:
    head = "".join(f"<th>{html_text(c)}</th>" for c in columns)
    body = []
    for row in part.itertuples(index=False):
        shown = cells(row)
        tds = []
        for column in columns:
            text = html_text(shown[column])
            if column == "model":
                link = html_text(report_link(row))
                tds.append(f"<td class='l'><a href='{link}'>{text}</a></td>")
            else:
                tds.append(f"<td>{text}</td>")
        style = " ".join(c for c in (css, "new" if row.new else "") if c)
        body.append(
            f"<tr class='{style}'>{''.join(tds)}</tr>" if style else f"<tr>{''.join(tds)}</tr>"
        )
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def report_link(row) -> str:
    """From `{store}/leaderboard/index.html` to the row's items in its run's report."""
    query = urllib.parse.urlencode(
        {"model": row.model, "benchmark": row.benchmark, "scoring": row.scoring},
        quote_via=urllib.parse.quote,
    )
    run = urllib.parse.quote(row.run_id)
    return f"../{run}/results/{urllib.parse.quote(row.version)}/report.html#{query}"


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
    ths = "".join(f"<th>{html_text(c)}</th>" for c in columns)
    note = (
        f"<p>Each model's latest run against its previous one (`evalfleet drift`); "
        f"{count} of {len(table)} rows flagged.</p>"
    )
    return f"{head}{note}<table><tr>{ths}</tr>{''.join(rows)}</table>"


def _drift_change(row: pd.Series, what: str) -> str:
    before, after = row.get(f"{what}_before", ""), row.get(f"{what}_after", "")
    if str(row.get(f"{what}_changed", "")).lower() == "true":
        return f"{before} → {after}"
    return "same" if before or after else ""
