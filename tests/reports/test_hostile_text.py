"""Untrusted text in the run report: a dataset whose question, target and answers hold markup
(`<!--<script>`, `</script>`, `<img onerror>`, `|`, quotes). The records are written straight
into a local store (no provider call), then aggregated and reported by the engine.

The report embeds its data as JSON in `<script>` elements. A block holding `<!--<script>`
never closes for an HTML parser, which left the whole page dead; every `<` is now written as
`\\u003c` (`evalfleet.core.escape.json_for_html`), so each block parses back to the same values."""

from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path

import pytest

from evalfleet.storage import open_store

MODEL = "openai/sim-0.5"
HOSTILE = '<!--<script>alert(1)</script> | "it\'s" & <img src=x onerror=alert(2)>'
QUESTION = "How many <img src=x onerror=alert(3)> dots? </script><script>alert(4)</script>"
BLOCK = re.compile(r"<script type='application/json' id='([^']*)'>(.*?)</script>", re.S)


def write_dataset(path: Path) -> str:
    """ZeroBench's schema: one hostile question and one plain one, a small PNG each."""
    import datasets
    from PIL import Image

    from evalfleet.benchmarks.zerobench.dataset import upstream_features

    def png() -> bytes:
        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), "white").save(buffer, "PNG")
        return buffer.getvalue()

    features = upstream_features()
    rows = {
        "question_id": ["1", "2"],
        "question_text": [QUESTION, "How many dots?"],
        "question_images_decoded": [[{"bytes": png(), "path": None}] for _ in range(2)],
        "question_images": [["images/1_0.png"], ["images/2_0.png"]],
        "question_answer": [HOSTILE, "7"],
        "image_attribution": ["generated", "generated"],
    }
    datasets.disable_progress_bars()
    dataset = datasets.Dataset.from_dict(rows, features=features)
    datasets.DatasetDict({"zerobench": dataset}).save_to_disk(str(path))
    return str(path)


def record(item, response: str) -> bytes:
    return json.dumps(
        {
            "record_version": 2,
            "run_id": "hostile",
            "stage": "answer",
            "judge_model": None,
            "model": item.key.model,
            "benchmark": "zerobench",
            "sample_id": item.key.sample_id,
            "epoch": item.key.epoch,
            "request_hash": item.request_hash,
            "provider": "openai",
            "api_model": "sim-0.5",
            "model_reported": "sim-0.5",
            "request": item.decoding.to_dict(),
            "response": response,
            "reasoning": None,
            "finish_reason": "stop",
            "usage": {"input_tokens": 100, "output_tokens": 20, "reasoning_tokens": 0},
            "cost_usd": 0.0002,
            "cost": {
                "input": 0.0001,
                "cached_input": 0.0,
                "output": 0.0001,
                "reasoning": 0.0,
                "total": 0.0002,
            },  # fmt: skip
            "latency_s": 0.5,
            "attempts": 1,
            "attempt_errors": [],
            "error": None,
            "batch": None,
        }
    ).encode()


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory) -> Path:
    from evalfleet.engine.prepare.resolve import resolve
    from evalfleet.engine.run.items import answer_items
    from evalfleet.engine.run.request import EvalRequest
    from evalfleet.engine.scoring.aggregate import aggregate_run
    from evalfleet.engine.store.manifest import open_run
    from evalfleet.reports.report import write_report

    work = tmp_path_factory.mktemp("hostile")
    request = EvalRequest(
        models=[MODEL],
        benchmarks=["zerobench"],
        dataset_path=write_dataset(work / "zerobench"),
        protocol="greedy",
        epochs=1,
        run_id="hostile",
        store=str(work / "runs"),
        simulator_url="http://127.0.0.1:9",  # never called: the records are written here
    )
    run = resolve(request)
    open_run(run.store, run.manifest, run.data, False)
    bodies = {}
    for item in answer_items(run):
        target = run.data["zerobench"].by_id[item.key.sample_id].target
        bodies[item.store_key] = record(
            item, f"I see {HOSTILE}. So the final answer is {{{target}}}"
        )
    run.store.put_many_if_absent(bodies)
    store = open_store(str(work / "runs"))
    aggregate_run(store, "hostile")
    write_report(store, "hostile")
    return work / "runs"


