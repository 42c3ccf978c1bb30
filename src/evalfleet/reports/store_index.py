"""A store's index page, `leaderboard/runs.html` (beside the leaderboard, which the commands
that write it may change; the store's root holds only runs): every run with its tags and note
(`evalfleet tag`), date, models, benchmarks, item set, headline, state and a link to its
report; searchable and sortable, the search and the sort kept in the URL's hash so a link opens
the same view. Written by `aggregate` and `leaderboard` (`leaderboard.update`) and by `tag`.

A run's state: `complete` (every planned answer done, none failed, results written),
`partial` (answers missing or failed, or not aggregated yet) or `damaged` (its manifest or its
results do not read: `evalfleet status RUN` tells what)."""

from __future__ import annotations

import html
import json
from typing import Any

from evalfleet.engine.store.manifest import read_manifest
from evalfleet.engine.store.results import NoResults, read_version_table, results_about
from evalfleet.reports.item_sets import item_set_of
from evalfleet.reports.status import run_progress
from evalfleet.storage.base import Store
from evalfleet.storage.tags import read_tags

INDEX_KEY = "leaderboard/runs.html"
COLUMNS = ("run", "tags", "date", "models", "benchmarks", "item set", "headline", "state", "report")


def index_rows(store: Store) -> list[dict[str, str]]:
    """One row per run of the store, newest first."""
    rows = []
    for run_dir in store.list_dirs(""):
        run_id = run_dir.strip("/")
        progress = run_progress(store, run_id)
        if progress is not None:
            rows.append(run_row(store, run_id, progress))
    return sorted(rows, key=lambda row: row["date"], reverse=True)


def run_row(store: Store, run_id: str, progress: dict[str, Any]) -> dict[str, str]:
    labels = read_tags(store, run_id)  # `evalfleet tag`: searched like every other cell
    row = {
        "run": run_id,
        "tags": ", ".join(labels.tags),
        "note": labels.note,
        "metadata": "\n".join(f"{k}={v}" for k, v in labels.metadata),  # a value is one line
        "date": str(progress["created_at"])[:19].replace("T", " "),
        "models": str(progress["models"]),
        "benchmarks": str(progress["benchmarks"]),
        "item set": "?",
        "headline": "-",
        "state": "damaged" if progress["state"] == "?" else "partial",
        "report": "",
    }
    if row["state"] == "damaged":
        return row
    try:
        manifest = read_manifest(store, run_id)
        if manifest is not None:
            row["item set"] = "; ".join(
                item_set_of(manifest, name).label for name in manifest.identity.benchmarks
            )
        about = results_about(store, run_id)
        metrics = read_version_table(store, run_id, about.version, "metrics.parquet")
    except NoResults:  # not aggregated yet
        return row
    except Exception:  # noqa: BLE001  # a manifest or results that do not read
        row["state"] = "damaged"
        return row
    row["headline"] = headline_text(metrics)
    row["report"] = f"{run_id}/results/{about.version}/report.html"
    done, expected, failed = progress["done"], progress["expected"], progress["failed"]
    if expected and done is not None and done >= expected and not failed:
        row["state"] = "complete"
    return row


def headline_text(metrics: Any) -> str:
    """Each model's headline per benchmark (the benchmark's headline metric, its first
    scoring mode), e.g. `sim-0.3 zerobench 0.250`."""
    from evalfleet.benchmarks import registry

    parts = []
    whole = metrics[metrics.group.fillna("") == ""]
    for (model, benchmark), rows in whole.groupby(["model", "benchmark"], sort=False):
        try:
            metric = registry.get(benchmark).headline
        except Exception:  # noqa: BLE001  # a benchmark whose package is not installed here
            metric = "accuracy"
        found = rows[rows.metric == metric]
        if not found.empty:
            parts.append(f"{model} {benchmark} {float(found.value.iloc[0]):.3f}")
    return "; ".join(parts) or "-"


def render_index(rows: list[dict[str, str]], where: str) -> str:
    """The page: a search box, the table and a little script that filters and sorts it."""
    head = "".join(f'<th data-col="{i}">{html.escape(c)}</th>' for i, c in enumerate(COLUMNS))
    body = "".join(_row_html(row) for row in rows)
    return PAGE.format(
        where=html.escape(where), count=len(rows), head=head, body=body, data=json.dumps(len(rows))
    )


