"""`evalfleet export`: the inspect logs read back with inspect_ai's own reader, and the
Hugging Face folder with `datasets.load_from_disk`, hold exactly the run's tables (the hostile
matrix's stored base run, copied); without inspect_ai the command says what to install."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pandas as pd
import pytest

from tests.support.hostile import BASE_RUN, MODELS, call_in_process


@pytest.fixture(scope="module")
def exported(hostile_store, tmp_path_factory):
    """The base run's tables and both exports of it: (samples, metrics, inspect dir, hf dir)."""
    base, _sim, _log = hostile_store
    work = tmp_path_factory.mktemp("export")
    store = work / "store"
    shutil.copytree(base, store)
    results = store / BASE_RUN / "results"
    version = pd.read_json(results / "latest.json", typ="series")["version"]
    samples = pd.read_parquet(results / version / "samples.parquet")
    metrics = pd.read_parquet(results / version / "metrics.parquet")
    outs = {}
    for fmt in ("inspect", "hf"):
        outs[fmt] = work / fmt
        argv = ["export", BASE_RUN, "--store", str(store), "--format", fmt]
        code, out, err, crashed = call_in_process([*argv, "--out", str(outs[fmt])])
        assert (code, crashed) == (0, False), err
    return samples, metrics, outs["inspect"], outs["hf"]


@pytest.mark.slow
def test_inspect_logs_hold_the_tables_samples_scores_and_headline(exported):
    from inspect_ai.log import read_eval_log

    samples, metrics, inspect_dir, _ = exported
    names = sorted(p.name for p in inspect_dir.iterdir())
    assert names == ["openai_sim-0.3_zerobench.eval", "openai_sim-0.7_zerobench.eval"]
    for model in MODELS:
        for benchmark, headline in (("zerobench", "accuracy"),):
            log = read_eval_log(str(inspect_dir / f"{model.replace('/', '_')}_{benchmark}.eval"))
            rows = samples[(samples.model == model) & (samples.benchmark == benchmark)]
            items = rows[["sample_id", "epoch"]].drop_duplicates()
            assert log.eval.model == model and log.eval.task == benchmark
            assert len(log.samples) == len(items) > 0
            assert log.results.total_samples == len(items)
            expected = {
                (str(r.sample_id), int(r.epoch) + 1, r.scoring): float(r.value)
                for r in rows.itertuples()
            }
            found = {
                (str(s.id), s.epoch, scoring): float(score.value)
                for s in log.samples
                for scoring, score in s.scores.items()
            }
            assert found == expected
            for score in log.results.scores:
                want = metrics[
                    (metrics.model == model)
                    & (metrics.benchmark == benchmark)
                    & (metrics.scoring == score.name)
                    & (metrics.metric == headline)
                    & (metrics.group == "")
                ].value
                assert list(score.metrics)[0] == headline
                assert score.metrics[headline].value == pytest.approx(float(want.iloc[0]))
            sample = log.samples[0]
            row = rows[(rows.sample_id == sample.id) & (rows.epoch == sample.epoch - 1)].iloc[0]
            assert sample.target == row.target
            assert sample.output.usage.input_tokens == int(row.input_tokens)
            assert sample.output.usage.output_tokens == int(row.output_tokens)
            assert sample.input and sample.output.completion


@pytest.mark.slow
def test_the_hf_folder_has_one_row_per_item(exported):
    import datasets

    samples, _, _, hf_dir = exported
    rows = datasets.load_from_disk(str(hf_dir))
    items = samples[["model", "benchmark", "sample_id", "epoch"]].drop_duplicates()
    assert rows.num_rows == len(items) > 0
    first = rows[0]
    table = samples[
        (samples.model == first["model"])
        & (samples.benchmark == first["benchmark"])
        & (samples.sample_id == first["sample_id"])
        & (samples.epoch == first["epoch"])
    ]
    assert {s["scoring"]: s["value"] for s in first["scores"]} == dict(
        zip(table.scoring, table.value, strict=True)
    )
    assert first["target"] == table.target.iloc[0] and first["run_id"] == BASE_RUN


@pytest.mark.slow
def test_an_export_never_writes_into_a_folder_that_holds_files(exported, hostile_store):
    _, _, inspect_dir, _ = exported
    before = sorted(p.name for p in inspect_dir.iterdir())
    argv = ["export", BASE_RUN, "--store", str(hostile_store[0]), "--format", "inspect"]
    code, out, err, crashed = call_in_process([*argv, "--out", str(inspect_dir)])
    assert (code, out, crashed) == (2, "", False)
    assert (
        err
        == f"error: {inspect_dir} already exists and is not empty: name a new folder with --out\n"
    )
    assert sorted(p.name for p in inspect_dir.iterdir()) == before


def test_without_inspect_ai_one_line_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # as if not installed: import fails
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    argv = ["export", "r1", "--store", str(tmp_path), "--format", "inspect"]
    code, out, err, crashed = call_in_process(argv)
    assert (code, out, crashed) == (2, "", False)
    assert err == (
        "error: the inspect export needs inspect_ai, which is not installed: "
        "pip install 'evalfleet[inspect]'\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_command_line_starts_without_inspect_ai_or_datasets():
    code = (
        "import sys; from evalfleet.cli.main import build_parser; build_parser(); "
        "print('inspect_ai' in sys.modules, 'datasets' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout == "False False\n", done.stderr
