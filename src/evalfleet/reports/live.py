"""`evalfleet report RUN --watch [SECONDS]`: the report of a run while it runs.

Every SECONDS, if the run stored answers since the last look, its records are aggregated as
`evalfleet aggregate` does (a results version of what is stored so far; `latest` moves to it)
and that version's report is written with a banner saying how far the run is. One address
follows the run: `{run}/results/live.html` sends the browser to the newest look, and each
look's page goes back to it after SECONDS, the page's state (filters, sort, open item: its
query and hash) carried both ways. The versions a watch made are removed once a newer look
replaces them: they were only ever looks. When the run ends (its heartbeat says so, or it
stopped beating), a last aggregation and a report without the banner end the watch.
"""

from __future__ import annotations

import html
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from evalfleet.core.types import ConfigError
from evalfleet.engine.store.heartbeat import liveness
from evalfleet.engine.store.manifest import read_manifest
from evalfleet.reports import MEDIA_BUDGET_MB
from evalfleet.reports.report import report_key, where, write_report
from evalfleet.storage import layout
from evalfleet.storage.base import Store

LIVE_PAGE = "live.html"  # beside the versions: {run}/results/live.html
SHORTEST_S, LONGEST_S = 2.0, 3600.0


@dataclass
class Look:
    version: str
    done: int
    missing: int
    failed: int


def live_key(run_id: str) -> str:
    return f"{run_id}/results/{LIVE_PAGE}"


def watch(
    store: Store,
    run_id: str,
    every_s: float,
    *,
    media_mb: float = MEDIA_BUDGET_MB,
    say: Callable[[str], None] = print,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Look at the run every `every_s` seconds until it ends; returns where its final report
    is. Each look and the end are said in one line."""
    if read_manifest(store, run_id) is None:
        raise ConfigError(
            f"run {run_id} is not in {store.describe()}: start it first (`evalfleet run "
            f"--run-id {run_id} ...`), or see `evalfleet runs`"
        )
    before = set(store.list_dirs(f"{run_id}/results"))  # never removed by a watch
    made: list[str] = []  # versions this watch wrote, newest last
    stored = -1
    said_where = False
    while True:
        manifest = read_manifest(store, run_id)
        state = liveness(manifest) if manifest is not None else "gone"
        if state != "running":
            final = _look(store, run_id, media_mb, live=None)
            _forget(store, run_id, made, keep=final.version)
            _point(store, run_id, final.version)
            page = where(store, report_key(run_id, final.version))
            say(
                f"run {run_id} is {state}: {final.done} answers done, {final.failed} failed, "
                f"{final.missing} missing; its report: {page}"
            )
            return page
        now = _stored(store, run_id)
        if now != stored:
            stored = now
            look = _look(store, run_id, media_mb, live=every_s)
            _point(store, run_id, look.version)
            _forget(store, run_id, [v for v in made if v != look.version], keep=look.version)
            made = [look.version] if look.version not in before else []
            if not said_where:
                live = _live_where(store, run_id)
                say(f"the live report (open it once, it follows the run): {live}")
                said_where = True
            say(
                f"{time.strftime('%H:%M:%S')} run {run_id}: {look.done} answers done, "
                f"{look.failed} failed, {look.missing} missing"
            )
        sleep(every_s)


def _stored(store: Store, run_id: str) -> int:
    """How many records the run has stored (answers and judgements): a look is taken only
    when this changed."""
    return sum(1 for _ in store.list(f"{run_id}/completions/")) + sum(
        1 for _ in store.list(f"{run_id}/judgements/")
    )


def _look(store: Store, run_id: str, media_mb: float, live: float | None) -> Look:
    """Aggregate what is stored and write its report; with `live` (the seconds between looks)
    the page says how far the run is and goes back to the live address after that time."""
    from evalfleet.engine.scoring.aggregate import aggregate_run

    result = aggregate_run(store, run_id)
    look = Look(result["version"], result["done"], result["missing"], result["failed"])
    write_report(store, run_id, look.version, media_mb=media_mb)
    if live is not None:
        key = report_key(run_id, look.version)
        page = (store.get(key) or b"").decode()
        store.put(key, _with_banner(page, run_id, look, live).encode())
    return look


def _with_banner(page: str, run_id: str, look: Look, every_s: float) -> str:
    total = look.done + look.failed + look.missing
    text = (
        f"live: run {run_id}, {look.done} of {total} answers done, {look.failed} failed, "
        f"{look.missing} to come; this page looks again in {every_s:g} s"
    )
    banner = (
        '<div id="live-banner" role="status" style="position:sticky;top:0;z-index:50;'
        "padding:6px 12px;background:#fff4ce;color:#3a2e00;border-bottom:1px solid #e0c060;"
        f'font:14px system-ui,sans-serif">{html.escape(text)}</div>'
        f"<script>setTimeout(function(){{location.replace('../{LIVE_PAGE}'"
        f"+location.search+location.hash)}},{int(every_s * 1000)});</script>"
    )
    at = page.find("<body")
    if at < 0:
        return banner + page
    end = page.find(">", at) + 1
    return page[:end] + banner + page[end:]


def _point(store: Store, run_id: str, version: str) -> None:
    """The live address: a page that sends the browser to `version`'s report, keeping the
    page's state (its query and hash)."""
    target = json.dumps(f"{version}/report.html")
    body = (
        f'<!doctype html><meta charset="utf-8"><title>run {html.escape(run_id)}: live</title>'
        f"<script>location.replace({target}+location.search+location.hash);</script>"
        f'<p><a href="{html.escape(version)}/report.html">the newest report of run '
        f"{html.escape(run_id)}</a></p>"
    )
    store.put(live_key(run_id), body.encode())


def _forget(store: Store, run_id: str, versions: list[str], keep: str) -> None:
    """Remove the versions a watch made that a newer look replaced (never `keep`)."""
    for version in versions:
        if version == keep or not layout.is_results_version(version):
            continue
        for key in store.list(f"{run_id}/results/{version}/"):
            store.delete(key)
        root = getattr(store, "root", None)  # a local store keeps the folders: empty, removed
        if root is not None:
            for folder, _, _ in os.walk(os.path.join(root, run_id, "results", version), False):
                if not os.listdir(folder):
                    os.rmdir(folder)


def _live_where(store: Store, run_id: str) -> str:
    return where(store, live_key(run_id))
