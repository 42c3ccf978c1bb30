"""The leaderboard of a store, from real runs against the simulator (Ray, Prefect, local store).

Four small runs (4 main questions + 11 subquestions, greedy + 1 sampled epoch) go into one
store, each aggregated in its own second (results carry `written_at` to the second):

- `a-first`: sim-0.3 and sim-0.8, the first leaderboard;
- `b-redo`: sim-0.3 again with other seeds: a later complete result, with other values;
- `c-partial`: sim-0.8 and sim-0.5; then its zerobench answers are cut down (as a stopped run
  leaves them) and it is aggregated again: a later but incomplete zerobench result, a later
  complete subquestion one;
- `d-added`: sim-0.6, whose calls fail 30 % of the time with one attempt each, run through the
  `evaluate-and-aggregate` flow, whose leaderboard refresh flags it new.

Run ids sort in time order, so a board that kept the first result per key in directory order
instead of the latest would fail. Expected values are computed here from the stored records
and the runs' summary CSVs, never through `evalfleet.flows.leaderboard`; intervals through the one
function of their kind (`evalfleet.metrics.intervals`, checked against by-hand vectors in
tests/metrics), on unit values worked out here from the records.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime
from html import escape
from pathlib import Path
from unittest.mock import ANY
from urllib.parse import quote

import pandas as pd
import pytest

from evalfleet.api.launch import run_without_prefect
from evalfleet.cli.main import main
from evalfleet.engine.prepare.resolve import resolve
from evalfleet.engine.run.request import EvalRequest
from evalfleet.engine.scoring.aggregate import aggregate_run
from evalfleet.flows.pipeline import evaluate_and_aggregate
from evalfleet.metrics.intervals import unit_mean_interval, wilson
from evalfleet.reports.leaderboard import update
from evalfleet.simulator.process import start_simulator
from evalfleet.storage import open_store
from tests.support.browser import close, headless_chromium
from tests.support.helpers import results_dir, zerobench_samples

REPO = Path(__file__).resolve().parents[2]
SCREENSHOT = REPO / "tests" / "output" / "leaderboard" / "index.png"

BENCHMARKS = ["zerobench", "zerobench_subquestions"]
SCORINGS = ["upstream", "robust"]
EPOCHS = 2  # zerobench-paper with --epochs 1: the greedy epoch and one sampled epoch
# each benchmark's headline metric, as the summary tables name it
HEADLINE = {"zerobench": "accuracy", "zerobench_subquestions": "grouped_accuracy"}
SIMULATOR = {"latency": {"ms": 1}, "rules": [{"match": "sim-0.6", "faults": {"http_500": 0.3}}]}
RUNS = {  # run id: models, base seed, attempts per item
    "a-first": (["openai/sim-0.3", "openai/sim-0.8"], 42, 6),
    "b-redo": (["openai/sim-0.3"], 7, 6),
    "c-partial": (["openai/sim-0.8", "openai/sim-0.5"], 11, 6),
    "d-added": (["openai/sim-0.6"], 42, 1),
}
# where each (model, benchmark) result must come from
SOURCE = {
    ("openai/sim-0.3", "zerobench"): "b-redo",  # later and complete: replaces a-first
    ("openai/sim-0.3", "zerobench_subquestions"): "b-redo",
    ("openai/sim-0.8", "zerobench"): "a-first",  # c-partial is later but incomplete there
    ("openai/sim-0.8", "zerobench_subquestions"): "c-partial",  # later and complete
    ("openai/sim-0.5", "zerobench"): "c-partial",  # incomplete, but the only result
    ("openai/sim-0.5", "zerobench_subquestions"): "c-partial",
    ("openai/sim-0.6", "zerobench"): "d-added",
    ("openai/sim-0.6", "zerobench_subquestions"): "d-added",
}
ADDED = "openai/sim-0.6"


def _after(store: Path, run_id: str) -> None:
    """Wait until the clock is past the second of the run's `written_at`, so the next
    aggregation writes a later one."""
    latest = json.loads((store / run_id / "results" / "latest.json").read_text())
    written = datetime.fromisoformat(latest["written_at"]).timestamp()
    time.sleep(max(0.0, written + 1.05 - time.time()))


def _latest_json(store: Path) -> dict:
    return json.loads((store / "leaderboard" / "latest.json").read_text())


def _cut_answers(run: Path, benchmark: str, first_sample: str) -> int:
    """Delete a benchmark's sampled epoch and the first sample's greedy answer, as a run
    stopped part-way leaves them."""
    removed = 0
    for path in (run / "completions").rglob("*.json"):
        record = json.loads(path.read_text())
        if record["benchmark"] == benchmark and (
            record["epoch"] == 1 or record["sample_id"] == first_sample
        ):
            path.unlink()
            removed += 1
    return removed


@pytest.fixture(scope="module")
def board(ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path_factory):
    work = tmp_path_factory.mktemp("leaderboard")
    store = work / "runs"
    seen: dict = {}
    with start_simulator(answer_key, SIMULATOR, work / "sim.jsonl") as sim:

        def request(run_id: str) -> EvalRequest:
            models, seed, attempts = RUNS[run_id]
            return EvalRequest(
                models=models,
                benchmarks=BENCHMARKS,
                dataset_path=demo_dataset,
                epochs=1,
                base_seed=seed,
                max_attempts=attempts,
                run_id=run_id,
                store=str(store),
                simulator_url=sim.url,
                workers=1,
            )

        run_without_prefect(resolve(request("a-first")))
        seen["after_first"] = _latest_json(store)
        _after(store, "a-first")
        run_without_prefect(resolve(request("b-redo")))
        _after(store, "b-redo")
        run_without_prefect(resolve(request("c-partial")))
        seen["after_partial_run"] = _latest_json(store)
        first = zerobench_samples("zerobench", demo_dataset)[0].id
        seen["cut"] = _cut_answers(store / "c-partial", "zerobench", first)
        aggregate_run(open_store(str(store)), "c-partial")
        before, _ = update(open_store(str(store)))
        seen["before_added"] = before
        _after(store, "c-partial")
        evaluate_and_aggregate(request("d-added"))  # refreshed within its flow run
    return store, seen


# --- expected values, by hand ----------------------------------------------------------------


def upstream_correct(response: str | None, target: str) -> bool:
    found = re.findall(r"\{(.*?)\}", (response or "").strip().lower())
    return bool(found) and found[-1] == target.strip().lower()


def run_records(store: Path, run_id: str, model: str, benchmark: str) -> list[dict]:
    records = [json.loads(p.read_text()) for p in (store / run_id / "completions").rglob("*.json")]
    return [r for r in records if r["model"] == model and r["benchmark"] == benchmark]


def expected_rows(store: Path, dataset: str) -> list[dict]:
    rows = []
    for (model, benchmark), run_id in SOURCE.items():
        samples = zerobench_samples(benchmark, dataset)
        targets = {s.id: s.target for s in samples}
        groups = {s.id: s.group_id or s.id for s in samples}
        records = run_records(store, run_id, model, benchmark)
        done = [r for r in records if r["error"] is None]
        right = sum(upstream_correct(r["response"], targets[r["sample_id"]]) for r in done)
        greedy = [r for r in records if r["epoch"] == 0]
        metric = HEADLINE[benchmark]
        summary = pd.read_csv(results_dir(store, run_id) / f"summary_{benchmark}.csv")
        samples_table = pd.read_parquet(results_dir(store, run_id) / "samples.parquet")
        latest = json.loads((store / run_id / "results" / "latest.json").read_text())
        cost = round(sum(r["cost_usd"] for r in records), 6)
        tokens = sum(r["usage"]["output_tokens"] for r in done)
        expected = len(samples) * EPOCHS
        # the headline's units: the greedy epoch; a failed call counts as wrong
        right_at = {
            r["sample_id"]: r["error"] is None
            and upstream_correct(r["response"], targets[r["sample_id"]])
            for r in greedy
        }
        if benchmark == "zerobench":  # one 0/1 question per unit: Wilson
            interval = wilson(sum(right_at.values()), len(right_at))
            units = len(right_at)
        else:  # a main question's subquestions: the mean, bootstrapped over main questions
            by_main: dict[str, list[float]] = {}
            for sid, right_ in right_at.items():
                by_main.setdefault(groups[sid], []).append(float(right_))
            ordered = [sum(v) / len(v) for _, v in sorted(by_main.items())]  # by unit id
            interval = unit_mean_interval(ordered)
            units = len(by_main)
        for scoring in SCORINGS:
            line = summary[(summary.model == model) & (summary.scoring == scoring)]
            assert len(line) == 1, (run_id, model, benchmark, scoring)
            value = float(line[metric].iloc[0])
            assert float(line["cost_usd"].iloc[0]) == pytest.approx(cost, abs=1e-9)
            # the summary table shows the same interval
            assert float(line["ci95_low"].iloc[0]) == pytest.approx(interval.low, abs=1e-12)
            assert float(line["ci95_high"].iloc[0]) == pytest.approx(interval.high, abs=1e-12)
            correct = int(
                samples_table[
                    (samples_table.model == model)
                    & (samples_table.benchmark == benchmark)
                    & (samples_table.scoring == scoring)
                ]["correct"].sum()
            )
            # the simulator always answers in braces: both readings agree with ours
            assert correct == right, (run_id, model, benchmark, scoring)
            rows.append(
                {
                    "benchmark": benchmark,
                    "scoring": scoring,
                    "model": model,
                    "metric": metric,
                    "value": value,
                    "ci95_low": interval.low,
                    "ci95_high": interval.high,
                    "interval_method": interval.method,
                    "units": units,
                    "done": len(done),
                    "expected": expected,
                    "errors": len(records) - len(done),
                    "coverage": f"{len(done)}/{expected}",
                    "complete": len(records) == expected,
                    "mean_output_tokens": tokens / len(done),
                    "cost_usd": cost,
                    "correct": right,
                    "cost_per_correct_usd": cost / right if right else None,
                    "new": model == ADDED,
                    "run_id": run_id,
                    "version": latest["version"],
                    "written_at": latest["written_at"],
                }
            )
    for row in rows:  # 4 main questions: too few for a paired interval, so no complete row is
        # significantly better than another: all rank 1, one band; partial rows are not ranked
        row["rank"] = 1 if row["complete"] else None
        row["band"] = 1 if row["complete"] else None
    order = {(b, s): i for i, (b, s) in enumerate((b, s) for b in BENCHMARKS for s in SCORINGS)}
    return sorted(
        rows,
        key=lambda r: (
            order[(r["benchmark"], r["scoring"])],
            not r["complete"],
            -r["value"],
            r["model"],
        ),
    )


def items_of(store: Path, benchmark: str = "zerobench") -> str:
    table = pd.read_parquet(store / "leaderboard" / "leaderboard.parquet")
    return table[table.benchmark == benchmark]["items"].iloc[0]


def ranked_models(rows: list[dict], benchmark: str, scoring: str) -> list[str]:
    return [r["model"] for r in rows if (r["benchmark"], r["scoring"]) == (benchmark, scoring)]


@pytest.fixture(scope="module")
def expected(board, demo_dataset) -> list[dict]:
    store, _ = board
    return expected_rows(store, demo_dataset)


# --- the tests -------------------------------------------------------------------------------


@pytest.mark.slow
def test_parquet_matches_the_runs_results(board, expected):
    store, _ = board
    table = pd.read_parquet(store / "leaderboard" / "leaderboard.parquet")
    assert len(table) == len(SOURCE) * len(SCORINGS) == len(expected)
    keys = ["benchmark", "scoring", "model"]
    assert table[keys].values.tolist() == [[r[k] for k in keys] for r in expected]
    exact = ["metric", "units", "done", "expected", "errors", "coverage", "complete"]
    exact += ["interval_method", "correct", "new", "run_id", "version", "written_at"]
    close = ["value", "ci95_low", "ci95_high", "mean_output_tokens", "cost_usd"]
    for row, want in zip(table.to_dict("records"), expected, strict=True):
        where = (want["model"], want["benchmark"], want["scoring"])
        for column in exact:
            assert row[column] == want[column], (where, column)
        for column in close:
            assert row[column] == pytest.approx(want[column], abs=1e-9), (where, column)
        assert row["cost_per_correct_usd"] == pytest.approx(want["cost_per_correct_usd"], abs=1e-6)
        for column in ("rank", "band"):
            got = None if pd.isna(row[column]) else int(row[column])
            assert got == want[column], (where, column)
    # one item set per benchmark: the demo dataset, every sample of it
    assert table.groupby("benchmark").item_set.nunique().to_dict() == dict.fromkeys(BENCHMARKS, 1)
    assert table.item_set.str.fullmatch(r"is-[0-9a-f]{12}").all()
    labels = table.drop_duplicates("benchmark").set_index("benchmark")["items"]
    assert labels["zerobench"].startswith("4 samples, dataset at ")
    assert labels["zerobench_subquestions"].startswith("11 samples, dataset at ")
    # the data exercise every rule: errors, a partial row (not ranked), both kinds of interval
    assert table.errors.max() > 0 and not table.complete.all()
    assert table[~table.complete]["rank"].isna().all()
    assert set(table.interval_method) == {"wilson", "small-sample Wilson"}  # under 30 units
    # the CSV is the same table
    csv = pd.read_csv(store / "leaderboard" / "leaderboard.csv")
    shown = [*keys, "item_set", "run_id", "coverage", "new"]
    assert csv[shown].values.tolist() == table[shown].values.tolist()
    assert csv["rank"].fillna(0).tolist() == table["rank"].fillna(0).tolist()


@pytest.mark.slow
def test_latest_complete_result_per_key_wins(board, expected):
    store, seen = board
    written = {
        run_id: json.loads((store / run_id / "results" / "latest.json").read_text())["written_at"]
        for run_id in RUNS
    }
    assert written["a-first"] < written["b-redo"] < written["c-partial"] < written["d-added"]
    rows = {(r["model"], r["benchmark"], r["scoring"]): r for r in expected}
    table = pd.read_parquet(store / "leaderboard" / "leaderboard.parquet")
    got = table.set_index(["model", "benchmark", "scoring"])
    # b-redo replaced a-first's sim-0.3, whose own result was different
    first = pd.read_csv(results_dir(store, "a-first") / "summary_zerobench.csv")
    first = first[(first.model == "openai/sim-0.3") & (first.scoring == "upstream")].iloc[0]
    redo = rows[("openai/sim-0.3", "zerobench", "upstream")]
    assert (first["accuracy"], first["cost_usd"]) != (redo["value"], redo["cost_usd"])
    assert got.loc[("openai/sim-0.3", "zerobench", "upstream"), "run_id"] == "b-redo"
    assert got.loc[("openai/sim-0.3", "zerobench", "upstream"), "value"] == redo["value"]
    # c-partial's zerobench answers were cut (1 greedy + 4 sampled of each model's 8)
    assert seen["cut"] == 2 * 5
    partial = pd.read_csv(results_dir(store, "c-partial") / "summary_zerobench.csv")
    assert set(partial.model) == {"openai/sim-0.8", "openai/sim-0.5"}
    for scoring in SCORINGS:
        kept = got.loc[("openai/sim-0.8", "zerobench", scoring)]
        assert (kept["run_id"], kept["coverage"], bool(kept["complete"])) == (
            "a-first",
            "8/8",
            True,
        )
        sub = got.loc[("openai/sim-0.8", "zerobench_subquestions", scoring)]
        assert (sub["run_id"], sub["coverage"], bool(sub["complete"])) == (
            "c-partial",
            "22/22",
            True,
        )
        only = got.loc[("openai/sim-0.5", "zerobench", scoring)]
        assert (only["run_id"], only["coverage"], bool(only["complete"])) == (
            "c-partial",
            "3/8",
            False,
        )
        assert (only["units"], only["errors"]) == (3, 0)
        faulty = got.loc[(ADDED, "zerobench", scoring)]
        assert faulty["errors"] > 0 and bool(faulty["complete"])
        assert faulty["done"] + faulty["errors"] == faulty["expected"] == 8
    markdown = (store / "leaderboard" / "leaderboard.md").read_text()
    partial_table = markdown.split("Partial results, not ranked:", 1)[1].split("\n\n", 2)[1]
    assert re.search(r"\| openai/sim-0\.5 \| .* \| 3/8 \| ", partial_table), markdown


@pytest.mark.slow
def test_an_old_run_aggregated_again_does_not_displace_a_newer_one(board, tmp_path):
    """`evalfleet aggregate a-first` long after b-redo writes a-first's results anew: the board
    still takes b-redo's sim-0.3, the newer run, not the newer file (as history and drift do)."""
    store, _ = board
    copy = tmp_path / "runs"
    shutil.copytree(store, copy)
    opened = open_store(str(copy))
    aggregate_run(opened, "a-first")
    written = {
        run_id: json.loads((copy / run_id / "results" / "latest.json").read_text())["written_at"]
        for run_id in ("a-first", "b-redo")
    }
    assert written["a-first"] > written["b-redo"]  # the older run's file is now the newer
    for board_now in (update(opened, "a-first")[0], update(opened)[0]):  # as a run, as the CLI
        got = board_now.table.set_index(["model", "benchmark", "scoring"])
        for benchmark in BENCHMARKS:
            for scoring in SCORINGS:
                assert got.loc[("openai/sim-0.3", benchmark, scoring), "run_id"] == "b-redo"


