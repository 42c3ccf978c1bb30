"""The paged report: a run above the threshold (lowered here to 200 items) gets `report.html`
and the folder `report_items/` beside it, files of 100 items, 10 prompts and 10 samples'
media. A ZeroBench run of 30 questions x 2 models x 5 epochs (300 items) with a judge (the
fallback parser reads the answers that broke the braces) and one call failed for good; the
records are written straight into a local store, aggregated and reported by the engine.

The samples table lists the items model by model (`engine.scoring.score.stored_answers`), so
the details files hold them in that order: an item of openai/sim-0.7 past its 50th is in the
last file. The index, the texts, prompts, media and meta must be those of the single page
written from the same run, item for item."""

from __future__ import annotations

import base64
import gzip
import io
import json
import math
import re
import shutil
import time
from pathlib import Path

import pytest

MODELS = ["openai/sim-0.3", "openai/sim-0.7"]
JUDGE = "anthropic/sim-0.9"
QUESTIONS, EPOCHS = 30, 5
FAILED = (MODELS[1], "29", 4)  # file position 150 + 28 * 5 + 4 = 294: the last file
ZEBRA = (MODELS[1], "25", 2)  # 150 + 24 * 5 + 2 = 272: the last file too
PAGING = {"above": 200, "items": 100, "samples": 10, "media": 10}
FLOATS = ("latency", "cost", "judge_cost")


def write_dataset(path: Path) -> str:
    import datasets
    from PIL import Image

    from evalfleet.benchmarks.zerobench.dataset import upstream_features

    def png(i: int) -> bytes:
        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), (i * 8 % 256, 40, 90)).save(buffer, "PNG")
        return buffer.getvalue()

    features = upstream_features()
    rows = {
        "question_id": [str(i + 1) for i in range(QUESTIONS)],
        "question_text": [f"How many dots in picture {i + 1}?" for i in range(QUESTIONS)],
        "question_images_decoded": [[{"bytes": png(i), "path": None}] for i in range(QUESTIONS)],
        "question_images": [[f"images/{i + 1}_0.png"] for i in range(QUESTIONS)],
        "question_answer": [str(i * 7 % 50) for i in range(QUESTIONS)],
        "image_attribution": ["generated"] * QUESTIONS,
    }
    datasets.disable_progress_bars()
    dataset = datasets.Dataset.from_dict(rows, features=features)
    datasets.DatasetDict({"zerobench": dataset}).save_to_disk(str(path))
    return str(path)


def record(item, response: str | None, n: int, *, judge: str | None = None) -> bytes:
    failed = response is None
    return json.dumps(
        {
            "record_version": 2,
            "run_id": "paged",
            "stage": "judge" if judge else "answer",
            "judge_model": judge,
            "model": item.key.model,
            "benchmark": "zerobench",
            "sample_id": item.key.sample_id,
            "epoch": item.key.epoch,
            "request_hash": item.request_hash,
            "provider": "openai",
            "api_model": "sim",
            "model_reported": "sim",
            "request": item.decoding.to_dict(),
            "response": response,
            "reasoning": None,
            "finish_reason": None if failed else "stop",
            "usage": {"input_tokens": 100 + n, "output_tokens": 20 + n % 17, "reasoning_tokens": 0},
            "cost_usd": 0.0001 * (1 + n % 5),
            "cost": None,
            "latency_s": 0.25 + n % 13 / 10,
            "attempts": 3 if failed else 1,
            "attempt_errors": [],
            "error": {"type": "server_error", "status": 500, "message": "the server broke"}
            if failed
            else None,
            "batch": None,
        }
    ).encode()


def response_of(n: int, where: tuple[str, str, int], target: str) -> str:
    if where == ZEBRA:
        return "A zebra-crossing of dots, $\\frac{6}{2}$. So the final answer is {3}"  # math
    if n % 7 == 3:
        return f"I count them: it is {target}"  # no braces: the judge reads it
    return f"Counting. So the final answer is {{{target if n % 3 else 99}}}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    from evalfleet.engine.prepare.resolve import resolve
    from evalfleet.engine.run.items import answer_items, judge_item
    from evalfleet.engine.run.request import EvalRequest
    from evalfleet.engine.scoring.aggregate import aggregate_run
    from evalfleet.engine.store.manifest import open_run
    from evalfleet.storage import open_store

    work = tmp_path_factory.mktemp("paged")
    request = EvalRequest(
        models=MODELS,
        benchmarks=["zerobench"],
        dataset_path=write_dataset(work / "zerobench"),
        protocol="sampled-k",
        epochs=EPOCHS,
        run_id="paged",
        store=str(work / "runs"),
        judge_model=JUDGE,
        simulator_url="http://127.0.0.1:9",  # never called: the records are written here
    )
    run = resolve(request)
    open_run(run.store, run.manifest, run.data, False)
    bodies = {}
    for n, item in enumerate(answer_items(run)):
        key = item.key
        where = (key.model, key.sample_id, key.epoch)
        if where == FAILED:
            bodies[item.failure_key(1_700_000_000_000)] = record(item, None, n)
            continue
        response = response_of(n, where, run.data["zerobench"].by_id[key.sample_id].target)
        bodies[item.store_key] = record(item, response, n)
        judged = judge_item(run, JUDGE, key, item.store_key, response)
        if judged is not None:
            reply = "{" + response.rsplit(" ", 1)[-1] + "}" if n % 2 else "it does not say"
            bodies[judged[0].store_key] = record(judged[0], reply, n, judge=JUDGE)
    run.store.put_many_if_absent(bodies)
    aggregate_run(open_store(str(work / "runs")), "paged")
    return work / "runs"


