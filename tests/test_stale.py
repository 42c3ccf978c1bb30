"""A prompt template that changes between two runs of one run id makes the old records stale.

Nothing in the source is edited: the run reads each split from its own directory
(`dataset_paths`), and between the runs the subquestion split is rewritten in place with every
question wrapped in a new template (images untouched). So the text sent changes, and with it the
prompt digest and the dataset revision of that benchmark, while the request identity (and so
the run id) stays valid. The main split is not touched and must not be requested again.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import time
from collections import Counter
from pathlib import Path

import pandas as pd

from benchmarks.zerobench import load_samples
from flows.aggregate import aggregate
from flows.cli import main
from flows.demo import write_answer_key
from flows.evaluate import evaluate, prepare
from flows.request import EvalRequest
from flows.status import run_status
from providers.simulator.process import start_simulator
from storage import LocalStore, layout

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


def write_new_template(demo_dataset: str, work: Path) -> Path:
    """The demo dataset with every subquestion wrapped in TEMPLATE (built from a copy, in
    memory, so no cache file lands in the shared demo dataset)."""
    import datasets

    source = shutil.copytree(demo_dataset, work / "template-source")
    splits = datasets.load_from_disk(str(source), keep_in_memory=True)
    splits[SUB] = splits[SUB].map(
        lambda text: {"question_text": TEMPLATE.format(text)},
        input_columns="question_text",
        keep_in_memory=True,
    )
    target = work / "template-v2"
    splits.save_to_disk(str(target))
    return target


def completion_files(runs: Path) -> dict[str, bytes]:
    store = LocalStore(runs)
    keys = store.list(layout.completions_prefix(RUN_ID))
    return {key: (runs / key).read_bytes() for key in keys}


def status_table(runs: Path, capsys) -> list[str]:
    capsys.readouterr()
    assert main(["status", RUN_ID, "--store", str(runs)]) == 0
    return capsys.readouterr().out.splitlines()


def test_changed_template_makes_old_records_stale_and_requests_them_again(
    ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path, capsys
):
    runs = tmp_path / "runs"
    main_dir = shutil.copytree(demo_dataset, tmp_path / "data-main")
    sub_dir = shutil.copytree(demo_dataset, tmp_path / "data-sub")
    v2 = write_new_template(demo_dataset, tmp_path)
    # One simulator for both runs: it knows the answers to the old and the new prompts.
    answers = tmp_path / "answers.jsonl"
    new_answers = write_answer_key(str(v2), [SUB], tmp_path / "v2-answers.jsonl")
    answers.write_text(answer_key.read_text() + new_answers.read_text())

    old_samples = load_samples(SUB, dataset_path=demo_dataset)
    new_samples = load_samples(SUB, dataset_path=v2)
    for old, new in zip(old_samples, new_samples, strict=True):
        assert (new.id, new.target) == (old.id, old.target)
        assert new.parts[0].text == TEMPLATE.format(old.parts[0].text)
        assert new.parts[1:] == old.parts[1:]  # the images are sent unchanged
    new_prompts = {sha256(s.parts[0].text) for s in new_samples}

    with start_simulator(answers, {"latency": {"ms": 5}}, tmp_path / "sim.jsonl") as sim:
        request = EvalRequest(
            models=[MODEL],
            dataset_paths={MAIN: str(main_dir), SUB: str(sub_dir)},
            run_id=RUN_ID,
            store=str(runs),
            simulator_url=sim.url,
            workers=1,
        )
        first = evaluate(request)
        assert (first["submitted"], first["statuses"]) == (N_MAIN + N_SUB, {"ok": N_MAIN + N_SUB})
        old_files = completion_files(runs)
        assert len(old_files) == N_MAIN + N_SUB
        old_sub_keys = sorted(k for k in old_files if f"/{SUB}/" in k)
        assert len(old_sub_keys) == N_SUB

        # The template changes: the subquestion split is rewritten where the run reads it.
        shutil.rmtree(sub_dir)
        shutil.copytree(v2, sub_dir)

        plan = prepare(request)
        assert plan.new_run is False
        assert {shard: dict(c) for shard, c in plan.reconciled.counts().items()} == {
            (MODEL, MAIN): {"done": N_MAIN},
            (MODEL, SUB): {"stale": N_SUB},
        }
        assert sorted(plan.reconciled.stale_keys) == old_sub_keys
        assert len(plan.todo) == N_SUB and {i.benchmark for i in plan.todo} == {SUB}
        assert not {i.key for i in plan.todo} & set(old_files)  # new keys: nothing overwritten
        assert status_table(runs, capsys) == [
            "| model          | benchmark              |   done |   failed |   stale |"
            "   missing |   unreadable |",
            "|:---------------|:-----------------------|-------:|---------:|--------:|"
            "----------:|-------------:|",
            "| openai/sim-0.5 | zerobench              |     24 |        0 |       0 |"
            "         0 |            0 |",
            "| openai/sim-0.5 | zerobench_subquestions |      0 |        0 |      66 |"
            "         0 |            0 |",
        ]

        second_started = time.time()
        second = evaluate(request)
        assert (second["submitted"], second["statuses"]) == (N_SUB, {"ok": N_SUB})

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
    assert new_keys == sorted(item.key for item in plan.todo)
    new_records = [json.loads(files[k]) for k in new_keys]

    table, bad = run_status(RUN_ID, str(runs))
    assert bad == []
    assert table.to_dict("records") == [
        {"model": MODEL, "benchmark": MAIN, "done": N_MAIN, "failed": 0, "stale": 0,
         "missing": 0, "unreadable": 0},
        {"model": MODEL, "benchmark": SUB, "done": N_SUB, "failed": 0, "stale": 0,
         "missing": 0, "unreadable": 0},
    ]  # fmt: skip

    # The tables are built from the new records: the new prompt is longer (more input tokens)
    # and is answered with an independent draw.
    result = aggregate(RUN_ID, store=str(runs))
    assert (result["missing"], result["stale"], result["unreadable"]) == (0, 0, 0)
    samples = pd.read_parquet(io.BytesIO(LocalStore(runs).get(f"{RUN_ID}/results/samples.parquet")))
    old_by_ident = {
        (r["sample_id"], r["epoch"]): r for r in (json.loads(old_files[k]) for k in old_sub_keys)
    }
    new_by_ident = {(r["sample_id"], r["epoch"]): r for r in new_records}
    target = {s.id: s.target for s in new_samples}
    rows = samples[(samples.split == SUB) & (samples.scoring == "upstream")]
    assert len(rows) == N_SUB
    differs = 0
    for row in rows.itertuples():
        new, old = new_by_ident[row.sample_id, row.epoch], old_by_ident[row.sample_id, row.epoch]
        assert row.input_tokens == new["usage"]["input_tokens"] > old["usage"]["input_tokens"]
        assert row.correct == upstream_correct(new["response"], target[row.sample_id])
        differs += upstream_correct(old["response"], target[row.sample_id]) != row.correct
    assert differs > 0  # so the check above could tell old and new records apart
    assert len(samples[(samples.split == MAIN) & (samples.scoring == "upstream")]) == N_MAIN