@pytest.mark.slow
def test_new_flags_only_the_model_absent_from_the_previous_board(board, expected, tmp_path):
    store, seen = board
    # the first board of a store has nothing to compare with: nobody is new
    assert seen["after_first"]["models"] == ["openai/sim-0.3", "openai/sim-0.8"]
    assert seen["after_first"]["new"] == []
    # c-partial brought sim-0.5: its refresh flagged it, on each benchmark's headline scoring
    lines = seen["after_partial_run"]["new"]
    # (complete then: 4 main questions are too few for a paired interval, so all rank 1)
    assert lines == [
        f"openai/sim-0.5 is new: rank 1 of 3 on {b} (upstream; {items_of(store, b)})"
        for b in BENCHMARKS
    ]
    # a rebuild with no other model keeps the flags of the last change (the same change may
    # trigger several rebuilds: none of them must erase what the first one flagged)
    before = seen["before_added"]
    assert [line.split(" is new")[0] for line in before.new] == ["openai/sim-0.5"] * 2
    # its zerobench result was cut since: partial, and never called a rank
    assert before.new[0] == (
        f"openai/sim-0.5 is new: a partial result (3/8) on zerobench (upstream; "
        f"{items_of(store)}), not ranked"
    )
    assert set(before.table[before.table["new"]].model) == {"openai/sim-0.5"}
    assert set(before.table.model) == {"openai/sim-0.3", "openai/sim-0.5", "openai/sim-0.8"}
    # d-added's refresh (within its flow run) flags sim-0.6, and only it
    table = pd.read_parquet(store / "leaderboard" / "leaderboard.parquet")
    assert set(table[table.new].model) == {ADDED}
    assert table[table.model == ADDED].new.all() and len(table[table.new]) == 4
    mine = table[(table.model == ADDED) & (table.scoring == "upstream")].set_index("benchmark")
    peers = {
        b: sum(r["complete"] for r in expected if (r["benchmark"], r["scoring"]) == (b, "upstream"))
        for b in BENCHMARKS
    }
    assert all(mine.complete)  # ranked among the complete rows; the partial one apart

    latest = _latest_json(store)
    assert latest["new"] == [
        f"{ADDED} is new: rank 1 of {peers[b]} on {b} (upstream; {items_of(store, b)})"
        for b in BENCHMARKS
    ]
    assert latest["models"] == sorted({model for model, _ in SOURCE})
    assert latest["runs"] == 4
    # new means new since the last board with other models: building it again keeps the flags
    again = tmp_path / "again"
    shutil.copytree(store, again)
    rebuilt, _ = update(open_store(str(again)))
    assert rebuilt.new == latest["new"] and set(rebuilt.table[rebuilt.table.new].model) == {ADDED}


