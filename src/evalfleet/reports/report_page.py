"""The run report as one HTML file. It opens on the answers: a bar naming the run, the headline
(model × benchmark, value and 95 % interval), the filters and the item list beside the item
open; the run's identity, coverage, all headline figures, judge agreement and comparisons sit
folded under "About this run" (`reports.report_about`). The list, the item and the one-sample
view are drawn by the scripts of `assets/` from data embedded in the page. It needs no server
and nothing from the network, so it works from a local store, from a copy downloaded from S3,
or mailed; the formulas of its texts are drawn by MathJax, embedded when they hold any
(`reports.mathjax`). A paged report (`render_paged`, above 20,000 items) embeds only `meta`:
its items are read from the folder beside it, by scripts, which a page opened from disk may
load."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from evalfleet.core.escape import html_text, json_for_html
from evalfleet.reports.mathjax import STYLE, bundle, chunks_have_math
from evalfleet.reports.report_about import about_sections, clipped
from evalfleet.reports.report_data import ReportData

ASSETS = Path(__file__).resolve().parent / "assets"
# One script, in this order: each file uses what the ones before it define.
SCRIPTS = (
    "format.js",
    "data.js",
    "state.js",
    "headline.js",
    "list.js",
    "where.js",
    "search.js",
    "markdown.js",
    "item.js",
    "sample.js",
)
BOOT = "main.js"


def render(data: ReportData) -> str:
    meta = data.meta
    blocks = [
        _json_block("meta", {k: v for k, v in meta.items() if k != "comparisons"}),
        _json_block("index", data.index),
        *(_text_block(f"details-{i}", chunk) for i, chunk in enumerate(data.details)),
        *(_text_block(f"prompts-{i}", chunk) for i, chunk in enumerate(data.prompts)),
        *(_json_block(f"media-{sample}", parts) for sample, parts in data.media.items()),
    ]
    return _page(meta, blocks, chunks_have_math([*data.details, *data.prompts]))


def render_paged(meta: dict[str, Any]) -> str:
    """The page of a paged report (`evalfleet.reports.report_paged`): its meta, and its index read
    from the folder beside it before the scripts run, and MathJax from there when the run's
    texts hold math."""
    folder = html_text(meta["paged"]["folder"])
    blocks = [
        _json_block("meta", {k: v for k, v in meta.items() if k != "comparisons"}),
        f"<script src='{folder}/index.js'></script>",
    ]
    if meta["paged"].get("mathjax"):
        blocks.append(f"<script src='{folder}/{meta['paged']['mathjax']}'></script>")
    return _page(meta, blocks, bool(meta["paged"].get("mathjax")), embed=False)


def _page(meta: dict[str, Any], blocks: list[str], math: bool, embed: bool = True) -> str:
    """`math`: the texts hold formulas, so MathJax's style, and (`embed`) MathJax itself."""
    script = "\n".join((ASSETS / name).read_text() for name in (*SCRIPTS, BOOT))
    return "\n".join(
        [
            "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
            "<meta name='viewport' content='width=device-width, initial-scale=1'>",
            f"<title>evalfleet report {html_text(meta['run_id'])}</title>",
            f"<style>{(ASSETS / 'report.css').read_text()}{STYLE if math else ''}</style>",
            "</head><body>",
            _top(meta),
            _filters(),
            "<div id='main'><section id='list'><div class='pager'><span id='count'></span>",
            "<button id='prev'>‹ previous</button><span id='page'></span>",
            "<button id='next'>next ›</button><span class='keys'>j / k or ↓ / ↑: next or "
            "previous item · o: all models on its sample · /: search</span></div>",
            "<div id='legend'></div><table id='items'><thead></thead><tbody></tbody></table>",
            "</section><section id='detail'></section></div>",
            "<section id='one' hidden></section>",
            about_sections(meta),
            "<div id='overlay'><img id='overlay-img' alt='full size'></div>",
            *blocks,
            f"<script>{bundle()}</script>" if math and embed else "",
            f"<script>{script}</script>",
            "</body></html>",
        ]
    )


def _json_block(name: str, value: Any) -> str:
    """Names, targets and responses are untrusted: the block holds no `<` to end it early."""
    return f"<script type='application/json' id='{html_text(name)}'>{json_for_html(value)}</script>"


def _text_block(name: str, gzipped: bytes) -> str:
    text = base64.b64encode(gzipped).decode()
    return f"<script type='text/plain' id='{html_text(name)}'>{text}</script>"


def _top(meta: dict[str, Any]) -> str:
    """One line naming the run (long ids shortened, whole on hover and when copied), then the
    headline the script draws."""
    done = sum(c["done"] for c in meta["coverage"])
    failed = sum(c["failed"] for c in meta["coverage"])
    expected = sum(c["expected"] for c in meta["coverage"])
    share = f"{100 * (done + failed) / expected:.1f}%" if expected else "—"
    judges = ", ".join(meta["judges"]) or "none"
    facts = [
        f"run {clipped(meta['run_id'])}",
        f"results {clipped(meta['version'])}",
        f"scored {html_text((meta.get('written_at') or '?')[:16].replace('T', ' '))}",
        f"{meta['items']} answered items",
        f"coverage {share}" + (f", {failed} failed calls" if failed else ""),
        f"judges {clipped(judges)}",
    ]
    note = (
        f"<p class='note media-note'>{html_text(meta['media_note'])}</p>"
        if meta.get("media_note")
        else ""
    )
    if meta.get("paged"):
        folder = html_text(meta["paged"]["folder"])
        note += (
            f"<p class='note paged-note'>{meta['items']} items: this page reads them from the "
            f"folder {folder}/ beside it, a file at a time as they are shown (keep the two "
            "together)</p>"
        )
    return (
        "<header id='top'><div class='bar'><h1>evalfleet report</h1>"
        + "".join(f"<span class='fact'>{f}</span>" for f in facts)
        + "<a class='fact' href='#about' onclick=\"document.getElementById('about')"
        '.scrollIntoView();return false">about this run ↓</a>'
        "<button id='theme' type='button' title='dark or light: kept in this browser'>dark"
        "</button></div>"
        f"<div id='headline'></div>{note}</header>"
    )


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
        "<label title='samples where, at one epoch and under the scoring shown, one model is "
        "right and another wrong; an item opens the sample across models'>"
        "<input type='checkbox' id='f-disagree'> models disagree</label>"
        "<label>text <input id='f-q' type='search' placeholder='prompt, response, answer, id'>"
        "</label>"
        "<label>where <input id='f-where' type='search' size='30'></label>"
        "<span id='where-error' class='error-note'></span>"
        "<details id='columns'><summary>columns</summary><div id='col-list'></div></details>"
        "</div>"
    )
