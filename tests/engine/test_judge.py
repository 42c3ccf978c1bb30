"""The judge stage: ZeroBench's fallback parser re-reads the answers that broke the braces
format. Judgements go out once the answer they grade is stored, survive a SIGKILL of the run,
are resumed without asking anything twice (beyond the calls the kill cut off in flight), and
give the `judge` scoring rows."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from evalfleet.benchmarks.zerobench import ZEROBENCH
from evalfleet.reports.status import run_status
from evalfleet.simulator.answering import prompt_sha256
from evalfleet.simulator.process import start_simulator
from evalfleet.storage import open_store
from tests.support.helpers import SPLITS, result_table, zerobench_samples

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack


REPO = Path(__file__).resolve().parents[2]
CANDIDATE, JUDGE = "openai/sim-0.6", "anthropic/sim-0.9"
SIMULATOR = {
    "latency": {"ms": 20},
    "rules": [
        {"match": "sim-0.6", "unformatted_rate": 0.5},
        # judgements stay in flight a while, and land spread out (not all at once: the kill
        # must find some stored and some not)
        {"match": "sim-0.9", "latency": {"distribution": "uniform", "ms": 2000, "jitter_ms": 1800}},
    ],
}
ANSWERS = 15 * 6  # demo samples x epochs


def judgement_files(runs: Path) -> list[Path]:
    root = runs / "judged" / "judgements"
    return sorted(root.rglob("*.json")) if root.exists() else []


def live_actors() -> set[str]:
    """The ids of the actors alive in the session's Ray cluster (the GCS's actor table: Ray's
    state API needs a dashboard, which the test cluster does not start)."""
    from ray._private import state

    return {k for k, a in state.actors().items() if a["State"] != "DEAD"}


def wait_for_actors_to_die(before: set[str], timeout_s: float) -> None:
    """Waits until no actor started after `before` was taken (the killed run's) is alive: on a
    loaded machine Ray may take longer than any quiet spell to reap them, and an actor still
    alive at the resume would ask what the resume asks too."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = live_actors() - before
        if not alive:
            return
        assert time.monotonic() < deadline, f"actors of the killed run still alive: {alive}"
        time.sleep(0.2)


def answered(sim_log: Path, killed_at: float, resumed_at: float) -> tuple[Counter, Counter]:
    """Requests the simulator answered (200) and those the kill cut off, by model, prompt and
    seed. The worker actors live in the shared Ray cluster and die a moment after the driver
    (when Ray sees it gone), so cut off is any request in flight between the kill and the
    resume: its answer may never have been stored."""
    lines = [json.loads(x) for x in sim_log.read_text().splitlines()]
    answered, cut_off = Counter(), Counter()
    for x in lines:
        request = (x["model"], x["prompt_sha256"], x["seed"])
        if x["status"] == 200:
            answered[request] += 1
        if x["t"] <= resumed_at and killed_at <= x["t"] + x["latency_ms"] / 1000 + 0.05:
            cut_off[request] += 1
    return answered, cut_off


def test_judge_stage_survives_a_kill_and_scores_the_format_failures(
    ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):
    runs = tmp_path / "runs"
    sim_log = tmp_path / "sim.jsonl"
    env = {**os.environ, "RAY_ADDRESS": ray_address, "PREFECT_API_URL": prefect_api_url}
    with start_simulator(answer_key, SIMULATOR, sim_log) as sim:
        args = ["run", "-m", CANDIDATE, "--judge-model", JUDGE, "--dataset-path", demo_dataset]
        args += ["--run-id", "judged", "--store", str(runs), "--simulator-url", sim.url]
        command = [sys.executable, "-m", "evalfleet.cli.main", *args]
        actors_before = live_actors()
        first = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 240
        while len(judgement_files(runs)) < 4:
            assert first.poll() is None, "the run ended before its judgements"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(first.pid, signal.SIGKILL)
        killed_at = time.time()
        first.wait()
        killed_with = len(judgement_files(runs))

        # The killed run's actors (in the shared Ray cluster) die when Ray sees the driver
        # gone, seconds later on a loaded machine: what they send until then is cut off too.
        # Resume once they are gone and the simulator has been quiet for two seconds.
        wait_for_actors_to_die(actors_before, timeout_s=120)
        quiet_deadline = time.monotonic() + 60
        sim.flush_log()
        seen = len(sim_log.read_text().splitlines())
        while time.monotonic() < quiet_deadline:
            time.sleep(2)
            sim.flush_log()
            now = len(sim_log.read_text().splitlines())
            if now == seen:
                break
            seen = now
        resumed_at = time.time()
        second = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
        assert second.returncode == 0, second.stdout + second.stderr
        assert "judgements of stored answers:" in second.stderr
        sim.flush_log()

    # Nothing answered twice beyond the calls in flight at the kill: each completion once,
    # each judgement once (two epochs may give the same wrong answer, so one grader prompt
    # can belong to two judgements).
    counts, cut_off = answered(sim_log, killed_at, resumed_at)
    candidate = {k: n for k, n in counts.items() if k[0] == "sim-0.6"}
    assert len(candidate) == ANSWERS
    assert all(n <= 1 + cut_off[k] for k, n in candidate.items())
    judge = Counter({k[1]: n for k, n in counts.items() if k[0] == "sim-0.9"})
    judge_cut = Counter({k[1]: n for k, n in cut_off.items() if k[0] == "sim-0.9"})

    # One judgement per answer that broke the format, and only for those.
    records = {}
    for path in (runs / "judged" / "completions").rglob("*.json"):
        record = json.loads(path.read_text())
        records[(record["benchmark"], record["sample_id"], record["epoch"])] = record
    unformatted = {k for k, r in records.items() if not re.findall(r"\{(.*?)\}", r["response"])}
    judgements = {}
    for path in judgement_files(runs):
        record = json.loads(path.read_text())
        assert record["stage"] == "judge" and record["judge_model"] == JUDGE
        judgements[(record["benchmark"], record["sample_id"], record["epoch"])] = record
    assert 10 < len(unformatted) < ANSWERS - 10
    assert set(judgements) == unformatted
    samples_by_key = {
        (split, s.id): s for split in SPLITS for s in zerobench_samples(split, demo_dataset)
    }
    prompts = Counter(
        prompt_sha256(ZEROBENCH.judge.prompt(samples_by_key[k[:2]], records[k]["response"]))
        for k in unformatted
    )
    outside = {  # prompt hash: (expected, asked, cut off)
        k: (prompts[k], n, judge_cut[k])
        for k, n in judge.items()
        if not prompts[k] <= n <= prompts[k] + judge_cut[k]
    }
    assert outside == {}
    assert set(judge) == set(prompts)
    assert sum(judge_cut.values()) > 0  # the kill did cut judgements off
    assert len(unformatted) > killed_with
    for key, judgement in judgements.items():
        answer_key_path = judgement["graded"]["key"]
        graded = json.loads((runs / answer_key_path).read_text())
        assert (graded["benchmark"], graded["sample_id"], graded["epoch"]) == key

    # The judge rows: the judge's extraction where rules found nothing, upstream elsewhere.
    targets = {
        (split, s.id): s.target.strip().lower()
        for split in SPLITS
        for s in zerobench_samples(split, demo_dataset)
    }
    samples = result_table(runs, "judged", "samples.parquet")
    rows = samples[samples.scoring == "judge"].set_index(["benchmark", "sample_id", "epoch"])
    upstream = samples[samples.scoring == "upstream"].set_index(["benchmark", "sample_id", "epoch"])
    assert len(rows) == ANSWERS
    for key, row in rows.iterrows():
        if key in judgements:
            groups = re.findall(r"\{(.*?)\}", judgements[key]["response"].strip().lower())
            expected = groups[-1] if groups and groups[-1] != "none" else None
            answer = row["answer"] if isinstance(row["answer"], str) else None
            assert row["judged"] and answer == expected
            assert row["correct"] == (expected == targets[key[:2]])
        else:
            assert not row["judged"]
            assert row["correct"] == upstream.loc[key, "correct"]
    assert upstream.loc[list(unformatted), "correct"].sum() == 0  # format failures: wrong
    assert rows.loc[list(unformatted), "correct"].sum() > 0  # the judge recovered some

    usage = result_table(runs, "judged", "usage.parquet")
    assert usage.judgements.sum() == len(unformatted)
    assert (usage.judge_cost_usd > 0).any() and (usage.cost_usd > 0).all()
    metrics = result_table(runs, "judged", "metrics.parquet")
    for split in SPLITS:
        judged_rows = metrics[(metrics.scoring == "judge") & (metrics.benchmark == split)]
        assert set(judged_rows.judged) == {sum(1 for k in unformatted if k[0] == split)}
    table, bad = run_status(open_store(str(runs)), "judged")
    judge_status = table[table.stage == "judge"]
    assert judge_status.done.sum() == len(unformatted) and judge_status.missing.sum() == 0