@pytest.fixture(scope="module")
def page(runs) -> Path:
    from evalfleet.reports.report import write_report
    from evalfleet.reports.report_paged import Paging
    from evalfleet.storage import open_store

    return Path(write_report(open_store(str(runs)), "paged", paging=Paging(**PAGING)))


def chunk_value(path: Path):
    call = re.fullmatch(r'reportChunk\("([^"]*)", "([^"]*)"\);\n', path.read_text())
    assert call is not None and call[1] == path.stem
    return json.loads(gzip.decompress(base64.b64decode(call[2])))


def paged_index(folder: Path) -> tuple[dict, dict]:
    """index.js read back: its header and its columns as Python lists."""
    import numpy as np

    script = re.fullmatch(r'self\.REPORT_INDEX = "([^"]*)";\n', (folder / "index.js").read_text())
    blob = gzip.decompress(base64.b64decode(script[1]))
    length = int.from_bytes(blob[:4], "little")
    head = json.loads(blob[4 : 4 + length])
    start = -(-(4 + length) // 8) * 8
    columns = {
        name: np.frombuffer(blob, "<" + kind, count, start + offset).tolist()
        for name, (kind, offset, count) in head["columns"].items()
    }
    for name in FLOATS:  # a code per item into the distinct values in order, NaN first
        values = columns[f"{name}.values"]
        assert values[0] != values[0] and values[1:] == sorted(set(values[1:]))
        columns[name] = [values[code] for code in columns[name]]
    return head, columns


def page_meta(page: Path) -> dict:
    found = re.search(r"<script type='application/json' id='meta'>(.*?)</script>", page.read_text())
    return json.loads(found[1])


def test_a_run_above_the_threshold_is_paged_from_files_beside_the_page(page):
    from evalfleet.reports.mathjax import bundle

    folder = page.parent / "report_items"
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        *(f"details-00000{i}.js" for i in range(3)),
        "index.js",
        "mathjax.js",  # the zebra's response holds a formula
        *(f"media-00000{i}.js" for i in range(3)),
        *(f"prompts-00000{i}.js" for i in range(3)),
    ]
    text = page.read_text()
    assert "<script src='report_items/index.js'></script>" in text
    assert "<script src='report_items/mathjax.js'></script>" in text
    assert "id='index'" not in text and "id='details-0'" not in text
    assert (folder / "mathjax.js").read_text() == bundle() and "window.MathJax = {" not in text
    meta = page_meta(page)
    paged = {"folder": "report_items", "files": 3, "mathjax": "mathjax.js"}
    assert (meta["items"], meta["paged"]) == (300, paged)
    assert "300 items: this page reads them from the folder report_items/ beside it" in text
    head, columns = paged_index(folder)
    assert (head["items"], head["width"], head["chunk"]) == (300, 3, 100)
    assert head["scorings"] == {"zerobench": ["upstream", "robust", "judge"]}
    assert [len(chunk_value(folder / f"details-00000{i}.js")) for i in range(3)] == [100] * 3
    assert [len(chunk_value(folder / f"prompts-00000{i}.js")) for i in range(3)] == [10] * 3
    # the failed call: its letters, and its texts in the last file, from its failure record
    failed = columns["letters"].index(ord("E")) // 3
    assert columns["at"][failed] == 294
    assert bytes(columns["letters"][failed * 3 : failed * 3 + 3]) == b"EEE"
    last = chunk_value(folder / "details-000002.js")
    assert last[94]["error"] == {
        "type": "server_error",
        "status": 500,
        "message": "the server broke",
    }
    assert last[94]["attempts"] == 3 and last[72]["response"].startswith("A zebra-crossing")


