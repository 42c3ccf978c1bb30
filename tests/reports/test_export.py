"""`evalfleet export`: the inspect logs read back with inspect_ai's own reader, and the
Hugging Face folder with `datasets.load_from_disk`, hold exactly the run's tables (the hostile
matrix's stored base run, copied); `inspect view` opens them and shows the tables' count and
scores; without inspect_ai the command says what to install."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

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
    labels = (
        '{"tags": ["nightly", "gpu-a"], "note": "before the fix", "metadata": {"gpu": "a=100"}}'
    )
    (store / BASE_RUN / "tags.json").write_text(labels)  # as `evalfleet tag` writes it
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
    latest = inspect_dir.parent / "store" / BASE_RUN / "results" / "latest.json"
    version = pd.read_json(latest, typ="series")["version"]
    names = sorted(p.name for p in inspect_dir.iterdir())
    assert names == ["openai_sim-0.3_zerobench.eval", "openai_sim-0.7_zerobench.eval"]
    for model in MODELS:
        for benchmark, headline in (("zerobench", "accuracy"),):
            log = read_eval_log(str(inspect_dir / f"{model.replace('/', '_')}_{benchmark}.eval"))
            rows = samples[(samples.model == model) & (samples.benchmark == benchmark)]
            items = rows[["sample_id", "epoch"]].drop_duplicates()
            assert log.eval.model == model and log.eval.task == benchmark
            assert log.eval.tags == ["nightly", "gpu-a"]
            assert log.eval.metadata == {
                "gpu": "a=100",
                "note": "before the fix",
                "evalfleet_run": BASE_RUN,
                "evalfleet_results_version": version,
            }
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


PROMPT_1 = (
    "Count the red circles, the blue squares and the green triangles in the image. What is the "
    "product of the three counts?\n\n\nLet's think step by step and give the final answer in "
    "curly braces, like this: {final answer}"
)


@pytest.mark.slow
def test_inspect_samples_carry_messages_explanations_and_metadata(exported):
    """Sample 1 of the demo: the prompt as sent (text, then its image as a small data URI) and
    the response as chat messages, each verdict's words, the attempts and usage; the logs
    stay small (the images are tiles of a few kB)."""
    from inspect_ai.log import read_eval_log

    samples, _, inspect_dir, _ = exported
    model = MODELS[0]
    path = inspect_dir / f"{model.replace('/', '_')}_zerobench.eval"
    assert path.stat().st_size < 60_000
    log = read_eval_log(str(path), resolve_attachments=True)
    sample = next(s for s in log.samples if s.id == "1" and s.epoch == 1)
    rows = samples[(samples.model == model) & (samples.sample_id == "1") & (samples.epoch == 0)]
    upstream = rows.set_index("scoring").loc["upstream"]
    assert [m.role for m in sample.messages] == ["user", "assistant"]
    user, assistant = sample.messages
    assert [c.type for c in user.content] == ["text", "image"]
    assert user.content[0].text == PROMPT_1
    image = user.content[1].image
    assert image.startswith("data:image/jpeg;base64,") and 1_000 < len(image) < 8_000
    assert sample.input == [user]
    assert assistant.model == model
    text = assistant.content[0].text
    assert text.startswith("I will reason about this carefully.\n")
    assert text.endswith(f"So the final answer is {{{upstream.answer}}}")
    assert sample.scores["upstream"].answer == upstream.answer
    verdict = "equals" if upstream.correct else "differs from"
    assert sample.scores["upstream"].explanation == (
        f"upstream rule: the last {{...}} group of the lower-cased response, "
        f"'{upstream.answer}', {verdict} the lower-cased target '24' (exact text)"
    )
    assert sample.scores["robust"].explanation.startswith(
        "E4 (the last group labelled as the answer) read "
    )
    assert sample.metadata["attempts"] == 1
    assert sample.metadata["finish_reason"] == "stop"
    assert sample.metadata["usage"] == {
        "input_tokens": int(upstream.input_tokens),
        "output_tokens": int(upstream.output_tokens),
        "total_tokens": int(upstream.input_tokens + upstream.output_tokens),
        "total_cost": pytest.approx(sample.output.usage.total_cost),
    }


@contextlib.contextmanager
def inspect_view(log_dir: Path) -> Iterator[str]:
    """`inspect view` on a free port, its address once it answers HTTP; stopped after."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", "inspect_ai", "view", "--log-dir", str(log_dir)]
    argv += ["--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert server.poll() is None, f"inspect view ended: {server.stderr.read()[-2000:]}"
            assert time.monotonic() < deadline, "inspect view did not answer in 30 s"
            try:
                with urllib.request.urlopen(url + "/", timeout=1) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.05)  # the port is not open yet: ask again
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server.stderr.close()