def plot_files(store: Path) -> list[str]:
    return sorted(p.name for p in (store / "leaderboard").glob("*.png"))


@pytest.mark.slow
def test_plots_decode_and_are_not_blank(board):
    from PIL import Image

    store, _ = board
    table = pd.read_parquet(store / "leaderboard" / "leaderboard.parquet")
    item_sets = table.drop_duplicates("benchmark").set_index("benchmark")["item_set"]
    colours = {  # a colour each plot draws with (sim-0.6, new, is drawn orange)
        "accuracy_ci": [(0x3A, 0x6E, 0xA5), (0xD9, 0x8C, 0x00)],
        "accuracy_vs_tokens": [(0x3A, 0x6E, 0xA5)],
        "cost_per_correct": [(0x5A, 0x9E, 0x6F)],
    }
    # one figure per plot, benchmark and item set; one history plot per benchmark
    assert plot_files(store) == sorted(
        [f"{stem}--{b}--{item_sets[b]}.png" for stem in colours for b in BENCHMARKS]
        + [f"history--{b}.png" for b in BENCHMARKS]
    )
    for stem, drawn in colours.items():
        for benchmark in BENCHMARKS:
            name = f"{stem}--{benchmark}--{item_sets[benchmark]}.png"
            image = Image.open(io.BytesIO((store / "leaderboard" / name).read_bytes()))
            image.load()
            assert image.format == "PNG", name
            width, height = image.size
            assert width >= 600 and height >= 250, (name, image.size)
            counts = image.convert("RGB").getcolors(maxcolors=width * height)
            assert len(counts) > 50, (name, len(counts))
            assert max(counts)[0] < 0.95 * width * height, name  # not mostly one colour
            present = {colour for _, colour in counts}
            for colour in drawn:
                assert colour in present, (name, colour)
    # zerobench's partial row (sim-0.5) is drawn apart, grey
    name = f"accuracy_ci--zerobench--{item_sets['zerobench']}.png"
    partial = Image.open(store / "leaderboard" / name)
    assert (0xB0, 0xB0, 0xB0) in {c for _, c in partial.convert("RGB").getcolors(10**7)}


