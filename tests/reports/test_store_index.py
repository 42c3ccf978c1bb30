"""The store's index page (`leaderboard/runs.html`): every run with its state, headline and a
link to its report; built rows rendered exactly, and the hostile matrix's stored runs read."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

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


def test_tags_metadata_and_note_share_one_cell_escaped():
    row = {**ROW, "tags": "a, b", "note": "n<", "metadata": "gpu=a100\ncmd=x=<1> y"}
    page = render_index([row], "/tmp/s")
    assert (
        '<td class="tags"><span class="tag">a</span>, <span class="tag">b</span>'
        '<div class="metadata"><span class="meta">gpu=a100</span> '
        '<span class="meta">cmd=x=&lt;1&gt; y</span></div><div class="note">n&lt;</div></td>'
    ) in page
    assert '<div class="metadata">' not in render_index([ROW], "/tmp/s")


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


@pytest.mark.slow
def test_a_tag_shows_in_the_index_the_runs_table_and_the_report(hostile_store, tmp_path, capsys):
    """`evalfleet tag` on a stored copy of the demo run: the index it rewrites, `runs` and the
    report's About table (from its next `evalfleet report`) show the tags and the note."""
    from evalfleet.cli.main import main
    from evalfleet.reports.status import list_runs

    store_path = tmp_path / "store"
    shutil.copytree(hostile_store[0], store_path)
    argv = ["tag", BASE_RUN, "--store", str(store_path), "--add", "baseline", "--note", "a<b"]
    argv += ["--set", "gpu=a100", "cmd=x=1"]
    assert main(argv) == 0
    store = open_store(str(store_path))
    rows = {row["run"]: row for row in index_rows(store)}
    assert (rows[BASE_RUN]["tags"], rows[BASE_RUN]["note"]) == ("baseline", "a<b")
    assert rows[BASE_RUN]["metadata"] == "gpu=a100\ncmd=x=1"
    assert (rows[OTHER_RUN]["tags"], rows[OTHER_RUN]["note"]) == ("", "")
    page = (store_path / INDEX_KEY).read_text()
    tags_cell = (
        '<td class="tags"><span class="tag">baseline</span><div class="metadata"><span '
        'class="meta">gpu=a100</span> <span class="meta">cmd=x=1</span></div><div class="note">'
        "a&lt;b</div>"
    )
    assert page.count(tags_cell) == 1
    assert list_runs(store).endswith(
        f"\n\nrun {BASE_RUN} tags: baseline; metadata: gpu=a100, cmd=x=1"
    )
    capsys.readouterr()
    assert main(["report", BASE_RUN, "--store", str(store_path)]) == 0
    report = capsys.readouterr().out.removeprefix("report: ").strip()
    about = Path(report.removeprefix("file://")).read_text()
    assert (
        "<tr><td>tags</td><td>baseline</td></tr><tr><td>note</td><td>a&lt;b</td></tr>"
        "<tr><td>metadata</td><td>gpu=a100, cmd=x=1</td></tr>"
    ) in about


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
def test_the_index_searches_sorts_keeps_its_state_and_opens_a_report(hostile_store, tmp_path):
    """At 1400 x 1000 in Chromium: newest run first; a click on "run" sorts up, another down;
    a search keeps the matching rows; a reload brings the same view back; a search for a tag
    (`evalfleet tag`) finds its run; "report" opens it."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from evalfleet.cli.main import main
    from tests.support.browser import close, headless_chromium

    store = tmp_path / "store"
    shutil.copytree(hostile_store[0], store)
    assert main(["tag", BASE_RUN, "--store", str(store), "--add", "nightly"]) == 0
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
        driver.get((store / INDEX_KEY).as_uri() + "#q=NIGHTLY")
        tagged = index_view(driver)
        assert (tagged["runs"], tagged["search"], tagged["shown"]) == ([BASE_RUN], "NIGHTLY", "1")
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
