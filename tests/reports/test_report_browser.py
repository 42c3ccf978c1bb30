"""The run report in headless Chromium at 1400 x 1000, on the demo runs of three benchmarks.

The first screen holds the headline (the aggregation's values and intervals) and the top of
the item list; nothing scrolls sideways, whatever is open; the list shows each item's answer,
one verdict badge per scoring mode, tokens, latency and cost, sorts on a click and moves with
j / k; the address keeps the filters, the sort and the item. A ZeroBench item shows its image,
response, extracted answer and verdict; a ROME item its judge's verdict and words (never an
"extracted answer" of 0) with the judge's tokens and cost; an OmniBench item an audio player.
One sample across models shows the prompt once and a row per model and epoch, from an item,
from a flipped sample of the comparison and from "models disagree". The page writes numbers
with the rules of `reports.formatting`. Values are checked against the stored records and the
results tables. Screenshots go to tests/output/report/ (gitignored)."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest

from evalfleet.benchmarks.rome.judge import parse_robust, parse_upstream
from evalfleet.benchmarks.zerobench.scoring import SCORERS
from evalfleet.cli.main import main
from evalfleet.engine.store.manifest_types import Manifest
from evalfleet.reports import formatting as fmt
from evalfleet.reports.item_sets import item_set_of
from tests.support.browser import close, headless_chromium
from tests.support.helpers import result_table, results_dir

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "tests" / "output" / "report"
WIDTH, HEIGHT = 1400, 1000
SECRET = "sk-report-raw-view-secret-0123456789"


@pytest.fixture(scope="module")
def store(ray_address, prefect_api_url, tmp_path_factory):
    work = tmp_path_factory.mktemp("reports")
    runs = work / "runs"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_ADDRESS", ray_address)
        patch.setenv("PREFECT_API_URL", prefect_api_url)
        patch.setenv("EVALFLEET_SIMULATOR_API_KEY", SECRET)  # never in a report (raw view)
        patch.chdir(work)
        for benchmark in ("zerobench", "rome", "omnibench"):
            code = main(["demo", "-b", benchmark, "--run-id", benchmark, "--store", str(runs)])
            assert code == 0
    return runs


@pytest.fixture(scope="module")
def browser():
    driver = headless_chromium(WIDTH, HEIGHT)
    # the page's viewport itself 1400 x 1000 (the window's size includes the browser's bars)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    yield driver
    close(driver)


def open_page(driver, path: Path, fragment: str = "") -> None:
    driver.get(path.as_uri() + fragment)
    driver.refresh()  # a fragment change alone would not load the page again
    until(driver, "return window.__reportReady || false", "the report did not render")


def until(driver, script: str, what: str, *args):
    deadline = time.monotonic() + 10
    while not (found := driver.execute_script(script, *args)):
        assert time.monotonic() < deadline, what
        time.sleep(0.05)
    return found


def choose(driver, element_id: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element("id", element_id)).select_by_value(value)


ROWS = """const keys = [...document.querySelectorAll('#items th')].map((th) => th.dataset.sort);
return [...document.querySelectorAll('tr.item-row')].map((row) => {
  const td = row.querySelectorAll('td');
  const at = (key) => td[keys.indexOf(key)];
  const text = (key) => (keys.includes(key) ? at(key).textContent : null);
  return {
    model: at('model').title, benchmark: text('benchmark'), sample: text('sample'),
    prompt: text('prompt'), epoch: text('epoch'), answer: text('answer'),
    verdicts: [...at('verdict').querySelectorAll('.verdict')].map((b) => b.dataset.letter),
    target: text('target'), tokens: text('tokens'), latency: text('latency'),
    cost: text('cost'), selected: row.classList.contains('selected'),
  };
});"""


def rows(driver) -> list[dict]:
    return driver.execute_script(ROWS)


def no_sideways_scroll(driver) -> bool:
    return driver.execute_script(
        "return document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )


def open_first_item(driver):
    driver.find_element("css selector", "tr.item-row").click()
    until(driver, "return document.querySelector('#detail pre.response')", "no item opened")
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


def items_of(samples):
    """One row per item (model, benchmark, sample, epoch) of a samples table."""
    return samples.drop_duplicates(["model", "benchmark", "sample_id", "epoch"])


def test_the_first_screen_opens_on_the_answers(store, browser):
    page = results_dir(store, "zerobench") / "report.html"
    open_page(browser, page)
    assert browser.execute_script("return [window.innerWidth, window.innerHeight]") == [
        WIDTH,
        HEIGHT,
    ]
    first = browser.execute_script(
        "return document.querySelector('tr.item-row').getBoundingClientRect().bottom"
    )
    assert first <= HEIGHT
    headers = browser.execute_script(
        "return [...document.querySelectorAll('#items th')].map((th) => th.textContent)"
    )
    assert headers == [
        "model",
        "benchmark",
        "sample",
        "prompt",
        "ep",
        "answer",
        "verdicts",
        "target",
        "tokens",
        "latency",
        "cost",
    ]
    # the headline: each model's value and interval as the aggregation wrote them
    metrics = result_table(store, "zerobench", "metrics.parquet")
    wanted = metrics[
        (metrics.benchmark == "zerobench")
        & (metrics.scoring == "upstream")
        & (metrics.metric == "accuracy")
        & (metrics.group.fillna("") == "")
    ]
    cells = browser.execute_script(
        "return [...document.querySelectorAll('#headline td.cell[data-benchmark=zerobench]')]"
        ".map((td) => [td.dataset.model, td.textContent])"
    )
    assert sorted(cells) == sorted(
        [r.model, f"{fmt.share(r.value)} {fmt.interval(r.ci95_low, r.ci95_high)}"]
        for r in wanted.itertuples()
    )
    # the list: the first row's answer, verdicts, tokens and cost, as stored
    top = rows(browser)[0]
    samples = result_table(store, "zerobench", "samples.parquet")
    mine = samples[
        (samples.model == top["model"])
        & (samples.benchmark == top["benchmark"])
        & (samples.sample_id == top["sample"])
        & (samples.epoch == int(top["epoch"]))
    ]
    assert top["answer"] == mine.answer.iloc[0]
    assert top["verdicts"] == ["R" if c else "W" for c in mine.correct]
    assert top["tokens"] == fmt.tokens(mine.output_tokens.iloc[0])
    stored = record(store, "zerobench", "completions", top["model"], "zerobench", top["sample"])
    assert top["cost"] == fmt.money(stored["cost_usd"])
    assert top["latency"] == f"{stored['latency_s']:.1f} s"
    assert no_sideways_scroll(browser)
    # long ids are clipped on screen only: the page holds them whole (a copy takes them), and
    # their title shows them whole on hover
    clipped = browser.execute_script(
        "return [...document.querySelectorAll('#top .clip')].map((e) => [e.title, e.textContent])"
    )
    version = results_dir(store, "zerobench").name
    assert ["zerobench", "zerobench"] in clipped and [version, version] in clipped
    # each headline column names the item set it was measured on (the demo's four questions)
    manifest = Manifest.from_bytes((store / "zerobench" / "manifest.json").read_bytes())
    items = item_set_of(manifest, "zerobench").label
    assert items.startswith("4 samples, dataset at ") and [items, items] in clipped
    # and so does every headline figure under About this run, each on its row
    named = browser.execute_script(
        "const d = [...document.querySelectorAll('#about details')].find((e) =>"
        " e.querySelector('summary').textContent.startsWith('Every headline figure'));"
        "return [...d.querySelectorAll('tr')].slice(1).map((tr) => [...tr.cells].map((c) =>"
        " c.textContent)).filter((r) => r[1] === 'zerobench').map((r) => r[r.length - 1])"
    )
    assert named and set(named) == {items}
    assert all(title == text for title, text in clipped)
    browser.save_screenshot(str(SHOTS / "first-screen.png"))


@pytest.mark.parametrize("run_id", ["zerobench", "rome", "omnibench"])
def test_nothing_scrolls_sideways_at_1400_pixels(store, browser, run_id):
    """With every folded section open, with an item open, and in the one-sample view."""
    open_page(browser, results_dir(store, run_id) / "report.html")
    assert no_sideways_scroll(browser)
    browser.execute_script("for (const d of document.querySelectorAll('details')) d.open = true")
    assert browser.find_elements("css selector", "#about details")
    assert no_sideways_scroll(browser)
    open_first_item(browser)
    assert no_sideways_scroll(browser)
    browser.find_element("tag name", "body").send_keys("o")
    until(browser, "return document.querySelector('#one pre.prompt')", "no one-sample view")
    assert no_sideways_scroll(browser)


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
    total = len(items_of(samples))
    assert browser.find_element("id", "count").text.startswith(f"{len(wrong)} of {total} items")
    shown = rows(browser)
    assert shown and all(r["model"] == "openai/sim-0.3" and r["verdicts"][0] == "W" for r in shown)

    choose(browser, "f-benchmark", "zerobench")
    detail = open_first_item(browser)
    top = rows(browser)[0]
    assert (top["model"], top["benchmark"], top["epoch"]) == ("openai/sim-0.3", "zerobench", "0")
    stored = record(store, "zerobench", "completions", top["model"], "zerobench", top["sample"])
    assert detail.find_element("css selector", "pre.response").text == stored["response"].strip()
    thumbs = detail.find_elements("css selector", "img.thumb")
    assert thumbs and thumbs[0].get_attribute("src").startswith("data:image/")
    assert browser.execute_script("return arguments[0].naturalWidth", thumbs[0]) > 0
    row = wrong[
        (wrong.benchmark == "zerobench") & (wrong.sample_id == top["sample"]) & (wrong.epoch == 0)
    ]
    extracted = detail.find_elements("css selector", "table.scoring td.extracted")[0].text
    assert extracted == (row.answer.iloc[0] or "")
    assert top["answer"] == extracted
    verdict = detail.find_elements("css selector", "table.scoring td.verdict-cell .verdict")[0]
    assert verdict.get_attribute("data-letter") == "W"
    # why this verdict: the scorer's own words, the same the scorer gives on the stored response
    target = detail.find_element("css selector", "pre.target").text
    why = detail.find_elements("css selector", "table.scoring td.why")
    names = list(dict.fromkeys(samples[samples.benchmark == "zerobench"].scoring))
    for name, cell in zip(names, why, strict=True):
        assert cell.text == SCORERS[name](stored["response"], target).explanation
    assert why[0].text.startswith("upstream rule: ") and "differs from" in why[0].text
    thumbs[0].click()  # opens full size
    assert browser.find_element("id", "overlay").is_displayed()
    browser.save_screenshot(str(SHOTS / "zerobench-item.png"))
    browser.find_element("id", "overlay").click()


def test_a_rome_item_reads_its_judge_as_a_judge(store, browser):
    page = results_dir(store, "rome") / "report.html"
    open_page(browser, page, "#benchmark=rome&scoring=judge&status=judged")
    shown = rows(browser)
    scorings = ["upstream", "fixed", "judge", "judge_upstream"]
    assert shown and all(r["verdicts"][scorings.index("judge")] in ("r", "w") for r in shown)
    detail = open_first_item(browser)
    top = shown[0]
    judged = record(store, "rome", "judgements", top["model"], "rome", top["sample"])
    words = detail.find_element("css selector", "pre.judge-words").text
    assert words == judged["response"].strip() and "Judgement" in words
    table = browser.execute_script(
        "return [...document.querySelectorAll('#detail table.scoring tr.scoring-row')].map((tr) =>"
        " [...tr.querySelectorAll('td'), tr.nextElementSibling.querySelector('td.why')]"
        ".map((td) => td.textContent))"
    )
    samples = result_table(store, "rome", "samples.parquet")
    mine = samples[
        (samples.model == top["model"])
        & (samples.sample_id == top["sample"])
        & (samples.epoch == int(top["epoch"]))
    ].set_index("scoring")
    assert [r[0] for r in table] == scorings
    for name, by, answer, _, why in table:
        if name.startswith("judge"):  # a verdict, never an "extracted answer" of 0 or 1
            assert (by, answer) == ("judge anthropic/sim-0.9", "graded the response")
            reply = judged["response"]
            parser, verdict = (
                ("our robust", parse_robust(reply))
                if name == "judge"
                else ("upstream's", parse_upstream(reply))
            )
            assert why == (
                f"judge anthropic/sim-0.9: the judge's reply, read by {parser} parser, gives "
                f"Judgement: {verdict}"
            )
        else:
            assert (by, answer) == ("rules", mine.loc[name, "answer"] or "none read")
            assert why.startswith("ROME evaluator ") and f"({name} extraction)" in why
            assert why.endswith(f": score {float(mine.loc[name, 'value']):g}")
    # one badge per verdict in the whole item: the judge's own block has none
    badges = detail.find_elements("css selector", ".verdict")
    assert len(badges) == len(scorings)
    head = detail.find_element("css selector", ".judge-head").text
    usage = judged["usage"]
    assert head == (
        f"judge anthropic/sim-0.9 · tokens {fmt.tokens(usage['input_tokens'])} in / "
        f"{fmt.tokens(usage['output_tokens'])} out · {fmt.money(judged['cost_usd'])} · "
        f"{judged['latency_s']:.1f} s"
    )
    # every verdict badge of the list shows whole beside the open item: none is clipped
    open_page(browser, page, "#sort=cost&desc=1")
    open_first_item(browser)
    clipped = browser.execute_script(
        "return [...document.querySelectorAll('#items td.verdicts')]"
        ".filter((td) => td.scrollWidth > td.clientWidth).length"
    )
    assert clipped == 0
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


def one_view(driver) -> dict:
    until(driver, "return document.querySelector('#one pre.prompt')", "no one-sample view")
    return driver.execute_script(
        "return {prompts: document.querySelectorAll('#one pre.prompt').length,"
        " targets: document.querySelectorAll('#one pre.target').length,"
        " images: document.querySelectorAll('#one img.thumb').length,"
        " rows: [...document.querySelectorAll('#one tr.one-row')].map((tr) =>"
        "   [tr.querySelector('td.model .clip').title, tr.children[1].textContent]),"
        " responses: document.querySelectorAll('#one pre.response').length,"
        " listShown: !document.getElementById('main').hidden}"
    )


def test_one_sample_across_models_shows_the_prompt_once(store, browser):
    page = results_dir(store, "zerobench") / "report.html"
    open_page(browser, page, "#benchmark=zerobench")
    open_first_item(browser)
    top = rows(browser)[0]
    browser.find_element("tag name", "body").send_keys("o")
    view = one_view(browser)
    samples = items_of(result_table(store, "zerobench", "samples.parquet"))
    mine = samples[(samples.benchmark == "zerobench") & (samples.sample_id == top["sample"])]
    wanted = sorted((int(e), m) for m, e in zip(mine.model, mine.epoch, strict=True))
    assert (view["prompts"], view["targets"], view["images"]) == (1, 1, 1)
    assert [(int(e), m) for m, e in view["rows"]] == wanted  # epoch by epoch, both models
    assert {m for _, m in wanted} == {"openai/sim-0.3", "openai/sim-0.7"}
    assert view["responses"] == len(wanted) and not view["listShown"]
    assert f"one=zerobench%2F{top['sample']}" in browser.current_url
    # each verdict badge says why on hover: the scorer's words on that row's response
    first = browser.execute_script(
        "return [...document.querySelectorAll('#one tr.one-row')].map((tr) =>"
        " [tr.querySelector('.verdict').title, tr.querySelector('pre.response').textContent])"
    )
    target = mine.target.iloc[0]
    for title, response in first:
        said = SCORERS["upstream"](response, target)
        verdict = "right" if said.correct else "wrong"
        assert title == f"upstream: {verdict} — why: {said.explanation}"
    browser.save_screenshot(str(SHOTS / "one-sample.png"))
    browser.find_element("tag name", "body").send_keys("\ue00c")  # Escape: back to the list
    until(browser, "return !document.getElementById('main').hidden", "the list is not back")
    assert rows(browser)[0]["selected"]


def test_a_flipped_sample_opens_both_models_at_its_epoch(store, browser, capsys):
    # the two models of the run compared: kept with its results, the report written again
    pair = ["zerobench:openai/sim-0.3", "zerobench:openai/sim-0.7"]
    assert main(["compare", *pair, "--store", str(store)]) == 0
    capsys.readouterr()
    page = results_dir(store, "zerobench") / "report.html"
    open_page(browser, page)
    browser.execute_script("for (const d of document.querySelectorAll('details')) d.open = true")
    flip = browser.find_element("css selector", "#about a.flip")
    sample = flip.text
    flip.click()
    view = one_view(browser)
    assert view["prompts"] == 1
    assert view["rows"] == [["openai/sim-0.3", "0"], ["openai/sim-0.7", "0"]]
    letters = browser.execute_script(
        "return [...document.querySelectorAll('#one tr.one-row')].map((tr) =>"
        " tr.querySelector('.verdict').dataset.letter)"
    )
    assert sorted(letters) == ["R", "W"]  # it flipped
    assert "one=zerobench" in browser.current_url and sample in browser.current_url


def test_models_disagree_opens_the_sample_across_models(store, browser):
    page = results_dir(store, "rome") / "report.html"
    open_page(browser, page)
    browser.find_element("id", "f-disagree").click()
    shown = rows(browser)
    assert shown
    browser.find_element("css selector", "tr.item-row").click()
    view = one_view(browser)
    assert view["prompts"] == 1
    assert sorted(m for m, _ in view["rows"]) == ["openai/sim-0.3", "openai/sim-0.7"]
    assert {e for _, e in view["rows"]} == {shown[0]["epoch"]}


def test_the_list_sorts_moves_with_keys_and_keeps_it_in_the_address(store, browser):
    page = results_dir(store, "rome") / "report.html"
    open_page(browser, page)
    samples = items_of(result_table(store, "rome", "samples.parquet"))
    browser.find_element("css selector", "#items th[data-sort=tokens]").click()
    ascending = [r["tokens"] for r in rows(browser)]
    assert ascending == [fmt.tokens(t) for t in sorted(samples.output_tokens)]
    browser.find_element("css selector", "#items th[data-sort=tokens]").click()
    descending = [r["tokens"] for r in rows(browser)]
    assert descending == [fmt.tokens(t) for t in sorted(samples.output_tokens, reverse=True)]
    body = browser.find_element("tag name", "body")
    for key in ("j", "j", "j", "k"):
        body.send_keys(key)
    until(browser, "return document.querySelector('#detail pre.response')", "no item opened")
    shown = rows(browser)
    assert [r["selected"] for r in shown[:3]] == [False, True, False]
    body.send_keys("\ue015")  # the down arrow
    until(
        browser,
        "return document.querySelectorAll('tr.item-row')[2].classList.contains('selected')",
        "the arrow did not move the selection",
    )
    address = browser.current_url
    assert "sort=tokens&desc=1" in address
    chosen = shown[2]
    assert f"sample=rome%2F{chosen['sample']}%2F{chosen['epoch']}%2F" in address
    where, fragment = address.split("#")
    open_page(browser, Path(where.removeprefix("file://")), "#" + fragment)
    again = rows(browser)
    assert [r["tokens"] for r in again] == descending and again[2]["selected"]


def test_the_page_writes_figures_as_the_other_pages_do(store, browser):
    open_page(browser, results_dir(store, "omnibench") / "report.html")
    values = [0, 0.00077, 0.000501, 0.0125, 0.0625, 0.125, 0.5, 1.25, 2.5, 12.49, 1234.5, 98765.43]
    script = "return arguments[0].map((v) => [fmt.money(v), fmt.tokens(v), fmt.share(v)])"
    assert browser.execute_script(script, values) == [
        [fmt.money(v), fmt.tokens(v), fmt.share(v)] for v in values
    ]
    assert browser.execute_script("return fmt.interval(0.0461, 0.699)") == fmt.interval(
        0.0461, 0.699
    )


def test_a_leaderboard_cell_leads_to_its_answers(store, browser):
    browser.get((store / "leaderboard" / "index.html").as_uri())
    link = browser.find_element("link text", "openai/sim-0.7")
    href = link.get_attribute("href")
    link.click()
    until(browser, "return window.__reportReady || false", f"the report did not render: {href}")
    assert "/results/" in browser.current_url and "report.html#" in browser.current_url
    assert browser.find_element("id", "f-model").get_attribute("value") == "openai/sim-0.7"
    benchmark = browser.find_element("id", "f-benchmark").get_attribute("value")
    shown = rows(browser)
    assert benchmark and shown
    assert all(r["model"] == "openai/sim-0.7" and r["benchmark"] == benchmark for r in shown)


def test_the_list_filters_on_numbers_and_sample_fields_and_chooses_columns(store, browser):
    """Issue 49 point 2: a prompt column, `where` terms on the item's numbers and on the
    sample fields each benchmark declares, and a column chooser, all kept in the address."""
    from evalfleet.engine.store.stored import load_run
    from evalfleet.storage import open_store

    run = load_run(open_store(str(store)), "omnibench", read=False)
    audio = {s.id: s.metadata["audio_type"] for s in run.data["omnibench"].samples}
    samples = items_of(result_table(store, "omnibench", "samples.parquet"))
    page = results_dir(store, "omnibench") / "report.html"
    kind = sorted(set(audio.values()))[0]
    cut = int(samples.output_tokens.median())
    where = f"audio_type={kind} tokens>{cut}"
    wanted = samples[samples.sample_id.map(audio).eq(kind) & (samples.output_tokens > cut)]
    assert 0 < len(wanted) < len(samples)  # the filter can fail both ways
    open_page(browser, page, "#where=" + where.replace("=", "%3D").replace(">", "%3E"))
    assert browser.find_element("id", "count").text == f"{len(wanted)} of {len(samples)} items"
    shown = rows(browser)
    assert sorted((r["model"], r["sample"]) for r in shown) == sorted(
        zip(wanted.model, wanted.sample_id, strict=True)
    )
    first = shown[0]
    question = " ".join(run.data["omnibench"].by_id[first["sample"]].metadata["question"].split())
    assert first["prompt"] == (question if len(question) <= 120 else question[:119] + "…")
    # the chooser: the audio type shown as a column, the target hidden; the address keeps it
    browser.find_element("css selector", "#columns summary").click()
    browser.find_element("css selector", "#col-list input[data-col='f:audio_type']").click()
    browser.find_element("css selector", "#col-list input[data-col='target']").click()
    headers = browser.execute_script(
        "return [...document.querySelectorAll('#items th')].map((th) => th.dataset.sort)"
    )
    assert "f:audio_type" in headers and "target" not in headers and "prompt" in headers
    cells = browser.execute_script(
        "return [...document.querySelectorAll('#items td.field')].map((td) => td.textContent)"
    )
    assert cells == [kind] * len(shown)
    assert "cols=" in browser.current_url and "where=audio_type%3D" in browser.current_url
    assert no_sideways_scroll(browser)
    browser.save_screenshot(str(SHOTS / "list-where-columns.png"))
    open_page(browser, page, "#" + browser.current_url.split("#", 1)[1])  # the link, reopened
    assert browser.find_element("id", "count").text == f"{len(wanted)} of {len(samples)} items"
    assert browser.find_element("id", "f-where").get_attribute("value") == where
    # a term that cannot be read says so, and filters nothing
    open_page(browser, page, "#where=latency_ms~3")
    assert browser.find_element("id", "where-error").text == (
        '"latency_ms~3": latency_ms takes a number and > >= < <= = !='
    )
    assert browser.find_element("id", "count").text.startswith(f"{len(samples)} of ")
    # ROME's task and a latency in milliseconds
    rome = items_of(result_table(store, "rome", "samples.parquet"))
    rome_run = load_run(open_store(str(store)), "rome", read=False)
    task = {s.id: s.metadata["task"] for s in rome_run.data["rome"].samples}
    name = sorted(set(task.values()))[0]
    open_page(browser, results_dir(store, "rome") / "report.html", f"#where=task%3D{name}")
    assert browser.find_element("id", "count").text == (
        f"{int(rome.sample_id.map(task).eq(name).sum())} of {len(rome)} items"
    )


def test_the_raw_call_of_an_item_and_no_key_anywhere(store, browser):
    """Issue 49 point 1: every attempt of the call from the record's ledger, the decoding, the
    request body as built (media as notes, their thumbnails beside), the response as stored,
    copied or downloaded as JSON; the simulator's key in no block of any report."""
    import base64
    import gzip
    import re

    page = results_dir(store, "zerobench") / "report.html"
    open_page(browser, page, "#model=openai%2Fsim-0.3")
    detail = open_first_item(browser)
    top = rows(browser)[0]
    stored = record(store, "zerobench", "completions", top["model"], "zerobench", top["sample"])
    detail.find_element("css selector", "details.raw summary").click()
    attempts = browser.execute_script(
        "return [...document.querySelectorAll('#detail tr.attempt')].map((tr) =>"
        " [...tr.cells].map((td) => td.textContent))"
    )
    ledger = stored["ledger"]
    assert len(attempts) == len(ledger) >= 1
    first = ledger[0]
    assert attempts[0][:5] == ["1", first["at"][11:23], "200", "answer", first["request_id"]]
    body = json.loads(detail.find_element("css selector", "pre.raw-request").text)
    assert body["model"] == stored["api_model"] and body["seed"] == stored["request"]["seed"]
    assert body["temperature"] == stored["request"]["temperature"]
    content = body["messages"][0]["content"]
    prompt = detail.find_element("css selector", "pre.prompt").text
    assert content[0] == {"type": "text", "text": prompt}
    image = content[1]["image_url"]["url"]
    note = r"<image image/\w+, [\d,]+ bytes: part 2 of the prompt, shown above>"
    assert re.fullmatch(note, image), image
    assert detail.find_elements("css selector", "details.raw img.thumb")
    response = json.loads(detail.find_element("css selector", "pre.raw-response").text)
    assert response["text"] == stored["response"] and response["usage"] == stored["usage"]
    browser.execute_script("document.getElementById('raw').scrollIntoView()")
    browser.save_screenshot(str(SHOTS / "zerobench-raw.png"))
    downloaded = browser.execute_async_script(
        "const done = arguments[0];"
        "fetch(document.getElementById('raw-download').href).then((r) => r.text()).then(done)"
    )
    whole = json.loads(downloaded)
    assert whole["item"] == {
        "model": top["model"],
        "benchmark": "zerobench",
        "sample": top["sample"],
        "epoch": 0,
    }
    assert [a["request_id"] for a in whole["attempts"]] == [a["request_id"] for a in ledger]
    assert whole["request"] == body and whole["decoding"] == stored["request"]
    browser.find_element("id", "raw-copy").click()
    until(browser, "return document.getElementById('raw-copied').textContent", "no copy said")
    assert browser.find_element("id", "raw-copied").text == f"copied ({len(downloaded)} characters)"
    # the key: in no block of any report, decoded (the raw view's bodies are in gzipped blocks)
    for run_id in ("zerobench", "rome", "omnibench"):
        html = (results_dir(store, run_id) / "report.html").read_text()
        texts = [html]
        for block in re.findall(r"<script type='text/plain' id='[^']*'>(.*?)</script>", html):
            texts.append(gzip.decompress(base64.b64decode(block)).decode())
        assert len(texts) > 2
        for text in texts:
            assert SECRET not in text and "placeholder-never-sent" not in text
            assert "authorization" not in text.lower() and "x-api-key" not in text.lower()


