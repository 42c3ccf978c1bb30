"""The store's index page (`leaderboard/runs.html`): every run with its state, headline and a
link to its report; built rows rendered exactly, and the hostile matrix's stored runs read."""

from __future__ import annotations

import json
import re
import shutil

import pandas as pd
import pytest

from evalfleet.reports.store_index import INDEX_KEY, index_rows, render_index
from evalfleet.storage import open_store
from tests.support.hostile import BASE_RUN, MODELS, OTHER_RUN

ROW = {
    "run": "r<1>",
    "date": "2026-11-29 01:00:00",
    "models": "openai/a, openai/b",
    "benchmarks": "zerobench",
    "item set": "4 samples",
    "headline": "openai/a zerobench 0.250",
    "state": "complete",
    "report": "r<1>/results/v-1/report.html",
}


def test_each_run_is_one_row_escaped_with_its_state_and_report_link():
    damaged = {**ROW, "run": "old", "state": "damaged", "report": "", "headline": "-"}
    page = render_index([ROW, damaged], "/tmp/s")
    rows = re.findall(r'<tr class="state-(\w+)">(.*?)</tr>', page)
    assert [state for state, _ in rows] == ["complete", "damaged"]
    assert '<td class="run">r&lt;1&gt;</td>' in rows[0][1]
    assert '<a href="../r&lt;1&gt;/results/v-1/report.html">report</a>' in rows[0][1]
    assert '<td class="report">-</td>' in rows[1][1]
    assert '<span id="shown">2</span> of 2 runs' in page
    assert page.count("<th data-col=") == 8


@pytest.mark.slow
def test_the_stored_runs_are_listed_complete_with_their_headline(hostile_store, tmp_path):
    store_path = tmp_path / "store"
    shutil.copytree(hostile_store[0], store_path)
    assert (store_path / INDEX_KEY).is_file()  # the leaderboard build wrote it
    rows = {row["run"]: row for row in index_rows(open_store(str(store_path)))}
    assert sorted(rows) == [BASE_RUN, OTHER_RUN]
    base = rows[BASE_RUN]
    version = json.loads((store_path / BASE_RUN / "results" / "latest.json").read_text())
    assert base["report"] == f"{BASE_RUN}/results/{version['version']}/report.html"
    assert (base["state"], base["models"], base["benchmarks"]) == (
        "complete",
        ", ".join(MODELS),
        "zerobench",
    )
    metrics = pd.read_parquet(
        store_path / BASE_RUN / "results" / version["version"] / "metrics.parquet"
    )
    first = metrics[(metrics.metric == "accuracy") & (metrics.group == "")]
    expected = [f"{m} zerobench {float(first[first.model == m].value.iloc[0]):.3f}" for m in MODELS]
    assert base["headline"] == "; ".join(expected)
    page = (store_path / INDEX_KEY).read_text()
    assert page.count('<tr class="state-complete">') == 2
