"""`evalfleet compare` on a simulated run of 200 questions and two models (accuracy 0.3 and
0.7): the difference is significant, the flips are the samples table's, and the interval and
p-value match what this file works out from the correctness vectors. A run against itself
gives 0 and p = 1; two results versions of one run show the scorer that changed."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from benchmarks.answer_key import write_answer_key
from cli.main import main
from engine import results
from perf.throughput import write_dataset
from simulator.process import start_simulator
from tests.helpers import result_table

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

STRONG, WEAK = "openai/sim-0.7", "openai/sim-0.3"


@pytest.fixture(scope="module")
def run(ray_address, prefect_api_url, tmp_path_factory):
    work = tmp_path_factory.mktemp("compare")
    dataset = write_dataset(work / "zerobench", 200)
    answers = write_answer_key(dataset, ["zerobench"], work / "answers.jsonl")
    runs = work / "runs"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_ADDRESS", ray_address)
        patch.setenv("PREFECT_API_URL", prefect_api_url)
        with start_simulator(answers, {"latency": {"ms": 1}}, work / "sim.jsonl") as sim:
            code = main(
                ["run", "-m", STRONG, "-m", WEAK, "-b", "zerobench", "--protocol", "greedy"]
                + ["--epochs", "1"]
                + ["--dataset-path", dataset, "--run-id", "cmp", "--store", str(runs)]
                + ["--simulator-url", sim.url]
            )
    assert code == 0
    return runs, work


def compare(capsys, runs, work, a: str, b: str) -> dict:
    out = work / "out.json"
    assert main(["compare", a, b, "--store", str(runs), "--json", str(out)]) == 0
    capsys.readouterr()
    return json.loads(out.read_text())


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def test_two_models_of_one_run(run, capsys):
    runs, work = run
    result = compare(capsys, runs, work, f"cmp:{STRONG}", f"cmp:{WEAK}")
    row = next(r for r in result["rows"] if r["scoring"] == "upstream")
    samples = result_table(runs, "cmp", "samples.parquet")
    samples = samples[samples.scoring == "upstream"]  # in dataset order
    strong = samples[samples.model == STRONG].set_index("sample_id").correct
    weak = samples[samples.model == WEAK].set_index("sample_id").correct
    assert len(strong) == len(weak) == 200

    # the flips are the samples table's discordant pairs
    assert set(row["flips_a"]) == set(strong[strong & ~weak].index)
    assert set(row["flips_b"]) == set(weak[weak & ~strong].index)
    b, c = len(row["flips_a"]), len(row["flips_b"])
    # McNemar, exactly: 2 P(X <= min(b, c)) for X ~ Binomial(b + c, 1/2)
    p = 2 * sum(math.comb(b + c, i) for i in range(min(b, c) + 1)) / 2 ** (b + c)
    assert row["p"] == pytest.approx(min(1.0, p), rel=1e-12)
    # the interval: the documented draws (numpy's default_rng(0), 2000 x 200 picks of groups
    # numbered in order of first appearance), each group one sample here, the difference of
    # the means over the samples drawn
    order = list(dict.fromkeys(samples[samples.model == STRONG].cluster))
    a_value = strong.astype(float).reindex(order).to_numpy()
    b_value = weak.astype(float).reindex(order).to_numpy()
    picks = np.random.default_rng(0).integers(0, len(order), size=(2000, len(order)))
    diffs = [float(np.mean(a_value[row_] - b_value[row_])) for row_ in picks]
    assert row["difference"] == pytest.approx(strong.mean() - weak.mean(), abs=1e-12)
    assert row["low"] == pytest.approx(percentile(diffs, 0.025), abs=1e-12)
    assert row["high"] == pytest.approx(percentile(diffs, 0.975), abs=1e-12)
    # and it is significant
    assert row["low"] > 0 and row["p"] < 1e-6
    assert (row["items"], row["only_in_a"], row["only_in_b"]) == (200, 0, 0)
    assert [d["field"] for d in result["identity"]] == ["model", f"{STRONG} version reported"]


@pytest.mark.parametrize("side", ["cmp", f"cmp:{STRONG}"])
def test_a_run_against_itself(run, capsys, side):
    runs, work = run
    result = compare(capsys, runs, work, side, side)
    assert result["rows"]
    for row in result["rows"]:
        assert (row["difference"], row["low"], row["high"], row["p"]) == (0.0, 0.0, 0.0, 1.0)
        assert row["flips_a"] == row["flips_b"] == []
    assert result["identity"] == []
    if side == "cmp":  # every model against itself
        assert result["models"] == [[STRONG, STRONG], [WEAK, WEAK]]


def test_two_results_versions_show_the_scorer_change(run, capsys, monkeypatch):
    runs, work = run
    first = json.loads((runs / "cmp" / "results" / "latest.json").read_text())
    monkeypatch.setattr(results, "scorer_sha256", lambda: "f" * 64)  # a new scorer
    assert main(["aggregate", "cmp", "--store", str(runs)]) == 0
    second = json.loads((runs / "cmp" / "results" / "latest.json").read_text())
    assert second["version"] != first["version"] and second["scorer_sha256"] == "f" * 64
    result = compare(capsys, runs, work, f"cmp@{first['version']}", f"cmp@{second['version']}")
    fields = {d["field"]: (d["a"], d["b"]) for d in result["identity"]}
    assert fields == {"scorer": (first["scorer_sha256"][:12], "f" * 12)}
    assert all(r["difference"] == 0.0 for r in result["rows"])  # same records, same scores
    # the comparison is kept with A's results and shown in A's report
    kept = (runs / "cmp" / "results" / first["version"] / "compare").glob("*.json")
    assert f"cmp_{second['version']}.json" in {path.name for path in kept}
    page = (runs / "cmp" / "results" / first["version"] / "report.html").read_text()
    assert f"Comparison: cmp@{first['version']} vs cmp@{second['version']}" in page