def test_every_metric_the_aggregation_wrote_with_its_interval(store, browser):
    """What inspect view's "All scoring" dialog shows (every metric of every scorer), here with
    each group and interval: the section's rows are the metrics table's, in its order."""
    from evalfleet.reports.report_metrics import figure

    open_page(browser, results_dir(store, "omnibench") / "report.html")
    shown = browser.execute_script(
        "const d = [...document.querySelectorAll('#about details')].find((e) =>"
        " e.querySelector('summary').textContent.startsWith('Every metric'));"
        "d.open = true; d.scrollIntoView();"
        "return [d.querySelector('summary').textContent, [...d.querySelectorAll('tr')].map((tr)"
        " => [...tr.cells].map((c) => c.textContent))]"
    )
    title, table = shown
    metrics = result_table(store, "omnibench", "metrics.parquet")
    assert title == f"Every metric ({len(metrics)} figures: each scoring mode and group)"
    assert table[0] == [
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
    wanted = [
        [
            r.model,
            r.benchmark,
            r.scoring,
            r.metric,
            r.group or "all items",
            figure(r.value),
            "" if r.ci95_low != r.ci95_low else fmt.interval(r.ci95_low, r.ci95_high),
            str(r.n),
            r.note or "",
        ]
        for r in metrics.fillna({"group": "", "note": ""}).itertuples()
    ]
    assert table[1:] == wanted
    groups = {r[4] for r in wanted}
    assert "all items" in groups and len(groups) > 1  # the breakdowns too
    assert any(r[6] for r in wanted) and no_sideways_scroll(browser)
    assert figure(6.0) == "6" and figure(0.25) == "0.250" and figure(None) == "—"
    browser.save_screenshot(str(SHOTS / "every-metric.png"))


def test_an_item_shows_its_sample_metadata_and_filters_on_a_field(store, browser):
    """inspect view's metadata tab: the item folds its sample's whole metadata, names the
    fields its benchmark declares on the fold's line, and a click on one lists its items."""
    from evalfleet.engine.store.stored import load_run
    from evalfleet.reports.report_fields import metadata_of
    from evalfleet.storage import open_store

    run = load_run(open_store(str(store)), "omnibench", read=False)
    page = results_dir(store, "omnibench") / "report.html"
    open_page(browser, page)
    detail = open_first_item(browser)
    top = rows(browser)[0]
    sample = run.data["omnibench"].by_id[top["sample"]]
    fold = detail.find_element("css selector", "details.sample-meta")
    kind, task = sample.metadata["audio_type"], sample.metadata["task_type"]
    pairs = metadata_of(sample)
    said = fold.find_element("tag name", "summary").text
    named = " · ".join(f"{n} {v}" for n, v in pairs if n in ("task_type", "audio_type"))
    assert said == f"sample metadata ({len(pairs)} fields): {named}"
    assert f"task_type {task}" in named and f"audio_type {kind}" in named
    fold.find_element("tag name", "summary").click()
    table = browser.execute_script(
        "return [...document.querySelectorAll('#detail details.sample-meta tr')].map((tr) =>"
        " [...tr.cells].map((c) => c.textContent))"
    )
    assert table == pairs and ["audio_type", kind] in table
    browser.find_element(
        "css selector", f"#detail summary a.where-link[data-term='audio_type={kind}']"
    ).click()
    samples = items_of(result_table(store, "omnibench", "samples.parquet"))
    audio = {s.id: s.metadata["audio_type"] for s in run.data["omnibench"].samples}
    wanted = int(samples.sample_id.map(audio).eq(kind).sum())
    assert 0 < wanted < len(samples)
    count = until(
        browser,
        "const t = document.getElementById('count').textContent;"
        "return t.startsWith(arguments[0]) && t",
        "the field's link did not filter",
        f"{wanted} of ",
    )
    assert count == f"{wanted} of {len(samples)} items"
    assert browser.find_element("id", "f-where").get_attribute("value") == f"audio_type={kind}"
    assert f"where=audio_type%3D{kind}" in browser.current_url
    assert metadata_of(
        type(sample)(id="x", parts=[], target="", metadata={"b": b"12345", "l": [1, "a"]})
    ) == [
        ["b", "<5 bytes>"],
        ["l", '[1, "a"]'],
    ]
    browser.save_screenshot(str(SHOTS / "omnibench-metadata.png"))


def test_the_where_names_verdicts_by_scoring_mode_and_takes_or(store, browser):
    """inspect view's filter reads `upstream == 0 and robust == 1`; the report's where takes
    the same on any scoring mode (`upstream=wrong judge=right`) and `or` between groups."""
    samples = result_table(store, "rome", "samples.parquet")
    total = len(items_of(samples))
    verdict = samples.pivot_table(
        index=["model", "sample_id", "epoch"], columns="scoring", values="correct", aggfunc="first"
    ).astype(bool)
    page = results_dir(store, "rome") / "report.html"

    def count(where: str) -> str:
        open_page(browser, page, "#where=" + where.replace("=", "%3D").replace(" ", "%20"))
        return browser.find_element("id", "count").text

    rescued = int((~verdict.upstream & verdict.judge).sum())
    either = int((~verdict.upstream & verdict.judge | (verdict.fixed & ~verdict.judge)).sum())
    assert 0 < rescued < either < total  # each term can fail
    assert count("upstream=wrong judge=right") == f"{rescued} of {total} items"
    assert count("upstream=0 judge=1") == f"{rescued} of {total} items"
    assert count("upstream=wrong judge=right or fixed=right judge!=right") == (
        f"{either} of {total} items"
    )
    assert browser.find_element("id", "where-error").text == ""
    assert count("judge=maybe") == f"{total} of {total} items"
    assert browser.find_element("id", "where-error").text == (
        '"judge=maybe": judge is a scoring mode: use = or != and right, wrong, error or unscorable'
    )
    count("or tokens>3")
    assert browser.find_element("id", "where-error").text == '"or" needs terms on both sides'


def test_the_list_shows_model_ids_verdicts_and_figures_whole(store, browser):
    """inspect view's grid shows each column's values whole; the report's list, beside an
    open item at 1400 pixels, shows the model, the sample id, the epoch, the verdicts, the
    tokens, the latency and the cost whole too (their headers as well): only the texts
    (prompt, answer, target) end in an ellipsis."""
    whole = ["model", "sample", "epoch", "verdict", "tokens", "latency", "cost"]
    for run_id in ("zerobench", "rome", "omnibench"):
        open_page(browser, results_dir(store, run_id) / "report.html")
        open_first_item(browser)
        clipped = browser.execute_script(
            "const keys = [...document.querySelectorAll('#items th')].map((th) =>"
            " th.dataset.sort);"
            "const cut = (e) => e.scrollWidth > e.clientWidth;"
            "return arguments[0].map((key) => { const k = keys.indexOf(key);"
            " const cells = [...document.querySelectorAll('#items tr')].map((tr) => tr.cells[k]);"
            " return [key, cells.filter(cut).map((c) => c.textContent)]; })",
            whole,
        )
        assert clipped == [[key, []] for key in whole], run_id
        costs = [r["cost"] for r in rows(browser)]
        assert all(c.startswith("$") and "…" not in c for c in costs)
        assert no_sideways_scroll(browser)
    browser.save_screenshot(str(SHOTS / "list-whole-columns.png"))


def kept_dark(browser, page, html: str) -> bool:
    """The page opened again is dark. Chromium hands a click's localStorage write to its
    browser process asynchronously, and on a loaded host the next page's renderer may read
    storage before that write lands: then one more opening, a second later, must show it."""
    for _ in range(3):
        open_page(browser, page)
        if browser.execute_script(html)[0] == "dark":
            return True
        time.sleep(1)
    return False


def test_dark_or_light_is_kept_and_an_item_prints_alone(store, browser):
    """inspect view's theme switch and its Print: the report turns dark (its images as they
    are) and stays so when opened again; printed, an item is the whole page, nothing else."""
    page = results_dir(store, "zerobench") / "report.html"
    html = (
        "const root = document.documentElement;"
        "return [root.className, getComputedStyle(root).filter]"
    )
    try:
        open_page(browser, page)
        assert browser.find_element("id", "theme").text == "dark"
        assert browser.execute_script(html) == ["", "none"]
        browser.find_element("id", "theme").click()
        assert browser.execute_script(html) == ["dark", "invert(1) hue-rotate(180deg)"]
        assert browser.find_element("id", "theme").text == "light"
        assert kept_dark(browser, page, html)  # opened again: still dark
        detail = open_first_item(browser)
        thumb = detail.find_element("css selector", "img.thumb")
        assert browser.execute_script("return getComputedStyle(arguments[0]).filter", thumb) == (
            "invert(1) hue-rotate(180deg)"  # inverted twice: as it is
        )
        browser.save_screenshot(str(SHOTS / "dark.png"))
        browser.find_element("id", "theme").click()
        assert browser.execute_script(html) == ["", "none"]
        assert detail.find_element("id", "print-item").text == "print"
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
        shown = browser.execute_script(
            "const on = (id) => getComputedStyle(document.getElementById(id)).display !== 'none';"
            "const d = getComputedStyle(document.getElementById('detail'));"
            "return [['top', 'filters', 'list', 'about', 'detail'].filter(on), d.position,"
            " d.maxHeight, getComputedStyle(document.getElementById('print-item')).display]"
        )
        assert shown == [["detail"], "static", "none", "none"]
        browser.save_screenshot(str(SHOTS / "printed-item.png"))
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
        browser.execute_script("localStorage.clear(); document.documentElement.className = ''")


def test_a_column_dragged_wider_keeps_its_width_in_the_address(store, browser):
    """inspect view's grid columns resize by dragging: so do the list's, the width kept in the
    address (`widths=prompt:N`); the drag sorts nothing; a double click fits it again."""
    from selenium.webdriver.common.action_chains import ActionChains

    page = results_dir(store, "rome") / "report.html"
    open_page(browser, page)
    width = "return document.querySelector('#items th[data-sort=prompt]').offsetWidth"
    before = browser.execute_script(width)
    grip = browser.find_element("css selector", "#items th[data-sort=prompt] .col-grip")
    ActionChains(browser).click_and_hold(grip).move_by_offset(90, 0).release().perform()
    after = browser.execute_script(width)
    assert abs(after - (before + 90)) <= 2
    assert f"widths=prompt%3A{before + 90}" in browser.current_url
    assert "sort=" not in browser.current_url and not browser.find_elements(
        "css selector", "#items th.sorted"
    )
    assert no_sideways_scroll(browser)
    clipped = "return [...document.querySelectorAll('#items td.num')].filter((td) =>"
    clipped += " td.scrollWidth > td.clientWidth).map((td) => td.textContent)"
    assert browser.execute_script(clipped) == []  # the other columns gave way, not the figures
    open_page(browser, page, "#" + browser.current_url.split("#", 1)[1])  # the link, reopened
    assert abs(browser.execute_script(width) - (before + 90)) <= 2
    grip = browser.find_element("css selector", "#items th[data-sort=prompt] .col-grip")
    ActionChains(browser).double_click(grip).perform()
    assert browser.execute_script(width) == before and "widths=" not in browser.current_url


def test_texts_on_three_lines_as_inspect_views_grid_shows_them(store, browser):
    """inspect view's grid shows up to three lines of each input; the chooser's "3 lines" does
    so for the prompt, answer and target, kept in the address (`lines=3`)."""
    page = results_dir(store, "rome") / "report.html"
    open_page(browser, page)
    high = "return document.querySelector('tr.item-row').getBoundingClientRect().height"
    one = browser.execute_script(high)
    browser.find_element("css selector", "#columns summary").click()
    browser.find_element("id", "f-lines").click()
    three = browser.execute_script(high)
    line = browser.execute_script(
        "const td = document.querySelector('#items td.prompt-cell');"
        "return parseFloat(getComputedStyle(td).lineHeight)"
    )
    prompt = browser.execute_script(
        "return document.querySelector('#items td.prompt-cell .t').getBoundingClientRect().height"
    )
    assert prompt == pytest.approx(3 * line, abs=1) and three > 2.5 * line > one
    assert "lines=3" in browser.current_url and rows(browser)[0]["prompt"]
    open_page(browser, page, "#" + browser.current_url.split("#", 1)[1])  # the link, reopened
    assert browser.execute_script(high) == three
    assert browser.find_element("id", "f-lines").is_selected()
    assert no_sideways_scroll(browser)
    browser.save_screenshot(str(SHOTS / "three-lines.png"))


def test_texts_render_as_markdown_on_the_readers_choice(store, browser):
    """inspect view renders messages as Markdown; the report shows the exact texts and, on
    "markdown" (kept in the address, `md=1`), renders them: a safe subset, nothing in a text
    becoming markup but it."""
    page = results_dir(store, "zerobench") / "report.html"
    open_page(browser, page)
    text = (
        "# Plan\nFirst **count** the `red` ones\nthen *multiply*.\n\n- one\n- two\n"
        "1. a\n2) b\n> said\n```\nx < y && z\n```\n[docs](https://example.org/a?b=1&c=2) "
        "<img src=x onerror=alert(1)> [bad](javascript:alert(1))"
    )
    assert browser.execute_script("return renderMarkdown(arguments[0])", text) == (
        '<p class="md-h md-h1">Plan</p>'
        "<p>First <strong>count</strong> the <code>red</code> ones then <em>multiply</em>.</p>"
        "<ul><li>one</li><li>two</li></ul><ol><li>a</li><li>b</li></ol>"
        '<blockquote>said</blockquote><pre class="md-code">x &lt; y &amp;&amp; z</pre>'
        '<p><a href="https://example.org/a?b=1&amp;c=2" rel="noopener noreferrer" '
        'target="_blank">docs</a> &lt;img src=x onerror=alert(1)&gt; [bad](javascript:alert(1))'
        "</p>"
    )
    detail = open_first_item(browser)
    response = detail.find_element("css selector", "pre.response").text
    detail.find_element("css selector", ".md-toggle").click()
    rendered = browser.execute_script(
        "return [...document.querySelectorAll('#detail div.md')].map((d) =>"
        " [d.previousElementSibling.className, d.innerHTML])"
    )
    prompt = browser.execute_script(
        "return document.querySelector('#detail pre.prompt').textContent"
    )
    html = (  # as the page holds it: innerHTML writes ' where renderMarkdown wrote &#39;
        "const d = document.createElement('div'); d.innerHTML = renderMarkdown(arguments[0]);"
        "return d.innerHTML"
    )
    assert rendered == [
        ["prompt", browser.execute_script(html, prompt)],
        ["response", browser.execute_script(html, response)],
    ]
    assert rendered[1][1] == "<p>" + " ".join(response.split("\n")) + "</p>"
    assert "md=1" in browser.current_url
    assert not detail.find_element("css selector", "pre.response").is_displayed()
    open_page(browser, page, "#" + browser.current_url.split("#", 1)[1])  # the link, reopened
    until(browser, "return document.querySelector('#detail div.md')", "not rendered again")
    browser.find_element("css selector", "#detail .md-toggle").click()
    assert browser.find_element("css selector", "#detail pre.response").is_displayed()
    assert not browser.find_elements("css selector", "#detail div.md")
    assert "md=1" not in browser.current_url


# A response as a model writes it: math in each form the Markdown view reads, what the old
# subset could not read (\color, \tag, \newcommand, \substack, align), what MathJax cannot
# read, and dollars and code that are not math.
MATH_RESPONSE = (
    "So $\\frac{1}{2}$ and \\(\\color{red}{x}\\) give \\boxed{24}."
    "\n\n$$\\sum_{\\substack{i<n\\\\j<m}} a_{ij} \\tag{7}$$"
    "\n\n\\[\\begin{align} a &= b \\\\ c &= d \\end{align}\\]"
    "\n\n$\\newcommand{\\R}{\\mathbb{R}} \\R^2$ then $\\R$, $\\foo{x}$, $x^{$ and $<script>$."
    '\n\n$\\mmlToken{mi}[href="javascript:alert(1)"]{x}$ and '
    "$\\bbox[background-image:url(http://127.0.0.1:9/b.png)]{y}$ stay inert."
    "\n\nIt costs $5 and $10, `$x$` stays.\n\n```\n$$y$$\n```"
    "\n\n$$" + "x + " * 300 + "x$$"  # wider than the page
)
MATHS = (  # each drawn formula: its MathML (MathJax's copy for screen readers) and red parts
    "return [...document.querySelectorAll('#detail div.md mjx-container')].map((c) => ["
    " c.getAttribute('display') === 'true',"
    " c.querySelector('mjx-assistive-mml > math').innerHTML,"
    " c.querySelectorAll('svg g[fill=\"red\"]').length])"
)


def test_math_renders_with_mathjax_in_the_markdown_view(store, browser, tmp_path):
    """inspect view renders LaTeX with MathJax; so does the report's Markdown view, with MathJax
    3.2.2 embedded in a page whose texts hold math (and only then): full TeX, \\color, \\tag,
    \\newcommand and align numbered, what MathJax cannot read shown as written in red, dollars
    and code left alone, no markup from a formula and nothing asked of the network."""
    from evalfleet.reports.mathjax import bundle
    from evalfleet.reports.report_data import gather
    from evalfleet.reports.report_page import render
    from evalfleet.storage.local import LocalStore

    plain = (results_dir(store, "zerobench") / "report.html").read_text()
    assert "window.MathJax = {" not in plain and len(plain) < 1_000_000  # no math in its texts
    data = gather(LocalStore(store), "zerobench")
    for at, chunk in enumerate(data.details):
        details = json.loads(gzip.decompress(chunk))
        for detail in details:
            detail["response"] = MATH_RESPONSE
        data.details[at] = gzip.compress(json.dumps(details).encode())
    text = render(data)
    assert text.count(bundle()) == 1 and len(text) - len(plain) > 2_000_000
    page = tmp_path / "math.html"
    page.write_text(text)
    open_page(browser, page)
    detail = open_first_item(browser)
    toggle = detail.find_element("css selector", ".md-toggle")
    assert "with math ($…$, \\(…\\), $$…$$, \\[…\\], \\boxed{})" in toggle.get_attribute("title")
    toggle.click()
    until(browser, "return !document.querySelector('#detail span.tex:not(.tex-done)')", "not drawn")
    ord_ = '<mrow data-mjx-texclass="ORD">'
    bb = f'{ord_}<mi mathvariant="double-struck">R</mi></mrow>'
    error = "Extra open brace or missing close brace"
    drawn = browser.execute_script(MATHS)
    assert drawn[-1][:2] == [True, "<mi>x</mi><mo>+</mo>" * 300 + "<mi>x</mi>"]
    assert drawn[:-1] == [
        [False, "<mfrac><mn>1</mn><mn>2</mn></mfrac>", 0],
        [False, f'<mstyle mathcolor="red">{ord_}<mi>x</mi></mrow></mstyle>', 1],  # drawn red
        [
            False,
            f'<menclose notation="box">{ord_}<mstyle displaystyle="true" scriptlevel="0">'
            f"{ord_}<mn>24</mn></mrow></mstyle></mrow></menclose>",
            0,
        ],
        [
            True,
            '<mtable displaystyle="true"><mlabeledtr><mtd><mtext>(7)</mtext></mtd><mtd><munder>'
            f'<mo data-mjx-texclass="OP">∑</mo>{ord_}<mtable data-mjx-smallmatrix="true" '
            'columnspacing="0em" rowspacing="0.1em"><mtr><mtd><mi>i</mi><mo>&lt;</mo><mi>n</mi>'
            "</mtd></mtr><mtr><mtd><mi>j</mi><mo>&lt;</mo><mi>m</mi></mtd></mtr></mtable></mrow>"
            f"</munder><msub><mi>a</mi>{ord_}<mi>i</mi><mi>j</mi></mrow></msub></mtd>"
            "</mlabeledtr></mtable>",
            0,
        ],
        [
            True,
            '<mtable displaystyle="true" columnalign="right left" columnspacing="0em" '
            'rowspacing="3pt"><mlabeledtr><mtd><mtext>(1)</mtext></mtd><mtd><mi>a</mi></mtd><mtd>'
            "<mi></mi><mo>=</mo><mi>b</mi></mtd></mlabeledtr><mlabeledtr><mtd><mtext>(2)</mtext>"
            "</mtd><mtd><mi>c</mi></mtd><mtd><mi></mi><mo>=</mo><mi>d</mi></mtd></mlabeledtr>"
            "</mtable>",
            0,
        ],
        [False, f"<msup>{bb}<mn>2</mn></msup>", 0],  # \newcommand, then \R in the next formula
        [False, bb, 0],
        [False, f'<mtext mathcolor="red">\\foo</mtext>{ord_}<mi>x</mi></mrow>', 1],  # as written
        [
            False,
            f'<merror data-mjx-error="{error}" title="{error}"><mtext>x^{{</mtext></merror>',
            0,
        ],
        [False, "<mo>&lt;</mo>" + "".join(f"<mi>{c}</mi>" for c in "script") + "<mo>&gt;</mo>", 0],
        [False, "<mi>x</mi>", 0],  # no javascript: link (MathJax's safe filter)
        [False, "<mstyle><mi>y</mi></mstyle>", 0],  # no url() asked of the network
    ]
    shown = browser.execute_script(
        "const md = document.querySelector('#detail pre.response + div.md');"
        "return [md.querySelectorAll('script, a, b, i').length,"
        " md.querySelector('pre.md-code').outerHTML,"
        " [...md.querySelectorAll('p')].at(-2).innerHTML,"
        " performance.getEntriesByType('resource').map((e) => e.name),"
        " [...md.querySelectorAll('mjx-assistive-mml')].map((m) => getComputedStyle(m).position),"
        " [...md.querySelectorAll('mjx-container')].map((c) => c.scrollWidth > c.clientWidth)]"
    )
    assert shown == [  # no markup from a formula, dollars and code as written, no network
        0,
        '<pre class="md-code">$$y$$</pre>',
        "It costs $5 and $10, <code>$x$</code> stays.",
        [],
        ["absolute"] * 13,  # MathJax's MathML copy, for screen readers, out of sight
        [False] * 12 + [True],  # the wide formula scrolls in its box, not the page sideways
    ]
    assert "md=1" in browser.current_url
    assert no_sideways_scroll(browser)
    browser.save_screenshot(str(SHOTS / "math-item.png"))
    box = browser.find_element("css selector", "#detail pre.response + div.md")
    box.screenshot(str(SHOTS / "math.png"))
    toggle.click()
    assert not browser.find_elements("css selector", "#detail div.md")
