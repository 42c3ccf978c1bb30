"""Like with like: the leaderboard ranks a result only beside results on the same items.

One store holds a full run of model A on a 120-question dataset, a `--limit 10` run of model B
on the same dataset, and a run of model C on another dataset whose question ids 1..30 are the
first dataset's too. Each lands in a table of its own, ranked 1 there; no paired statistic
is ever computed across two item sets.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from evalfleet.benchmarks.answer_key import write_answer_key
from evalfleet.cli.main import main
from evalfleet.simulator.process import start_simulator
from perf.throughput import write_dataset

pytestmark = pytest.mark.slow  # starts Ray and a Prefect server

A, B, C = "openai/sim-0.6", "openai/sim-0.4", "openai/sim-0.5"


@pytest.fixture(scope="module")
def store(ray_address, prefect_api_url, tmp_path_factory):
    work = tmp_path_factory.mktemp("item-sets")
    full = write_dataset(work / "full", 120)
    other = write_dataset(work / "other", 30)
    runs = work / "runs"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_ADDRESS", ray_address)
        patch.setenv("PREFECT_API_URL", prefect_api_url)
        for dataset, model, run_id, extra in (
            (full, A, "full-a", []),
            (full, B, "smoke-b", ["--limit", "10"]),
            (other, C, "other-c", []),
        ):
            answers = write_answer_key(dataset, ["zerobench"], work / f"{run_id}.jsonl")
            with start_simulator(answers, {"latency": {"ms": 1}}, work / f"{run_id}.log") as sim:
                code = main(
                    ["run", "-m", model, "-b", "zerobench", "--protocol", "greedy", "--epochs"]
                    + ["1", "--dataset-path", dataset, "--run-id", run_id, "--store", str(runs)]
                    + ["--simulator-url", sim.url, *extra]
                )
            assert code == 0
    assert main(["leaderboard", "--store", str(runs)]) == 0
    return runs


def test_each_item_set_is_a_table_of_its_own(store):
    table = pd.read_csv(store / "leaderboard" / "leaderboard.csv")
    table = table[table.scoring == "upstream"].set_index("model")
    assert table.loc[[A, B, C], "rank"].tolist() == [1, 1, 1]
    assert table.loc[[A, B, C], "band"].tolist() == [1, 1, 1]
    assert table.loc[A, "item_set"] != table.loc[B, "item_set"] != table.loc[C, "item_set"]
    assert table.loc[A, "item_set"] != table.loc[C, "item_set"]
    assert table.loc[A, "items"].startswith("120 samples, dataset at ")
    assert table.loc[B, "items"].startswith("first 10 samples of sha256:")
    assert table.loc[C, "items"].startswith("30 samples, dataset at ")
    # ranks are unique to (benchmark, scoring, item set): each table holds one row here
    full = pd.read_csv(store / "leaderboard" / "leaderboard.csv")
    assert not full.duplicated(["benchmark", "scoring", "item_set", "model"]).any()
    assert full.groupby(["benchmark", "scoring", "item_set"]).size().max() == 1


def test_the_full_dataset_comes_first_and_nothing_is_paired_across_tables(store):
    page = (store / "leaderboard" / "leaderboard.md").read_text()
    section = page.split("## zerobench — upstream", 1)[1].split("\n## ", 1)[0]
    items = [line for line in section.splitlines() if line.startswith("Items: ")]
    assert [line.split(" ")[1] for line in items] == ["120", "30", "first"]
    # three one-row tables: no pair of neighbours, no "what it would take" across item sets
    assert "## What it would take" not in page
    latest = json.loads((store / "leaderboard" / "latest.json").read_text())
    assert latest["damaged"] == []