# each table's shown rows, by the names of its columns
SHOWN_ROWS = """return [...document.querySelectorAll("table.board")].map(t => {
  const h = [...t.tHead.rows[0].cells].map(c => c.textContent);
  return [...t.tBodies[0].rows].filter(r => !r.hidden).map(r => [
    r.cells[h.indexOf("model")].textContent, r.cells[h.indexOf("run")].textContent,
    r.cells[h.indexOf("run")].querySelector("a").getAttribute("href")]);
});"""
FOLDED_PAGE_PX = 1800  # the page, plots folded: 1,660 px here (4,645 before they folded)


def page_state(driver) -> dict:
    from selenium.webdriver.common.by import By

    first = driver.find_elements(By.CSS_SELECTOR, "table.board")[0]
    return {
        "rows": driver.execute_script(SHOWN_ROWS),
        "count": driver.find_element(By.ID, "count").text,
        "search": driver.find_element(By.ID, "q").get_attribute("value"),
        "sorted": [
            (th.text, th.get_attribute("aria-sort"))
            for th in first.find_elements(By.CSS_SELECTOR, "th[aria-sort]")
        ],
    }


@pytest.mark.slow
def test_html_page_renders_in_headless_chromium(board, expected):
    from PIL import Image
    from selenium.webdriver.common.by import By

    store, _ = board
    page = store / "leaderboard" / "index.html"
    driver = headless_chromium(1400, 1000)
    try:
        driver.get(page.as_uri())
        assert driver.title == "evalfleet leaderboard"
        # contents: one link per section, in the page's order
        links = [
            (a.text, a.get_attribute("href").split("#", 1)[1])
            for a in driver.find_elements(By.CSS_SELECTOR, "#contents a")
        ]
        sections = [("New models", "new"), *((b, f"b-{b}") for b in BENCHMARKS)]
        sections += [("What it would take", "close"), ("History", "history")]
        assert links == sections
        headings = [
            driver.find_element(By.CSS_SELECTOR, f"section#{key} > h2").text for _, key in sections
        ]
        assert headings == [title for title, _ in sections]
        assert [s.get_attribute("id") for s in driver.find_elements(By.TAG_NAME, "section")] == [
            key for _, key in sections
        ]
        news = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#new li")]
        assert news == _latest_json(store)["new"]
        # per benchmark: its scoring modes, each with its complete rows, then the partial
        # ones apart; the run id in a column, linked to that run's report
        wanted = []
        for benchmark in BENCHMARKS:
            scorings = driver.find_elements(By.CSS_SELECTOR, f"section#b-{benchmark} h3")
            assert [h.text for h in scorings] == SCORINGS
            for scoring in SCORINGS:
                rows = [
                    r for r in expected if (r["benchmark"], r["scoring"]) == (benchmark, scoring)
                ]
                wanted.append([r for r in rows if r["complete"]])
                if not all(r["complete"] for r in rows):
                    wanted.append([r for r in rows if not r["complete"]])
        assert len(wanted) == 6
        shown = [
            [
                [r["model"], r["run_id"], f"../{r['run_id']}/results/{r['version']}/report.html"]
                for r in rows
            ]
            for rows in wanted
        ]
        first = page_state(driver)
        assert first == {"rows": shown, "count": "16 of 16 rows", "search": "", "sorted": []}
        tables = driver.find_elements(By.CSS_SELECTOR, "table.board")
        for table, rows in zip(tables, wanted, strict=True):
            flagged = [
                tr.find_element(By.CSS_SELECTOR, "td.l").text
                for tr in table.find_elements(By.CSS_SELECTOR, "tr.new")
            ]
            assert flagged == [r["model"] for r in rows if r["model"] == ADDED]
        # the plots: folded under their benchmark's tables, history in its own section
        folds = driver.execute_script(
            "return [...document.querySelectorAll('details.plots')].map(d => [d.parentNode.id,"
            " d.open, d.querySelector('summary').textContent,"
            " [...d.querySelectorAll('img')].map(i => i.alt)])"
        )
        names = plot_files(store)
        assert folds == [
            [f"b-{b}", False, "3 plots", [n for n in names if n.split("--")[1] == b]]
            for b in BENCHMARKS
        ] + [["history", False, "2 plots", [n for n in names if n.startswith("history--")]]]
        folded = int(driver.execute_script("return document.documentElement.scrollHeight"))
        assert folded < FOLDED_PAGE_PX, folded
        assert driver.execute_script(
            "return document.documentElement.scrollWidth <= window.innerWidth"
        )
        for summary in driver.find_elements(By.CSS_SELECTOR, "details.plots summary"):
            summary.click()
        images = driver.execute_script(
            "return Array.from(document.images).map("
            "i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight, i.offsetHeight])"
        )
        assert sorted(alt for alt, *_ in images) == names
        for alt, complete, width, height, drawn in images:
            with Image.open(store / "leaderboard" / alt) as png:
                assert complete and (width, height) == png.size and drawn > 200, alt
        unfolded = int(driver.execute_script("return document.documentElement.scrollHeight"))
        assert unfolded > folded + sum(drawn for *_, drawn in images)
        # the legend cites the docs' table of methods (docs/results.md)
        assert "Intervals and ranks" in driver.find_element(By.CSS_SELECTOR, "p.legend").text
        driver.get(page.as_uri())  # folded again
        # a click on "value" sorts the first table (zerobench, upstream) up, then down
        heads = driver.find_elements(By.CSS_SELECTOR, "table.board")[0].find_elements(
            By.TAG_NAME, "th"
        )
        value = next(th for th in heads if th.text == "value")
        value.click()
        up = sorted(wanted[0], key=lambda r: r["value"])
        assert page_state(driver)["rows"][0] == [[r["model"], r["run_id"], ANY] for r in up]
        value.click()
        down = sorted(wanted[0], key=lambda r: -r["value"])
        # a search keeps the rows whose model or run id hold every word, in every table
        box = driver.find_element(By.ID, "q")
        box.send_keys("c-partial")
        state = page_state(driver)
        part = [r for rows in wanted for r in rows if r["run_id"] == "c-partial"]
        assert state["count"] == f"{len(part)} of 16 rows" == "6 of 16 rows"
        assert [row[1] for rows in state["rows"] for row in rows] == ["c-partial"] * 6
        assert state["rows"][0] == [
            [r["model"], r["run_id"], ANY] for r in down if r["run_id"] == "c-partial"
        ]
        assert state["sorted"] == [("value", "descending")]
        notes = driver.execute_script(
            "return [...document.querySelectorAll('table.board tfoot tr')].map(r => !r.hidden)"
        )  # "no row of this table matches the search" under the tables left empty
        assert notes == [not any(r["run_id"] == "c-partial" for r in rows) for rows in wanted]
        assert notes.count(True) == 2
        assert driver.current_url.split("#", 1)[1] == "q=c-partial&t0=3%3Adesc"
        # a contents link scrolls to its section and keeps the state in the URL
        driver.find_element(By.CSS_SELECTOR, "#contents a[href='#history']").click()
        assert driver.execute_script("return window.scrollY") > 0
        assert driver.current_url.split("#", 1)[1] == "q=c-partial&t0=3%3Adesc"
        driver.refresh()  # the same view again
        assert page_state(driver) == state
        driver.get(page.as_uri())
        assert page_state(driver) == first
        # the whole page in one screenshot: a viewport as tall as the page
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1400, "height": folded, "deviceScaleFactor": 1, "mobile": False},
        )
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(SCREENSHOT))
    finally:
        close(driver)
    with Image.open(SCREENSHOT) as shot:
        shot.load()
        assert shot.size == (1400, folded)
        counts = shot.convert("RGB").getcolors(maxcolors=shot.size[0] * shot.size[1])
        assert len(counts) > 50


