"""`evalfleet compare` on a simulated run of 200 questions and two models (accuracy 0.3 and
0.7): the difference is significant, the flips are the samples table's, and the interval and
p-value match what this file works out from the correctness vectors. A run against itself
gives 0, p = 1 and an interval as wide as Wilson's bound on 0 of 200; two results versions of
one run show the scorer that changed, or the epochs a run grew by (not paired); runs on
different datasets share no item, whatever their ids."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from evalfleet.benchmarks.answer_key import write_answer_key
from evalfleet.cli.main import main
from evalfleet.engine.scoring import tables as results
from evalfleet.metrics.intervals import wilson
from evalfleet.reports import formatting as fmt
from evalfleet.simulator.process import start_simulator
from perf.throughput import write_dataset
from tests.support.helpers import result_table

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
    # the interval: the documented draws (numpy's default_rng(0), 10,000 x 200 picks of the
    # shared units sorted by id), each unit one sample here, the mean of the differences
    order = sorted(strong.index)
    d = (strong.astype(float) - weak.astype(float)).reindex(order).to_numpy()
    picks = np.random.default_rng(0).integers(0, len(order), size=(10_000, len(order)))
    diffs = list(d[picks].mean(axis=1))
    assert row["difference"] == pytest.approx(strong.mean() - weak.mean(), abs=1e-12)
    assert row["low"] == pytest.approx(percentile(diffs, 0.025), abs=1e-12)
    assert row["high"] == pytest.approx(percentile(diffs, 0.975), abs=1e-12)
    # and it is significant
    assert row["low"] > 0 and row["p"] < 1e-6
    assert (row["units"], row["only_in_a"], row["only_in_b"]) == (200, 0, 0)
    # the minimum detectable difference at 80 % power: (1.959964 + 0.841621) sd(d) / sqrt(n)
    assert row["mde"] == pytest.approx(2.801585 * np.std(d, ddof=1) / math.sqrt(200), rel=1e-9)
    assert "is already significant" in row["what_it_would_take"]
    assert [d["field"] for d in result["identity"]] == [
        "model",
        f"model version each provider reported (A: {STRONG}; B: {WEAK})",
    ]


def test_the_printed_comparison_fits_120_columns(run, capsys):
    runs, _ = run
    assert main(["compare", f"cmp:{STRONG}", f"cmp:{WEAK}", "--store", str(runs)]) == 0
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert table and max(len(line) for line in out.splitlines()) <= 120
    assert "- A: cmp@" in out and "- B: cmp@" in out  # short names, with a legend
    shares = re.findall(r"\| (0\.\d+) \|", out)
    assert shares and all(len(x) == 5 for x in shares)  # 3 decimals everywhere


@pytest.mark.parametrize("side", ["cmp", f"cmp:{STRONG}"])
def test_a_run_against_itself(run, capsys, side):
    runs, work = run
    result = compare(capsys, runs, work, side, side)
    assert result["rows"]
    w = wilson(0, 200).high  # no unit differs: at most this share could, unseen
    for row in result["rows"]:
        assert (row["difference"], row["low"], row["high"], row["p"]) == (0.0, -w, w, 1.0)
        assert row["no_interval"] is None and row["test"] == "exact McNemar"
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
    assert f"<summary>Comparison with cmp@{second['version']}</summary>" in page
    legend = f"A: <span class='clip wide' title='cmp@{first['version']}'>cmp@{first['version']}"
    assert legend in page


def test_runs_on_different_datasets_share_no_item(run, capsys):
    """A second dataset whose ids 1..30 are the first run's too: nothing is paired across the
    two, and each side shows its own figures."""
    runs, work = run
    other = write_dataset(work / "other", 30)
    answers = write_answer_key(other, ["zerobench"], work / "other.jsonl")
    with start_simulator(answers, {"latency": {"ms": 1}}, work / "other-sim.jsonl") as sim:
        code = main(
            ["run", "-m", STRONG, "-b", "zerobench", "--protocol", "greedy", "--epochs", "1"]
            + ["--dataset-path", other, "--run-id", "cmp-other", "--store", str(runs)]
            + ["--simulator-url", sim.url]
        )
    assert code == 0
    capsys.readouterr()
    assert main(["compare", f"cmp:{STRONG}", "cmp-other", "--store", str(runs)]) == 0
    out = capsys.readouterr().out
    # the paragraph about it, wrapped to the terminal
    paragraph = out[out.index("No shared items on zerobench") :].split("\n\n")[0]
    line = " ".join(paragraph.split())
    mine = result_table(runs, "cmp", "units.parquet")
    mine = mine[(mine.model == STRONG) & (mine.scoring == "upstream")]
    k = int(mine.value.sum())
    low, high = wilson(k, 200).low, wilson(k, 200).high
    assert f"{fmt.share(k / 200)} ({fmt.interval(low, high)})" in line
    assert "first" not in line and "30 samples" in line and "200 samples" in line
    result = compare(capsys, runs, work, f"cmp:{STRONG}", "cmp-other")
    assert result["rows"] == []
    assert {(u["benchmark"], u["scoring"]) for u in result["apart"]} == {
        ("zerobench", "upstream"),
        ("zerobench", "robust"),
    }


def test_a_run_grown_by_an_epoch_says_so(capsys, tmp_path, ray_address, prefect_api_url):
    dataset = write_dataset(tmp_path / "zerobench", 12)
    answers = write_answer_key(dataset, ["zerobench"], tmp_path / "answers.jsonl")
    runs = tmp_path / "runs"
    base = ["run", "-m", WEAK, "-b", "zerobench", "--protocol", "sampled-k"]
    base += ["--dataset-path", dataset, "--run-id", "grow", "--store", str(runs)]
    versions = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_ADDRESS", ray_address)
        patch.setenv("PREFECT_API_URL", prefect_api_url)
        with start_simulator(answers, {"latency": {"ms": 1}}, tmp_path / "sim.jsonl") as sim:
            for epochs, extra in (("2", []), ("3", ["--extend"])):
                code = main([*base, "--epochs", epochs, "--simulator-url", sim.url, *extra])
                assert code == 0
                latest = json.loads((runs / "grow" / "results" / "latest.json").read_text())
                versions.append(latest["version"])
    capsys.readouterr()
    first, second = versions
    assert main(["compare", f"grow@{first}", f"grow@{second}", "--store", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "Nothing: the same identity" not in out
    assert "| zerobench epochs | 2 | 3 |" in out
    assert "| records scored |" in out
    # a mean over 2 epochs and one over 3 are not paired (issue 48, case 8)
    assert (
        "Not paired on zerobench (upstream): A's headline is a mean over 2 epoch(s) a unit, "
        "B's over 3: they measure different things" in " ".join(out.split())
    )