def shown(driver, script: str, what: str):
    deadline = time.monotonic() + 20
    while not (found := driver.execute_script(script)):
        assert time.monotonic() < deadline, what
        time.sleep(0.05)
    return found


@pytest.mark.slow
def test_inspect_view_shows_the_tables_sample_count_and_scores(exported):
    """An exported log opened in inspect view (its own server and page, in Chromium): the
    footer counts the tables' items, the scorer table holds the headline, and a sample row
    its stored score."""
    from tests.support.browser import close, headless_chromium

    samples, metrics, inspect_dir, _ = exported
    model = MODELS[0]
    rows = samples[(samples.model == model) & (samples.benchmark == "zerobench")]
    items = rows[["sample_id", "epoch"]].drop_duplicates()
    headline = metrics[
        (metrics.model == model)
        & (metrics.benchmark == "zerobench")
        & (metrics.scoring == "upstream")
        & (metrics.metric == "accuracy")
        & (metrics.group == "")
    ].value.iloc[0]
    with inspect_view(inspect_dir) as url:
        driver = headless_chromium(1400, 1000)
        try:
            driver.get(f"{url}/#/logs/{model.replace('/', '_')}_zerobench.eval/samples/")
            footer = shown(
                driver,
                "return [...document.querySelectorAll('div')].map((d) => d.textContent)"
                ".find((t) => /^\\d+ Samples$/.test(t))",
                "no sample count",
            )
            assert footer == f"{len(items)} Samples"
            scorers = shown(
                driver,
                "const t = [...document.querySelectorAll('table')].find((t) =>"
                " t.querySelector('th[title=accuracy]')); if (!t) return null;"
                "const at = [...t.querySelectorAll('th')].findIndex((th) => th.title ==="
                " 'accuracy'); return [...t.querySelectorAll('tbody tr')].map((tr) =>"
                " [tr.cells[0].title, tr.cells[at].textContent])",
                "no scorer table",
            )
            assert [name for name, _ in scorers] == list(dict.fromkeys(rows.scoring))
            assert float(dict(scorers)["upstream"]) == pytest.approx(headline, abs=5e-4)
            first = shown(
                driver,
                "const row = document.querySelector('a[role=row]'); return row &&"
                " Object.fromEntries([...row.querySelectorAll('[data-col-id]')].map((c) =>"
                " [c.dataset.colId, c.textContent]))",
                "no sample row",
            )
        finally:
            close(driver)
    mine = rows[(rows.sample_id == first["sampleId"]) & (rows.epoch == int(first["epoch"]) - 1)]
    value = mine.set_index("scoring").value
    assert float(first["score__upstream__upstream"]) == value["upstream"]
    assert float(first["score__robust__robust"]) == value["robust"]


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


def test_an_unknown_run_is_named_as_such(tmp_path):
    """Not "run zzz has no results ... run `evalfleet aggregate zzz`": there is no run zzz."""
    argv = ["export", "zzz", "--store", str(tmp_path), "--format", "hf"]
    argv += ["--out", str(tmp_path / "out")]
    code, out, err, crashed = call_in_process(argv)
    assert (code, out, crashed) == (2, "", False)
    assert err == (
        f"error: no run 'zzz' in local directory {tmp_path}: `evalfleet runs --store "
        f"{tmp_path}` lists the runs there\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_command_line_starts_without_inspect_ai_or_datasets():
    code = (
        "import sys; from evalfleet.cli.main import build_parser; build_parser(); "
        "print('inspect_ai' in sys.modules, 'datasets' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout == "False False\n", done.stderr


@pytest.mark.slow
def test_inspect_samples_hold_the_fields_the_benchmark_declares(
    session_services, tmp_path, monkeypatch
):
    """A ROME demo run exported: each sample's metadata names its ROME task, as the dataset
    has it (the field the report's list filters on)."""
    from inspect_ai.log import read_eval_log

    from evalfleet.cli.main import main
    from evalfleet.engine.store.stored import load_run
    from evalfleet.storage import open_store

    monkeypatch.chdir(tmp_path)
    store = tmp_path / "runs"
    assert main(["demo", "-b", "rome", "--run-id", "r", "--store", str(store)]) == 0
    out = tmp_path / "inspect"
    argv = ["export", "r", "--store", str(store), "--format", "inspect", "--out", str(out)]
    code, _, err, crashed = call_in_process(argv)
    assert (code, crashed) == (0, False), err
    tasks = {
        s.id: s.metadata["task"]
        for s in load_run(open_store(str(store)), "r", read=False).data["rome"].samples
    }
    assert len(set(tasks.values())) > 1
    logs = sorted(out.iterdir())
    assert len(logs) > 0
    for path in logs:
        log = read_eval_log(str(path))
        assert {str(s.id): s.metadata["task"] for s in log.samples} == tasks
