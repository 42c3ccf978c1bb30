"""Reading a request's data in a child process: the same data, plan table, errors and log
records as reading in place, and a process without Arrow stays without it."""

from __future__ import annotations

import io
import json
import logging
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from evalfleet.core.checkout import ROOT
from evalfleet.core.types import DatasetError
from evalfleet.engine.prepare.reading import Reading, _attempt, _sent, load_benchmarks
from evalfleet.engine.run.request import EvalRequest
from evalfleet.engine.store.manifest import plan_table


def request_for(dataset: str, benchmark: str = "zerobench", **extra) -> EvalRequest:
    return EvalRequest(
        models=["openai/sim-0.5"],
        benchmarks=[benchmark],
        dataset_path=dataset,
        simulator_url="http://127.0.0.1:9",
        **extra,
    )


def test_a_child_reads_what_this_process_reads(demo_dataset):
    request = request_for(demo_dataset, max_image_side=16)
    here = load_benchmarks(request)["zerobench"]
    there = Reading(request).result()["zerobench"]
    assert there.samples == here.samples  # parts included: the downscaled image bytes
    assert [s.id for s in there.samples] == ["1", "2", "3", "4"]
    assert (there.revision, there.source, there.protocol) == (
        here.revision,
        here.source,
        here.protocol,
    )
    assert there.decodings == here.decodings and len(there.decodings) == 6
    assert there.digests == here.digests and there.prompts == here.prompts
    assert here.plan_later is None  # made from the data where Arrow is
    assert there.plan_later() == plan_table(here)


def test_the_child_sends_the_plan_tables_after_the_data_and_ends(demo_dataset):
    request = request_for(demo_dataset)
    reading = Reading(request)
    data = reading.result()["zerobench"]
    assert [s.id for s in data.samples] == ["1", "2", "3", "4"]
    table = data.plan_later()
    assert table == plan_table(load_benchmarks(request)["zerobench"])
    assert reading.child.returncode == 0
    unwanted = Reading(request)
    unwanted.result()
    unwanted.close()  # its plan tables never taken: killed, not left behind
    assert unwanted.child.returncode in (0, -9)


def test_a_relative_dataset_path_means_the_same_to_the_child(demo_dataset, monkeypatch):
    dataset = Path(demo_dataset)
    monkeypatch.chdir(dataset.parent)
    there = Reading(request_for(dataset.name)).result()["zerobench"]
    assert [s.id for s in there.samples] == ["1", "2", "3", "4"]
    assert there.source == f"dataset path {dataset.name}"


def test_a_childs_error_is_raised_here_as_it_was_raised_there(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(DatasetError) as raised:
        Reading(request_for(str(missing))).result()
    assert str(raised.value) == (
        f"dataset path {missing} does not exist: check --dataset-path (a local copy's folder "
        "or Parquet file)"
    )


def test_a_defect_is_sent_as_its_line_and_an_error_that_does_not_pickle_too(capsys):
    """A ValueError goes as it was; any other error as a RuntimeError naming it (its traceback
    printed in the child); an error holding what does not pickle as a DatasetError line."""

    def raising(exc: Exception):
        raise exc

    assert _attempt(lambda: 7) == ("ok", 7)
    bad = DatasetError("dataset path x does not exist")
    assert _attempt(lambda: raising(bad)) == ("error", bad)
    outcome, error = _attempt(lambda: raising(KeyError("missing")))
    assert outcome == "error" and isinstance(error, RuntimeError)
    assert str(error) == "reading the data failed: KeyError('missing')"
    assert "KeyError: 'missing'" in capsys.readouterr().err
    pipe = io.BytesIO()
    assert _sent(pipe, ("ok", [1, 2], [("evalfleet", 20, "read")])) is True
    unpicklable = DatasetError(lambda: None)
    assert _sent(pipe, ("error", unpicklable, [])) is False
    pipe.seek(0)
    assert pickle.load(pipe) == ("ok", [1, 2], [("evalfleet", 20, "read")])
    outcome, sent, records = pickle.load(pipe)
    assert (outcome, type(sent), records) == ("error", DatasetError, [])
    assert str(sent).startswith("reading the data failed: DatasetError(<function ")


def test_a_childs_warnings_are_logged_here(tmp_path, caplog):
    from evalfleet.benchmarks.rome.demo import write_rome_demo

    root = write_rome_demo(tmp_path / "rome")
    items = json.loads((root / "data" / "test.json").read_text())
    choice = next(i for i in items if i["question_id"] == "academic_1")
    choice["evaluator_kwargs"]["label"] = "S"
    (root / "data" / "test.json").write_text(json.dumps(items))
    with caplog.at_level(logging.WARNING):
        Reading(request_for(str(root), "rome")).result()
    warned = [
        r.getMessage() for r in caplog.records if r.name == "evalfleet.benchmarks.rome.dataset"
    ]
    assert len(warned) == 1 and warned[0].endswith(
        "(its `upstream` mode never scores them; `fixed` does): academic_1"
    )


def test_a_process_without_arrow_reads_without_importing_it(demo_dataset):
    script = f"""
import sys
from evalfleet.engine.prepare.reading import read_benchmarks
from evalfleet.engine.run.request import EvalRequest
data = read_benchmarks(EvalRequest(models=["openai/sim-0.5"], benchmarks=["zerobench"],
                                   dataset_path={demo_dataset!r}))
print(len(data["zerobench"].samples), len(data["zerobench"].plan_later()) > 0,
      "pyarrow" in sys.modules, "numpy" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["4", "True", "False", "False"]


TOY = """
import sys
from evalfleet.benchmarks import registry
from evalfleet.benchmarks.interface import Benchmark, LoadedData
from evalfleet.core.types import Part, Sample
from evalfleet.engine.prepare.reading import read_benchmarks
from evalfleet.engine.run.request import EvalRequest


class Toy(Benchmark):
    name = "toy-reading"
    description = "a benchmark registered by a script"
    hf_path = "nobody/toy"
    revision = "v1"
    scorings = ("exact",)

    def load(self, path, options, limit):
        samples = [Sample(id="q1", parts=[Part.of_text("1 + 1?")], target="2")]
        return LoadedData(samples=samples, revision="v1", source="inline")

    def score(self, sample, response, options):
        return []

    def metrics(self, scored, samples, protocol, epochs):
        return []

    def answer_key(self, sample, options):
        return []


registry.register(Toy())
data = read_benchmarks(EvalRequest(models=["openai/sim-0.5"], benchmarks=["toy-reading"]))
print(len(data["toy-reading"].samples), data["toy-reading"].plan_later is None)
"""


def test_a_registered_benchmark_is_read_in_place():
    """A new process would not know it: the process that registered it reads it."""
    done = subprocess.run([sys.executable, "-c", TOY], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "True"]