def test_the_paged_index_and_texts_are_the_single_pages(runs, page):
    """Item for item: the same order, fields, letters, answers, texts, judges' words, prompts,
    media and meta as the single page of the same run."""
    from evalfleet.reports.report_data import gather
    from evalfleet.storage import open_store

    single = gather(open_store(str(runs)), "paged")
    folder = page.parent / "report_items"
    head, columns = paged_index(folder)
    assert head["samples"] == single.index["samples"]
    assert (head["models"], head["benchmarks"]) == (MODELS, ["zerobench"])
    details = [d for chunk in single.details for d in json.loads(gzip.decompress(chunk))]
    paged = [d for i in range(3) for d in chunk_value(folder / f"details-00000{i}.js")]
    assert len(single.index["items"]) == 300
    for i, item in enumerate(single.index["items"]):
        item[9] = math.floor(item[9] * 1000) / 1000  # the paged index's latency: to the ms
        mine = [
            *(columns[c][i] for c in ("model", "bench", "sample", "epoch")),
            bytes(columns["letters"][i * 3 : i * 3 + 3]).decode(),
            head["answers"][columns["answer"][i]],
            *(columns[c][i] for c in ("tin", "tout", "treason")),
            *(None if v != v else v for v in (columns[c][i] for c in FLOATS)),
        ]
        assert mine == item
        assert paged[columns["at"][i]] == details[i]
    assert sum(bool(d["judges"]) for d in paged) == 43  # the answers without braces
    prompts = [p for chunk in single.prompts for p in json.loads(gzip.decompress(chunk))]
    assert [p for i in range(3) for p in chunk_value(folder / f"prompts-00000{i}.js")] == prompts
    media = {}
    for i in range(3):
        media.update({int(k): v for k, v in chunk_value(folder / f"media-00000{i}.js").items()})
    assert media == single.media and len(media) == QUESTIONS
    meta = page_meta(page)
    for key in ("coverage", "headline", "agreement", "benchmarks", "items", "media_note"):
        assert meta[key] == single.meta[key], key


def test_up_to_the_threshold_the_report_stays_one_page(runs, tmp_path):
    from evalfleet.reports.mathjax import bundle
    from evalfleet.reports.report import write_report
    from evalfleet.reports.report_paged import Paging
    from evalfleet.storage import open_store

    copy = tmp_path / "runs"
    shutil.copytree(runs, copy, ignore=shutil.ignore_patterns("report*"))
    where = write_report(open_store(str(copy)), "paged", paging=Paging(**{**PAGING, "above": 300}))
    page = Path(where)
    assert not (page.parent / "report_items").exists()
    text = page.read_text()
    assert "id='index'" in text and "<script src='report_items" not in text
    assert text.count(bundle()) == 1  # MathJax embedded: the zebra's response holds a formula
    assert page_meta(page)["items"] == 300 and "paged" not in page_meta(page)


