"""The folded sections under a run report's item list ("About this run"): the run's identity,
its coverage, every headline figure (each scoring mode, with n), every metric the aggregation
wrote (`reports.report_metrics`), judge agreement, and the comparisons kept for that results
version, each flipped sample linked to the one-sample view of both models. Long ids are
shortened on screen and whole on hover and when copied."""

from __future__ import annotations

import urllib.parse
from typing import Any

from evalfleet.core.escape import html_text
from evalfleet.reports import formatting as fmt
from evalfleet.reports.report_metrics import metric_cells


def clipped(text: Any, css: str = "clip") -> str:
    """Text shown with an ellipsis past its box: the whole of it stays in the page, so a
    hover shows it and a copy takes it."""
    whole = html_text(str(text))
    return f"<span class='{css}' title='{whole}'>{whole}</span>"


def about_sections(meta: dict[str, Any]) -> str:
    parts = ["<section id='about'><h2>About this run</h2>"]
    parts.append(_folded("Identity", _identity(meta)))
    parts.append(_folded(_coverage_title(meta), _coverage(meta)))
    parts.append(_folded("Every headline figure (each scoring mode)", _headline(meta)))
    if meta.get("metrics"):
        title = f"Every metric ({len(meta['metrics'])} figures: each scoring mode and group)"
        parts.append(_folded(title, _metrics(meta)))
    if meta["agreement"]:
        parts.append(_folded("Judge agreement", _agreement(meta)))
    for comparison in meta.get("comparisons") or []:
        title = f"Comparison with {comparison['b']['label']}"
        parts.append(_folded(title, comparison_html(comparison, meta["models"])))
    parts.append("</section>")
    return "\n".join(parts)


def _folded(title: str, body: str) -> str:
    return f"<details><summary>{html_text(title)}</summary>{body}</details>"


def _pairs(metadata: dict[str, str]) -> str:
    return ", ".join(f"{key}={value}" for key, value in metadata.items())


def _identity(meta: dict[str, Any]) -> str:
    rows = [
        ("run", meta["run_id"]),
        *([("tags", ", ".join(meta["tags"]))] if meta.get("tags") else []),
        *([("note", meta["note"])] if meta.get("note") else []),
        *([("metadata", _pairs(meta["metadata"]))] if meta.get("metadata") else []),
        ("results version", meta["version"]),
        ("scored", f"{meta.get('written_at') or '?'} by code {meta.get('code_version') or '?'}"),
        ("scorer", meta.get("scorer_sha256") or "?"),
        ("created", f"{meta.get('created_at')} by code {meta.get('run_code_version')}"),
        ("models", ", ".join(meta["models"])),
        ("judges", ", ".join(meta["judges"]) or "none"),
        ("max image side", meta["max_image_side"] or "original bytes"),
    ]
    for name, bench in meta["benchmarks"].items():
        options = ", ".join(
            f"{k}={v}" for k, v in bench["options"].items() if v not in (None, [], False)
        )
        rows.append(
            (
                name,
                f"{bench['samples']} samples from {bench['source']} at {bench['revision']}; "
                f"protocol {bench['protocol']}, {bench['epochs']} epochs"
                + (f"; {options}" if options else ""),
            )
        )
    if meta.get("media_note"):
        rows.append(("media", meta["media_note"]))
    return _table([], rows, css="identity")


def _coverage_title(meta: dict[str, Any]) -> str:
    done = sum(c["done"] for c in meta["coverage"])
    failed = sum(c["failed"] for c in meta["coverage"])
    expected = sum(c["expected"] for c in meta["coverage"])
    return f"Coverage: {done + failed} of {expected} answers ({failed} failed calls)"


def _coverage(meta: dict[str, Any]) -> str:
    rows = [
        (
            c["model"],
            c["benchmark"],
            c["done"],
            c["failed"],
            c["expected"],
            f"{100 * (c['done'] + c['failed']) / c['expected']:.1f}%" if c["expected"] else "—",
        )
        for c in meta["coverage"]
    ]
    return _table(["model", "benchmark", "done", "failed", "expected", "coverage"], rows)


def _headline(meta: dict[str, Any]) -> str:
    rows = [
        (
            h["model"],
            h["benchmark"],
            h["scoring"],
            h["metric"],
            fmt.share(h["value"]),
            fmt.interval(h["low"], h["high"]),
            h["n"],
            meta["benchmarks"][h["benchmark"]]["item_set"],
        )
        for h in meta["headline"]
    ]
    columns = ["model", "benchmark", "scoring", "metric", "value", "95% interval", "n", "items"]
    return _table(columns, rows)


def _metrics(meta: dict[str, Any]) -> str:
    columns = [
        "model",
        "benchmark",
        "scoring",
        "metric",
        "group",
        "value",
        "95% interval",
        "n",
        "note",
    ]
    return _table(columns, [metric_cells(row) for row in meta["metrics"]], css="metrics")