def section_tables(output: str, benchmark: str, scoring: str) -> list[list[str]]:
    """The model column of each table of one section of `evalfleet leaderboard`'s output."""
    block = output.split(f"\n## {benchmark} — {scoring}\n", 1)[1].split("\n## ", 1)[0]
    found, current = [], []
    for line in block.splitlines() + [""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            header = [cell.strip() for cell in current[0].strip("|").split("|")]
            column = header.index("model")
            found.append([row.strip("|").split("|")[column].strip() for row in current[2:]])
            current = []
    return found


@pytest.mark.slow
def test_cli_prints_the_board_and_opens_the_page(board, expected, tmp_path):
    store, _ = board
    copy = tmp_path / "runs"
    shutil.copytree(store, copy)
    (copy / "leaderboard" / "index.html").unlink()
    # $BROWSER is a recorder: --open hands it the page's URI, and nothing else happens
    opened = tmp_path / "opened.txt"
    recorder = tmp_path / "browser.sh"
    recorder.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {opened}\n')
    recorder.chmod(0o755)
    done = subprocess.run(
        [sys.executable, "-m", "evalfleet.cli.main", "leaderboard", "--store", str(copy), "--open"],
        cwd=REPO,
        env={**os.environ, "BROWSER": str(recorder)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    output = done.stdout
    for benchmark in BENCHMARKS:
        for scoring in SCORINGS:
            rows = [r for r in expected if (r["benchmark"], r["scoring"]) == (benchmark, scoring)]
            wanted = [[r["model"] for r in rows if r["complete"]]]
            if not all(r["complete"] for r in rows):
                wanted.append([r["model"] for r in rows if not r["complete"]])
            assert section_tables(output, benchmark, scoring) == wanted
    assert re.search(r"\| openai/sim-0\.5 \| .* \| 3/8 \| ", output), output
    # the last change brought sim-0.6: still flagged (no other model came since)
    flagged = [line[2:] for line in output.splitlines() if "is new" in line]
    assert flagged == _latest_json(copy)["new"] and all(ADDED in line for line in flagged)
    page = copy / "leaderboard" / "index.html"
    assert output.rstrip().splitlines()[-2:] == [
        f"4 runs; tables and plots in {copy}/leaderboard/",
        f"page: {page}",
    ]
    assert opened.read_text() == page.as_uri()
    html = page.read_text()
    assert html.startswith("<!doctype html>")
    table = pd.read_parquet(page.parent / "leaderboard.parquet")
    for row in table.itertuples(index=False):  # each cell links to its answers in its report
        fragment = f"model={quote(row.model, safe='')}&benchmark={row.benchmark}"
        link = f"../{row.run_id}/results/{row.version}/report.html#{fragment}"
        href = escape(f"{link}&scoring={row.scoring}")  # "&" written as "&amp;" in HTML
        assert f"<td class='l'><a href='{href}'>{row.model}</a></td>" in html
        run = f"<td class='l run'><a href='{escape(link.split('#')[0])}'>{row.run_id}</a></td>"
        assert run in html


def test_cli_on_a_store_without_results(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["leaderboard", "--store", str(empty)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: no run in local directory {empty} has results yet: run `evalfleet run` (or "
        "`evalfleet aggregate RUN_ID`) first"
    )
    assert not (empty / "leaderboard").exists()
