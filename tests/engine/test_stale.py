"""A prompt template that changes between two runs of one run id makes the old records stale.

The template is code, not data: a new evalfleet version may word a benchmark's prompt
differently. Between the two runs the subquestion prompts are wrapped in a new template (the
test swaps ZeroBench's row-to-sample function for one that wraps it; images untouched). The
data and so the run identity are unchanged, the text sent changes, and with it the prompt
digest. The main split is not touched and must not be requested again.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter
from pathlib import Path

import pytest

from evalfleet.benchmarks.zerobench import dataset as zerobench_data
from evalfleet.cli.main import main
from evalfleet.core.types import Part
from evalfleet.engine.prepare.plan import plan as plan_run
from evalfleet.engine.prepare.resolve import resolve
from evalfleet.engine.run.request import EvalRequest
from evalfleet.flows.aggregate import aggregate
from evalfleet.flows.evaluate import evaluate
from evalfleet.reports.status import run_status
from evalfleet.simulator.process import start_simulator
from evalfleet.simulator.samples import answer_key_line
from evalfleet.storage import LocalStore, layout, open_store
from tests.support.helpers import result_table, zerobench_samples

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack


RUN_ID = "stale"
MODEL = "openai/sim-0.5"
TEMPLATE = "Look carefully at every detail of the image before answering. {}"
MAIN, SUB = "zerobench", "zerobench_subquestions"
N_MAIN, N_SUB = 4 * 6, 11 * 6  # items: samples x epochs


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def upstream_correct(response: str, target: str) -> bool:
    found = re.findall(r"\{(.*?)\}", response.strip().lower())
    return bool(found) and found[-1] == target.strip().lower()


def new_template(to_sample):
    """ZeroBench's row-to-sample function with every subquestion prompt wrapped in TEMPLATE."""

    def wrapped(row, *, split):
        sample = to_sample(row, split=split)
        if split == SUB:
            sample.parts[0] = Part.of_text(TEMPLATE.format(sample.parts[0].text))
        return sample

    return wrapped


def completion_files(runs: Path) -> dict[str, bytes]:
    store = LocalStore(runs)
    keys = store.list(layout.stage_prefix(RUN_ID, layout.ANSWER))
    return {key: (runs / key).read_bytes() for key in keys}