@pytest.fixture(scope="module")
def report(hostile_store) -> Path:
    return next(hostile_store.glob("hostile/results/v-*/report.html"))


def test_every_data_block_parses_back_to_the_untrusted_text(report):
    page = report.read_text()
    blocks = dict(BLOCK.findall(page))
    assert {"meta", "index"} <= set(blocks)
    for name, text in blocks.items():
        assert "<" not in text and ">" not in text, name
        json.loads(text)  # each block is whole JSON
    assert json.loads(blocks["index"])["samples"] == [
        [0, "1", HOSTILE, QUESTION, []],
        [0, "2", "7", "How many dots?", []],
    ]
    assert page.rstrip().endswith("</script>\n</body></html>")


@pytest.mark.slow
def test_the_report_opens_and_shows_the_markup_as_text(report):
    from tests.support.browser import close, headless_chromium

    driver = headless_chromium()
    try:
        driver.get(report.as_uri())
        deadline = time.monotonic() + 10
        while not driver.execute_script("return window.__reportReady || false"):
            assert time.monotonic() < deadline, "the report did not render: a dead page"
            time.sleep(0.05)
        rows = driver.find_elements("css selector", "tr.item-row")
        assert len(rows) == 2
        hostile_row = next(r for r in rows if "<img" in r.text)
        assert HOSTILE in hostile_row.text
        hostile_row.click()
        deadline = time.monotonic() + 10
        while not driver.find_elements("css selector", "#detail pre.target"):
            assert time.monotonic() < deadline, "the item did not open"
            time.sleep(0.05)
        assert driver.find_element("css selector", "#detail pre.target").text == HOSTILE
        assert driver.find_elements("css selector", "img[onerror]") == []  # no alert either
    finally:
        close(driver)


def latest_artifacts() -> list:
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.sorting import ArtifactSort

    async def read() -> list:
        async with get_client() as client:
            return await client.read_artifacts(sort=ArtifactSort.CREATED_DESC, limit=50)

    return asyncio.run(read())


@pytest.mark.slow
def test_prefect_artifacts_show_names_and_lines_as_text(hostile_store, prefect_api_url):
    """What the aggregate and leaderboard flows publish, read back from a Prefect server:
    a name holding `|` and HTML (a store written before names were checked) is escaped in
    the tables, the Markdown, the lines and the descriptions."""
    from prefect import flow

    from evalfleet.engine.scoring.aggregate import aggregate_run
    from evalfleet.flows import aggregate, leaderboard
    from evalfleet.reports.leaderboard import update

    @flow(name="publish-hostile-names")
    def publish() -> None:  # as the flows publish them: from within a flow run
        store = open_store(str(hostile_store))
        result = aggregate_run(store, "hostile")
        result["summaries"]["zerobench"][0]["model"] = HOSTILE
        aggregate.publish_artifacts(result)
        board, _ = update(store)
        board.table["model"] = HOSTILE
        board.new = [f"new model {HOSTILE}"]
        leaderboard.publish_artifacts(board, f"{hostile_store}/<b>|x</b>")

    publish()
    published = latest_artifacts()
    by_key = {}
    for artifact in reversed(published):  # the latest of each key wins
        by_key[artifact.key] = artifact
    table = json.loads(by_key["summary-hostile-zerobench"].data)
    escaped = (
        '&lt;!--&lt;script&gt;alert(1)&lt;/script&gt; \\| "it\'s" &amp; '
        "&lt;img src=x onerror=alert(2)&gt;"
    )
    assert table[0]["model"] == escaped
    page = by_key["leaderboard"].data
    assert f"- new model {escaped}\n" in page
    assert f" | {escaped} | " in page  # its row in the table, one cell
    assert f"Files: {hostile_store}/&lt;b&gt;\\|x&lt;/b&gt;" in page
    texts = [f"{a.description} {a.data}" for a in by_key.values()]
    assert not [t for t in texts if "<img" in t or "<b>" in t or "<!--" in t]
