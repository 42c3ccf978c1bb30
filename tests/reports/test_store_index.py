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
    "tags": "",
    "note": "",
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
    names = '<span class="nw">openai/a</span>, <span class="nw">openai/b</span>'
    assert f'<td class="models">{names}</td>' in rows[0][1]  # never broken at a hyphen
    assert '<span id="shown">2</span> of 2 runs' in page
    assert page.count("<th data-col=") == 9


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


RUN_CELLS = (
    "return [...document.querySelectorAll('#runs tbody tr')].filter(r => !r.hidden)"
    ".map(r => r.cells[0].textContent)"
)


def index_view(driver) -> dict:
    from selenium.webdriver.common.by import By

    return {
        "runs": driver.execute_script(RUN_CELLS),
        "shown": driver.find_element(By.ID, "shown").text,
        "search": driver.find_element(By.ID, "q").get_attribute("value"),
        "sorted": [
            (th.text, th.get_attribute("aria-sort"))
            for th in driver.find_elements(By.CSS_SELECTOR, "#runs th[aria-sort]")
        ],
        "hash": driver.current_url.partition("#")[2],
    }


@pytest.mark.slow
def test_the_index_searches_sorts_keeps_its_state_and_opens_a_report(hostile_store):
    """At 1400 x 1000 in Chromium: newest run first; a click on "run" sorts up, another down;
    a search keeps the matching rows; a reload brings the same view back; "report" opens it."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.support.browser import close, headless_chromium

    store = hostile_store[0]
    newest_first = [row["run"] for row in index_rows(open_store(str(store)))]
    assert sorted(newest_first) == [BASE_RUN, OTHER_RUN]
    driver = headless_chromium(1400, 1000)
    try:
        driver.get((store / INDEX_KEY).as_uri())
        assert index_view(driver) == {
            "runs": newest_first, "shown": "2", "search": "", "sorted": [], "hash": "",
        }  # fmt: skip
        run = driver.find_element(By.CSS_SELECTOR, "#runs th[data-col='0']")
        run.click()
        assert index_view(driver)["runs"] == [BASE_RUN, OTHER_RUN]
        run.click()
        driver.find_element(By.ID, "q").send_keys(OTHER_RUN)
        view = index_view(driver)
        assert view == {
            "runs": [OTHER_RUN],
            "shown": "1",
            "search": OTHER_RUN,
            "sorted": [("run", "descending")],
            "hash": f"q={OTHER_RUN}&sort=0&dir=desc",
        }
        driver.refresh()
        assert index_view(driver) == view
        driver.get((store / INDEX_KEY).as_uri())
        link = driver.find_element(By.CSS_SELECTOR, "#runs tbody td.report a")
        row_run = driver.execute_script(
            "return arguments[0].closest('tr').cells[0].textContent", link
        )
        link.click()
        version = json.loads((store / row_run / "results" / "latest.json").read_text())["version"]
        report = store / row_run / "results" / version / "report.html"
        assert driver.current_url.partition("#")[0] == report.as_uri()
        assert driver.title == f"evalfleet report {row_run}"
        WebDriverWait(driver, 20).until(lambda d: d.execute_script("return window.__reportReady"))
    finally:
        close(driver)