def status_table(runs: Path, capsys) -> list[str]:
    """The status table's lines (its last line, where the results stand, apart)."""
    capsys.readouterr()
    assert main(["status", RUN_ID, "--store", str(runs)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"results: none yet (`evalfleet aggregate {RUN_ID}`)"
    return lines[:-1]


def test_changed_template_makes_old_records_stale_and_requests_them_again(
    ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path, capsys, monkeypatch
):
    runs = tmp_path / "runs"
    old_samples = zerobench_samples(SUB, demo_dataset)
    with monkeypatch.context() as patch:
        patch.setattr(zerobench_data, "to_sample", new_template(zerobench_data.to_sample))
        new_samples = zerobench_samples(SUB, demo_dataset)
    # One simulator for both runs: it knows the answers to the old and the new prompts.
    answers = tmp_path / "answers.jsonl"
    new_lines = [answer_key_line(s.parts[0].text, s.target) for s in new_samples]
    answers.write_text(answer_key.read_text() + "\n".join(new_lines) + "\n")
    for old, new in zip(old_samples, new_samples, strict=True):
        assert (new.id, new.target) == (old.id, old.target)
        assert new.parts[0].text == TEMPLATE.format(old.parts[0].text)
        assert new.parts[1:] == old.parts[1:]  # the images are sent unchanged
    new_prompts = {sha256(s.parts[0].text) for s in new_samples}

    with start_simulator(answers, {"latency": {"ms": 5}}, tmp_path / "sim.jsonl") as sim:
        request = EvalRequest(
            models=[MODEL],
            dataset_path=demo_dataset,
            run_id=RUN_ID,
            store=str(runs),
            simulator_url=sim.url,
            workers=1,
        )
        first = evaluate(request)
        assert (first.submitted, first.statuses) == (N_MAIN + N_SUB, {"ok": N_MAIN + N_SUB})
        old_files = completion_files(runs)
        assert len(old_files) == N_MAIN + N_SUB
        old_sub_keys = sorted(k for k in old_files if f"/{SUB}/" in k)
        assert len(old_sub_keys) == N_SUB

        # The template changes (a new evalfleet version); the data and the identity do not.
        monkeypatch.setattr(zerobench_data, "to_sample", new_template(zerobench_data.to_sample))
        plan = plan_run(resolve(request))
        assert plan.event == "resumed"
        assert dict(plan.states) == {"done": N_MAIN, "stale": N_SUB}
        assert len(plan.todo) == N_SUB and {i.key.benchmark for i in plan.todo} == {SUB}
        assert not {i.store_key for i in plan.todo} & set(old_files)  # nothing overwritten
        assert status_table(runs, capsys) == [
            "| stage   | model          | benchmark              |   done |   failed |   stale |"
            "   missing |   unreadable |",
            "|:--------|:---------------|:-----------------------|-------:|---------:|--------:|"
            "----------:|-------------:|",
            "| answer  | openai/sim-0.5 | zerobench              |     24 |        0 |       0 |"
            "         0 |            0 |",
            "| answer  | openai/sim-0.5 | zerobench_subquestions |      0 |        0 |      66 |"
            "         0 |            0 |",
        ]

        second_started = time.time()
        second = evaluate(request)
        assert (second.submitted, second.statuses) == (N_SUB, {"ok": N_SUB})

    # Exactly the stale items were requested again, with the new prompts.
    log = [json.loads(x) for x in (tmp_path / "sim.jsonl").read_text().splitlines()]
    assert len(log) == N_MAIN + N_SUB + N_SUB
    again = [line for line in log if line["t"] >= second_started]
    asked = Counter((line["prompt_sha256"], line["seed"]) for line in again)
    assert set(asked) == {(sha, 42 + epoch) for sha in new_prompts for epoch in range(6)}
    assert set(asked.values()) == {1}

    # The old records are kept byte for byte beside the new ones.
    files = completion_files(runs)
    assert len(files) == N_MAIN + 2 * N_SUB
    assert {k: files[k] for k in old_files} == old_files
    new_keys = sorted(set(files) - set(old_files))
    assert new_keys == sorted(item.store_key for item in plan.todo)
    new_records = [json.loads(files[k]) for k in new_keys]

    table, bad = run_status(open_store(str(runs)), RUN_ID)
    assert bad == []
    assert table.to_dict("records") == [
        {"stage": "answer", "model": MODEL, "benchmark": MAIN, "done": N_MAIN, "failed": 0,
         "stale": 0, "missing": 0, "unreadable": 0},
        {"stage": "answer", "model": MODEL, "benchmark": SUB, "done": N_SUB, "failed": 0,
         "stale": 0, "missing": 0, "unreadable": 0},
    ]  # fmt: skip

    # The tables are built from the new records: the new prompt is longer (more input tokens)
    # and is answered with an independent draw.
    result = aggregate(RUN_ID, store=str(runs))
    assert (result["missing"], result["stale"], result["unreadable"]) == (0, 0, 0)
    samples = result_table(runs, RUN_ID, "samples.parquet")
    old_by_ident = {
        (r["sample_id"], r["epoch"]): r for r in (json.loads(old_files[k]) for k in old_sub_keys)
    }
    new_by_ident = {(r["sample_id"], r["epoch"]): r for r in new_records}
    target = {s.id: s.target for s in new_samples}
    rows = samples[(samples.benchmark == SUB) & (samples.scoring == "upstream")]
    assert len(rows) == N_SUB
    differs = 0
    for row in rows.itertuples():
        new, old = new_by_ident[row.sample_id, row.epoch], old_by_ident[row.sample_id, row.epoch]
        assert row.input_tokens == new["usage"]["input_tokens"] > old["usage"]["input_tokens"]
        assert row.correct == upstream_correct(new["response"], target[row.sample_id])
        differs += upstream_correct(old["response"], target[row.sample_id]) != row.correct
    assert differs > 0  # so the check above could tell old and new records apart
    assert len(samples[(samples.benchmark == MAIN) & (samples.scoring == "upstream")]) == N_MAIN
