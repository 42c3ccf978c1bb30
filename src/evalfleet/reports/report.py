"""`evalfleet report RUN_ID`: the run report, written beside the tables it shows as
`{run}/results/{version}/report.html`, with the comparisons saved for that version (and,
for a run of more than 20,000 items, the folder `report_items/` the page reads them from)."""

from __future__ import annotations

import json
import logging
import os

from evalfleet.engine.store.results import results_about
from evalfleet.reports import MEDIA_BUDGET_MB
from evalfleet.reports.report_data import gather
from evalfleet.reports.report_page import render, render_paged
from evalfleet.reports.report_paged import PagedWriter, Paging
from evalfleet.reports.report_scan import Shape, table_shape
from evalfleet.storage import layout
from evalfleet.storage.base import Store

log = logging.getLogger("evalfleet")
COMPARE_PREFIX = "compare/"  # comparisons of this version with another, as JSON
PAGING = Paging()  # above 20,000 items the report pages them from files beside it


def report_key(run_id: str, version: str) -> str:
    return layout.results_key(run_id, version, "report.html")


def write_report(
    store: Store,
    run_id: str,
    version: str | None = None,
    *,
    media_mb: float = MEDIA_BUDGET_MB,
    paging: Paging = PAGING,
) -> str:
    """Build the report of a run's results version (the latest by default) and store it;
    returns where it is (a path for a local store, else the object's URL). A run of more
    than `paging.above` items gets a page that reads them from files beside it
    (`evalfleet.reports.report_paged`); up to that, one self-contained page."""
    about = results_about(store, run_id, version)
    version = about.version
    key = report_key(run_id, version)
    blob, shape = _samples_shape(store, run_id, version)
    if blob is not None and shape is not None and shape.items > paging.above:
        meta = PagedWriter(store, run_id, about, shape, paging, media_mb).write(blob)
        del blob
        meta["comparisons"] = saved_comparisons(store, run_id, version)
        page = render_paged(meta).encode()
        store.put(key, page)
        log.info("run %s: report of %d items written, paged", run_id, meta["items"])
        return where(store, key)
    del blob
    data = gather(store, run_id, version, media_mb=media_mb)
    data.meta["comparisons"] = saved_comparisons(store, run_id, version)
    page = render(data).encode()
    store.put(key, page)
    log.info("run %s: report written (%.1f MB)", run_id, len(page) / 2**20)
    return where(store, key)


def _samples_shape(store: Store, run_id: str, version: str) -> tuple[bytes | None, Shape | None]:
    """The samples table's bytes and how many items it holds; None for a table missing or
    unreadable (the single-page path then names it as damaged)."""
    blob = store.get(layout.results_key(run_id, version, "samples.parquet"))
    if blob is None:
        return None, None
    try:
        return blob, table_shape(blob)
    except (ValueError, OSError):  # ArrowInvalid is a ValueError
        return None, None


def write_report_or_warn(store: Store, run_id: str, version: str | None = None) -> str | None:
    """`write_report`, but a report that cannot be built (a dataset gone mid-way, a bug)
    never fails what wrote the tables before it: it is said, and None returned."""
    try:
        return write_report(store, run_id, version)
    except Exception as exc:
        log.warning("run %s: the report was not written: %s", run_id, " ".join(str(exc).split()))
        return None


def saved_comparisons(store: Store, run_id: str, version: str) -> list[dict]:
    prefix = layout.results_key(run_id, version, COMPARE_PREFIX)
    found = []
    for key in store.list(prefix):
        if key.endswith(".json"):
            blob = store.get(key)
            if blob:
                found.append(json.loads(blob))
    return found


def where(store: Store, key: str) -> str:
    """A store key as a person opens it: a file path for a local store, else the URL."""
    root = getattr(store, "root", None)
    return os.path.join(root, key) if root is not None else f"{store.url.rstrip('/')}/{key}"