def _row_html(row: dict[str, str]) -> str:
    cells = []
    for column in COLUMNS:
        value = row[column]
        if column == "report":
            text = f'<a href="../{html.escape(value)}">report</a>' if value else "-"
        elif column == "tags":
            text = ", ".join(
                f'<span class="tag">{html.escape(t)}</span>' for t in value.split(", ") if t
            )
            if row.get("metadata"):
                pairs = row["metadata"].split("\n")
                text += (
                    '<div class="metadata">'
                    + " ".join(f'<span class="meta">{html.escape(p)}</span>' for p in pairs)
                    + "</div>"
                )
            if row.get("note"):
                text += f'<div class="note">{html.escape(row["note"])}</div>'
        elif column in ("models", "benchmarks"):  # a name never broken at its hyphens
            text = ", ".join(f'<span class="nw">{html.escape(v)}</span>' for v in value.split(", "))
        else:
            text = html.escape(value)
        cells.append(f'<td class="{column.replace(" ", "-")}">{text}</td>')
    return f'<tr class="state-{html.escape(row["state"])}">{"".join(cells)}</tr>'


def write_index(store: Store) -> str:
    """Write the store's `index.html`; its URL."""
    page = render_index(index_rows(store), store.describe())
    store.put(INDEX_KEY, page.encode())
    return f"{store.url.rstrip('/')}/{INDEX_KEY}"


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>evalfleet runs: {where}</title>
<style>
body {{ font: 14px system-ui, sans-serif; margin: 1.5em; }}
table {{ border-collapse: collapse; }} th, td {{ padding: 4px 8px; border-bottom: 1px solid #ddd;
text-align: left; vertical-align: top; }}
th {{ cursor: pointer; user-select: none; background: #f4f4f4; }}
th.asc::after {{ content: " \\25B2"; }} th.desc::after {{ content: " \\25BC"; }}
.state-complete .state {{ color: #176117; }} .state-partial .state {{ color: #8a5a00; }}
.state-damaged .state {{ color: #a11; font-weight: bold; }}
#q {{ width: 30em; padding: 4px; margin-bottom: 0.8em; }}
.nw, td.date, td.state, .tag {{ white-space: nowrap; }}
.tag {{ background: #eef; border-radius: 3px; padding: 0 4px; }}
.meta {{ background: #efe; border-radius: 3px; padding: 0 4px; font-size: 12px; }}
.note {{ color: #555; font-size: 12px; max-width: 24em; white-space: pre-wrap; }}
</style></head><body>
<h1>Runs in {where}</h1>
<p><a href="index.html">the leaderboard</a></p>
<p><span id="shown">{count}</span> of {count} runs ·
<input id="q" type="search" placeholder="search runs, tags, metadata, models, benchmarks, states"
 aria-label="search"></p>
<table id="runs"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
<script>
const total = {data};
const tbody = document.querySelector("#runs tbody"), q = document.getElementById("q");
const heads = [...document.querySelectorAll("#runs th")];
function readHash() {{
  const p = new URLSearchParams(location.hash.slice(1));
  return {{q: p.get("q") || "", sort: p.get("sort"), dir: p.get("dir") || "asc"}};
}}
function writeHash(s) {{
  const p = new URLSearchParams();
  if (s.q) p.set("q", s.q);
  if (s.sort !== null) {{ p.set("sort", s.sort); p.set("dir", s.dir); }}
  history.replaceState(null, "", "#" + p.toString());
}}
function apply(s) {{
  const rows = [...tbody.rows], words = s.q.toLowerCase().split(/\\s+/).filter(Boolean);
  let shown = 0;
  for (const r of rows) {{
    const text = r.textContent.toLowerCase();
    const ok = words.every(w => text.includes(w));
    r.hidden = !ok; shown += ok;
  }}
  heads.forEach(h => {{ h.classList.remove("asc", "desc"); h.removeAttribute("aria-sort"); }});
  if (s.sort !== null) {{
    const i = +s.sort, sign = s.dir === "desc" ? -1 : 1;
    rows.sort((a, b) => sign * a.cells[i].textContent.localeCompare(
      b.cells[i].textContent, undefined, {{numeric: true}}));
    rows.forEach(r => tbody.appendChild(r));
    heads[i].classList.add(s.dir);
    heads[i].setAttribute("aria-sort", s.dir === "desc" ? "descending" : "ascending");
  }}
  document.getElementById("shown").textContent = shown;
  q.value = s.q;
}}
let state = readHash();
apply(state);
q.addEventListener("input", () => {{ state.q = q.value; writeHash(state); apply(state); }});
heads.forEach((h, i) => h.addEventListener("click", () => {{
  state.dir = state.sort === String(i) && state.dir === "asc" ? "desc" : "asc";
  state.sort = String(i); writeHash(state); apply(state);
}}));
window.addEventListener("hashchange", () => {{ state = readHash(); apply(state); }});
</script></body></html>
"""