def _agreement(meta: dict[str, Any]) -> str:
    rows = [
        (
            a["benchmark"],
            a["rater_a"],
            a["rater_b"],
            a["answers"],
            "—" if a["agreement_pct"] is None else f"{a['agreement_pct']:.1f}",
            fmt.share(a["kappa"]),
        )
        for a in meta["agreement"]
    ]
    columns = ["benchmark", "rater a", "rater b", "answers", "agreement %", "Cohen's kappa"]
    return _table(columns, rows)


def comparison_html(comparison: dict[str, Any], models: list[str]) -> str:
    """A comparison (`reports.compare`): A and B named once, what differs, then per benchmark
    and scoring mode the figures on the items both hold, each flipped sample a link to the
    one-sample view of the models of this report that it compares."""
    a, b = comparison["a"]["label"], comparison["b"]["label"]
    rows = [(d["field"], d["a"], d["b"]) for d in comparison["identity"]]
    figures = [
        (
            r["benchmark"],
            r["scoring"],
            _models(r),
            fmt.share(r["a"]),
            fmt.share(r["b"]),
            fmt.signed(r["difference"]),
            r["no_interval"] or f"{fmt.signed(r['low'])} to {fmt.signed(r['high'])}",
            f"{fmt.p_value(r['p'])} ({r.get('test', 'exact McNemar')})",
            _flips(r["flips_a"], r, models),
            _flips(r["flips_b"], r, models),
            f"{r['units']} ({r['only_in_a']} only in A, {r['only_in_b']} only in B)",
        )
        for r in comparison["rows"]
    ]
    columns = [
        "benchmark",
        "scoring",
        "model",
        "A",
        "B",
        "A − B",
        "95% interval",
        "p (test)",
        "items right in A, wrong in B (count: sample ids)",
        "items right in B, wrong in A (count: sample ids)",
        "units",
    ]
    parts = [
        f"<p class='legend'>A: {clipped(a, 'clip wide')} · B: {clipped(b, 'clip wide')}</p>",
        "<h3>What differs</h3>",
        _table(["field", "A", "B"], rows) if rows else "<p class='note'>nothing: same identity</p>",
        "<h3>Per benchmark and scoring mode, on the items both hold</h3>",
        _table(columns, figures, raw_columns={8, 9}),
        *(
            f"<p class='note'>{html_text(r['benchmark'])} ({html_text(r['scoring'])}): "
            f"{html_text(r['what_it_would_take'])}.</p>"
            for r in comparison["rows"]
        ),
        *(
            f"<p class='note'>No shared items on {html_text(u['benchmark'])} "
            f"({html_text(u['scoring'])}): A on {html_text(u['items_a'])}, B on "
            f"{html_text(u['items_b'])}.</p>"
            for u in comparison.get("apart", [])
        ),
        f"<p class='note'>{html_text(comparison['note'])}</p>",
    ]
    return "\n".join(parts)


def _models(row: dict[str, Any]) -> str:
    same = row["model_a"] == row["model_b"]
    return row["model_a"] if same else f"{row['model_a']} / {row['model_b']}"


def flip_link(row: dict[str, Any], sample: str, models: list[str]) -> str:
    """The one-sample view of a flipped sample, with both models where this report holds them
    (two models of one run), at the epoch the flip was counted."""
    shown = [m for m in dict.fromkeys((row["model_a"], row["model_b"])) if m in models]
    query = [
        ("one", f"{row['benchmark']}/{sample}"),
        ("models", ",".join(shown)),
        ("epoch", str(row["epoch"])),
    ]
    return "#" + "&".join(f"{k}={urllib.parse.quote(v, safe='/,')}" for k, v in query)


def _flips(samples: list[str], row: dict[str, Any], models: list[str]) -> str:
    links = [
        f"<a class='flip' href='{html_text(flip_link(row, s, models))}'>{html_text(s)}</a>"
        for s in samples[:50]
    ]
    more = f" and {len(samples) - 50} more" if len(samples) > 50 else ""
    return f"{len(samples)}: " + " ".join(links) + more if samples else "0"


def _table(
    columns: list[str], rows: list[tuple], *, raw_columns: set[int] | None = None, css: str = ""
) -> str:
    raw_columns = raw_columns or set()
    head = "<tr>" + "".join(f"<th>{html_text(str(c))}</th>" for c in columns) + "</tr>"
    body = []
    for row in rows:
        cells = []
        for i, value in enumerate(row):
            text = value if i in raw_columns else html_text(value)
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            cells.append(f"<td{' class=num' if numeric else ''}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    klass = f" class='{css}'" if css else ""
    return f"<table{klass}>{head if columns else ''}{''.join(body)}</table>"