def test_an_item_listed_twice_apart_is_refused(runs, tmp_path):
    """The writer reads the samples table an item at a time: an item whose rows are not
    together would be two rows of the list."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from evalfleet.reports.report import write_report
    from evalfleet.reports.report_paged import Paging
    from evalfleet.storage import open_store

    copy = tmp_path / "runs"
    shutil.copytree(runs, copy, ignore=shutil.ignore_patterns("report*"))
    table_path = next(copy.glob("paged/results/v-*/samples.parquet"))
    table = pq.read_table(table_path)
    pq.write_table(pa.concat_tables([table, table.slice(0, 1)]), table_path)
    with pytest.raises(ValueError, match="lists openai/sim-0.3 zerobench 1 epoch 0 twice"):
        write_report(open_store(str(copy)), "paged", paging=Paging(**PAGING))


# --- in the browser ------------------------------------------------------------------------


def until(driver, script: str, what: str):
    deadline = time.monotonic() + 20
    while not (found := driver.execute_script(script)):
        assert time.monotonic() < deadline, what
        time.sleep(0.05)
    return found


def shown_rows(driver) -> list[list[str]]:
    return driver.execute_script(
        "return [...document.querySelectorAll('tr.item-row')].map((tr) =>"
        " [tr.cells[0].title, tr.cells[2].textContent, tr.cells[4].textContent])"
    )


def stored(runs: Path, model: str, sample: str, epoch: int) -> dict:
    folder = runs / "paged" / "completions" / model.replace("/", "%2F") / "zerobench" / sample
    (path,) = folder.glob(f"{epoch}.*.json")
    return json.loads(path.read_text())


def open_row(driver, index: int) -> str:
    driver.find_elements("css selector", "tr.item-row")[index].click()
    until(driver, "return document.querySelector('#detail .kv')", "the item did not open")
    return driver.find_element("id", "detail").text


@pytest.mark.slow
def test_filters_cover_every_file_and_later_pages_read_later_files(runs, page):
    from selenium.webdriver.support.ui import Select

    from tests.support.browser import close, headless_chromium

    driver = headless_chromium(1400, 1000)
    try:
        driver.get(page.as_uri())
        until(driver, "return window.__reportReady || false", "the paged report did not render")
        count, pages = (driver.find_element("id", i).text for i in ("count", "page"))
        assert (count, pages) == ("300 of 300 items", "page 1 of 3")
        # in the single page's order: sample ids as text, then epoch, then model
        assert shown_rows(driver)[:3] == [
            [MODELS[0], "1", "0"],
            [MODELS[1], "1", "0"],
            [MODELS[0], "1", "1"],
        ]
        loaded = "return [...chunkCache.keys()]"

        # a where term over the index: the output tokens of every file's items at once
        _, columns = paged_index(page.parent / "report_items")
        tokens = [int(v) for v in columns["tout"]]
        cut = sorted(tokens)[len(tokens) // 2]
        wanted = sum(v > cut for v in tokens)
        assert 0 < wanted < 300
        driver.find_element("id", "f-where").send_keys(f"tokens>{cut}")
        until(
            driver,
            f"return document.getElementById('count').textContent === '{wanted} of 300 items'",
            "the where did not filter the index",
        )
        assert "where=tokens%3E" in driver.current_url
        driver.execute_script(
            "const e = document.getElementById('f-where'); e.value = '';"
            "e.dispatchEvent(new Event('input'));"
        )
        until(
            driver,
            "return document.getElementById('count').textContent === '300 of 300 items'",
            "the where was not cleared",
        )

        # a filter over the index finds the failed call, whose texts are in the last file
        Select(driver.find_element("id", "f-status")).select_by_value("error")
        assert driver.find_element("id", "count").text == "1 of 300 items"
        assert shown_rows(driver) == [[MODELS[1], "29", "4"]]
        text = open_row(driver, 0)
        assert "error server_error 500: the server broke" in text and "attempts 3" in text
        assert "details-000002" in driver.execute_script(loaded)
        assert driver.execute_script("return C.at[state.item]") == 294

        # the search reads every file's texts: a word of one response in the last file
        Select(driver.find_element("id", "f-status")).select_by_value("")
        box = driver.find_element("id", "f-q")
        box.send_keys("zebra-crossing")
        until(
            driver,
            "return document.getElementById('count').textContent === '1 of 300 items'",
            "the search did not find the response in the last file",
        )
        assert shown_rows(driver) == [[MODELS[1], "25", "2"]]
        text = open_row(driver, 0)
        assert stored(runs, *ZEBRA)["response"] in text

        # the last page of the list: its last item read from its own file
        driver.execute_script(
            "const e = document.getElementById('f-q'); e.value = '';"
            "e.dispatchEvent(new Event('input'));"
        )
        until(
            driver,
            "return document.getElementById('count').textContent === '300 of 300 items'",
            "the search was not cleared",
        )
        driver.find_element("id", "next").click()
        driver.find_element("id", "next").click()
        assert driver.find_element("id", "page").text == "page 3 of 3"
        rows = shown_rows(driver)
        assert len(rows) == 100 and rows[-1] == [MODELS[1], "9", "4"]
        text = open_row(driver, 99)
        want = stored(runs, MODELS[1], "9", 4)
        assert want["response"] in text and "tokens in / out / reasoning" in text
        assert driver.execute_script("return C.at[state.item]") == 150 + 8 * 5 + 4
        assert "details-000001" in driver.execute_script(loaded)
        image = driver.find_element("css selector", "#detail img.thumb")
        assert image.get_attribute("src").startswith("data:image/png;base64,")
        assert "media-000000" in driver.execute_script(loaded)

        # the same sample across both models and five epochs, from two files
        driver.find_element("tag name", "body").send_keys("o")
        until(driver, "return document.querySelectorAll('#one tr.one-row').length", "no view")
        models = driver.execute_script(
            "return [...document.querySelectorAll('#one tr.one-row')].map((tr) =>"
            " tr.querySelector('td.model .clip').title)"
        )
        assert models == [m for _ in range(EPOCHS) for m in MODELS]
    finally:
        close(driver)


@pytest.mark.slow
def test_the_page_without_its_folder_says_so(page, tmp_path):
    from tests.support.browser import close, headless_chromium

    alone = tmp_path / "report.html"
    shutil.copy(page, alone)
    driver = headless_chromium(1400, 1000)
    try:
        driver.get(alone.as_uri())
        until(driver, "return document.getElementById('count').textContent", "nothing said")
        assert driver.find_element("id", "count").text == (
            "report_items/index.js was not found beside this page: keep the folder with it"
        )
    finally:
        close(driver)
