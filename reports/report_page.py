"""The run report as one HTML file: the run's identity, coverage, headline and judge tables
written here, the items browsed by `assets/report.js` from data embedded in the page. It
needs no server and nothing from the network, so it works from a local store, from a copy
downloaded from S3, or mailed."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from core.escape import html_text, json_for_html
from reports import formatting as fmt
from reports.report_data import ReportData

ASSETS = Path(__file__).resolve().parent / "assets"


def render(data: ReportData) -> str:
    meta = data.meta
    blocks = [
        _json_block("meta", {k: v for k, v in meta.items() if k != "comparisons"}),
        _json_block("index", data.index),
        *(_text_block(f"details-{i}", chunk) for i, chunk in enumerate(data.details)),
        *(_text_block(f"prompts-{i}", chunk) for i, chunk in enumerate(data.prompts)),
        *(_json_block(f"media-{sample}", parts) for sample, parts in data.media.items()),
    ]
    return "\n".join(
        [
            "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
            f"<title>evalfleet report {html_text(meta['run_id'])}</title>",
            f"<style>{(ASSETS / 'report.css').read_text()}</style></head><body>",
            _header(meta),
            _filters(),
            "<div id='main'><div id='list'><div class='pager'><span id='count'></span> ",
            "<button id='prev'>‹ previous</button><span id='page'></span>",
            "<button id='next'>next ›</button></div><table id='items'></table></div>",
            "<div id='detail'></div></div>",
            "<div id='overlay'><img id='overlay-img' alt='full size'></div>",
            *blocks,
            f"<script>{(ASSETS / 'report.js').read_text()}</script>",
            "</body></html>",
        ]
    )


def _json_block(name: str, value: Any) -> str:
    """Names, targets and responses are untrusted: the block holds no `<` to end it early."""
    return f"<script type='application/json' id='{html_text(name)}'>{json_for_html(value)}</script>"


def _text_block(name: str, gzipped: bytes) -> str:
    text = base64.b64encode(gzipped).decode()
    return f"<script type='text/plain' id='{html_text(name)}'>{text}</script>"


def _header(meta: dict[str, Any]) -> str:
    identity = [
        ("run", meta["run_id"]),
        ("results version", meta["version"]),
        ("scored", f"{meta.get('written_at') or '?'} by code {meta.get('code_version') or '?'}"),
        ("created", f"{meta.get('created_at')} by code {meta.get('run_code_version')}"),
        ("models", ", ".join(meta["models"])),
        ("judges", ", ".join(meta["judges"]) or "none"),
        ("max image side", meta["max_image_side"] or "original bytes"),
    ]
    for name, bench in meta["benchmarks"].items():
        options = ", ".join(
            f"{k}={v}" for k, v in bench["options"].items() if v not in (None, [], False)
        )
        identity.append(
            (
                name,
                f"{bench['samples']} samples from {bench['source']} at {bench['revision']}; "
                f"protocol {bench['protocol']}, {bench['epochs']} epochs"
                + (f"; {options}" if options else ""),
            )
        )
    parts = [
        f"<header><h1>evalfleet report: {html_text(meta['run_id'])}</h1>",
        _table(["", ""], identity, header=False),
        "</header><section><h2>Coverage</h2>",
        _table(
            ["model", "benchmark", "done", "failed", "expected", "coverage"],
            [
                (
                    c["model"],
                    c["benchmark"],
                    c["done"],
                    c["failed"],
                    c["expected"],
                    f"{100 * (c['done'] + c['failed']) / c['expected']:.1f}%"
                    if c["expected"]
                    else "-",
                )  # fmt: skip
                for c in meta["coverage"]
            ],
        ),
        "<h2>Headline</h2>",
        _table(
            ["model", "benchmark", "scoring", "metric", "value", "95% interval", "n"],
            [
                (
                    h["model"],
                    h["benchmark"],
                    h["scoring"],
                    h["metric"],
                    _number(h["value"]),
                    "" if h["low"] is None else f"{h['low']:.3f}–{h['high']:.3f}",
                    h["n"],
                )  # fmt: skip
                for h in meta["headline"]
            ],
        ),
    ]
    if meta["agreement"]:
        parts += [
            "<h2>Judge agreement</h2>",
            _table(
                ["benchmark", "rater a", "rater b", "answers", "agreement %", "Cohen's kappa"],
                [
                    (
                        a["benchmark"],
                        a["rater_a"],
                        a["rater_b"],
                        a["answers"],
                        _number(a["agreement_pct"], 1),
                        _number(a["kappa"]),
                    )  # fmt: skip
                    for a in meta["agreement"]
                ],
            ),
        ]
    for comparison in meta.get("comparisons") or []:
        parts.append(comparison_html(comparison))
    if meta.get("media_note"):
        parts.append(f"<p class='note'>{html_text(meta['media_note'])}</p>")
    parts.append(f"<h2>Items</h2><p class='note'>{meta['items']} answered items.</p></section>")
    return "\n".join(parts)


def comparison_html(comparison: dict[str, Any]) -> str:
    """A comparison (`reports.compare`) as a section: what differs, then the differences."""
    a, b = comparison["a"]["label"], comparison["b"]["label"]
    rows = [(d["field"], d["a"], d["b"]) for d in comparison["identity"]]
    parts = [
        f"<h2>Comparison: A {html_text(a)} vs B {html_text(b)}</h2>",
        "<h3>What differs</h3>",
        _table(["field", "A", "B"], rows) if rows else "<p class='note'>nothing: same identity</p>",
        "<h3>Per benchmark and scoring mode, on the items both hold</h3>",
        _table(
            [
                "model",
                "benchmark",
                "scoring",
                "A",
                "B",
                "A − B",
                "95% interval",
                "McNemar p",
                "right only in A",
                "right only in B",
                "units",
            ],
            [
                (
                    _models(r),
                    r["benchmark"],
                    r["scoring"],
                    fmt.share(r["a"]),
                    fmt.share(r["b"]),
                    fmt.signed(r["difference"]),
                    r["no_interval"] or f"{fmt.signed(r['low'])} to {fmt.signed(r['high'])}",
                    fmt.p_value(r["p"]),
                    _flips(r["flips_a"], r),
                    _flips(r["flips_b"], r),
                    f"{r['units']} ({r['only_in_a']} only in A, {r['only_in_b']} only in B)",
                )
                for r in comparison["rows"]
            ],
            raw_columns={8, 9},
        ),
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


def _flips(samples: list[str], row: dict[str, Any]) -> str:
    """Links to A's items that flipped (this is A's report)."""
    model = row["model_a"]
    links = [
        f"<a href='#benchmark={html_text(row['benchmark'])}&sample="
        f"{html_text(row['benchmark'])}/{html_text(s)}/{row['epoch']}/{html_text(model)}'>"
        f"{html_text(s)}</a>"
        for s in samples[:50]
    ]
    more = f" and {len(samples) - 50} more" if len(samples) > 50 else ""
    return f"{len(samples)}: " + " ".join(links) + more if samples else "0"


def _filters() -> str:
    status = [
        ("", "any verdict"),
        ("correct", "correct"),
        ("incorrect", "incorrect"),
        ("error", "call failed"),
        ("judged", "judged"),
        ("score-error", "score error"),
    ]
    return (
        "<div id='filters'>"
        "<label>model <select id='f-model'></select></label>"
        "<label>benchmark <select id='f-benchmark'></select></label>"
        "<label>scoring <select id='f-scoring'></select></label>"
        "<label>epoch <select id='f-epoch'></select></label>"
        "<label>verdict <select id='f-status'>"
        + "".join(f"<option value='{v}'>{t}</option>" for v, t in status)
        + "</select></label>"
        "<label><input type='checkbox' id='f-disagree'> models disagree</label>"
        "<label>text <input id='f-q' type='search' placeholder='prompt, response, answer, id'>"
        "</label></div>"
    )


def _table(
    columns: list[str],
    rows: list[tuple],
    *,
    header: bool = True,
    raw_columns: set[int] | None = None,
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
    return f"<table>{head if header else ''}{''.join(body)}</table>"


def _number(value: Any, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}f}"
