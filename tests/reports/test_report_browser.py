"""The run report in headless Chromium, on the demo runs of three benchmarks: filtering to one
model's incorrect answers and opening a ZeroBench item shows its image, response, extracted
answer and verdict; a ROME item shows the judge's own words; an OmniBench item an audio
player; and a leaderboard cell leads to its filtered view. Values are checked against the
stored records and the samples table. Screenshots go to tests/output/report/ (gitignored)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from cli.main import main
from tests.support.browser import close, headless_chromium
from tests.support.helpers import result_table, results_dir

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "tests" / "output" / "report"


@pytest.fixture(scope="module")
def store(ray_address, prefect_api_url, tmp_path_factory):
    work = tmp_path_factory.mktemp("reports")
    runs = work / "runs"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_ADDRESS", ray_address)
        patch.setenv("PREFECT_API_URL", prefect_api_url)
        patch.chdir(work)
        for benchmark in ("zerobench", "rome", "omnibench"):
            code = main(["demo", "-b", benchmark, "--run-id", benchmark, "--store", str(runs)])
            assert code == 0
    return runs


@pytest.fixture(scope="module")
def browser():
    driver = headless_chromium(1500, 1100)
    yield driver
    close(driver)


def open_page(driver, path: Path, fragment: str = "") -> None:
    driver.get(path.as_uri() + fragment)
    driver.refresh()  # a fragment change alone would not load the page again
    deadline = time.monotonic() + 10
    while not driver.execute_script("return window.__reportReady || false"):
        assert time.monotonic() < deadline, "the report did not render"
        time.sleep(0.05)


def choose(driver, element_id: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element("id", element_id)).select_by_value(value)


def rows(driver) -> list[list[str]]:
    return [
        [cell.text for cell in row.find_elements("tag name", "td")]
        for row in driver.find_elements("css selector", "tr.item-row")
    ]


def open_first_item(driver):
    driver.find_element("css selector", "tr.item-row").click()
    deadline = time.monotonic() + 10
    while not driver.find_elements("css selector", "#detail pre.response"):
        assert time.monotonic() < deadline, "the item did not open"
        time.sleep(0.05)
    return driver.find_element("id", "detail")


def record(runs: Path, run_id: str, stage: str, model: str, benchmark: str, sample: str) -> dict:
    folder = runs / run_id / stage
    for path in folder.rglob("*.json"):
        found = json.loads(path.read_text())
        same = (found["model"], found["benchmark"], found["sample_id"]) == (
            model,
            benchmark,
            sample,
        )
        if same and found["epoch"] == 0:
            return found
    raise AssertionError(f"no {stage} record of {model} {benchmark} {sample}")


def test_a_zerobench_item_of_one_models_incorrect_answers(store, browser):
    page = results_dir(store, "zerobench") / "report.html"
    open_page(browser, page)
    choose(browser, "f-model", "openai/sim-0.3")
    choose(browser, "f-status", "incorrect")
    samples = result_table(store, "zerobench", "samples.parquet")
    first_scoring = samples[samples.benchmark == "zerobench"].scoring.iloc[0]
    wrong = samples[
        (samples.model == "openai/sim-0.3")
        & (samples.scoring == first_scoring)
        & ~samples.correct
        & samples.error.isna()
        & samples.score_error.isna()
    ]
    total = len(samples[["model", "benchmark", "sample_id", "epoch"]].drop_duplicates())
    assert browser.find_element("id", "count").text.startswith(f"{len(wrong)} of {total} items")
    shown = rows(browser)
    assert shown and all(r[0] == "openai/sim-0.3" and r[4] == "W" for r in shown)

    choose(browser, "f-benchmark", "zerobench")
    detail = open_first_item(browser)
    model, benchmark, sample, epoch = rows(browser)[0][:4]
    assert (model, benchmark, epoch) == ("openai/sim-0.3", "zerobench", "0")
    stored = record(store, "zerobench", "completions", model, benchmark, sample)
    assert detail.find_element("css selector", "pre.response").text == stored["response"].strip()
    thumbs = detail.find_elements("css selector", "img.thumb")
    assert thumbs and thumbs[0].get_attribute("src").startswith("data:image/jpeg;base64,")
    assert browser.execute_script("return arguments[0].naturalWidth", thumbs[0]) > 0
    row = wrong[(wrong.benchmark == "zerobench") & (wrong.sample_id == sample) & (wrong.epoch == 0)]
    extracted = detail.find_elements("css selector", "table.scoring td.extracted")[0].text
    assert extracted == (row.answer.iloc[0] or "")
    verdict = detail.find_elements("css selector", "table.scoring td.verdict-cell")[0].text
    assert verdict == "W"
    thumbs[0].click()  # opens full size
    assert browser.find_element("id", "overlay").is_displayed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "zerobench-item.png"))
    browser.find_element("id", "overlay").click()


def test_a_rome_item_with_the_judges_words(store, browser):
    page = results_dir(store, "rome") / "report.html"
    open_page(browser, page, "#benchmark=rome&scoring=judge&status=judged")
    assert rows(browser) and all(r[4] in ("r", "w") for r in rows(browser))
    detail = open_first_item(browser)
    model, _, sample, _ = rows(browser)[0][:4]
    judged = record(store, "rome", "judgements", model, "rome", sample)
    words = detail.find_element("css selector", "pre.judge-words").text
    assert words == judged["response"].strip() and "Judgement" in words
    browser.save_screenshot(str(SHOTS / "rome-item.png"))


def test_an_omnibench_item_with_its_audio_player(store, browser):
    page = results_dir(store, "omnibench") / "report.html"
    open_page(browser, page)
    detail = open_first_item(browser)
    audio = detail.find_element("css selector", "audio")
    assert audio.get_attribute("src").startswith("data:audio/")
    assert browser.execute_script("return arguments[0].controls", audio) is True
    assert detail.find_elements("css selector", "img.thumb")  # and its image
    browser.save_screenshot(str(SHOTS / "omnibench-item.png"))


def test_a_leaderboard_cell_leads_to_its_answers(store, browser):
    browser.get((store / "leaderboard" / "index.html").as_uri())
    link = browser.find_element("link text", "openai/sim-0.7")
    href = link.get_attribute("href")
    link.click()
    deadline = time.monotonic() + 10
    while not browser.execute_script("return window.__reportReady || false"):
        assert time.monotonic() < deadline, f"the report did not render: {href}"
        time.sleep(0.05)
    assert "/results/" in browser.current_url and "report.html#" in browser.current_url
    assert browser.find_element("id", "f-model").get_attribute("value") == "openai/sim-0.7"
    benchmark = browser.find_element("id", "f-benchmark").get_attribute("value")
    shown = rows(browser)
    assert benchmark and shown
    assert all(r[0] == "openai/sim-0.7" and r[1] == benchmark for r in shown)
