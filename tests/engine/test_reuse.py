"""`run --reuse-from`: a `--limit 10` run, then the full run reusing it, sends 10 x epochs fewer
requests (the simulator's log counts them) and scores the reused items as a fresh run does.

The commands run in this process on the session's Ray and Prefect server (`session_services`):
as subprocesses without them, each full run and each judge started its own Ray head and
Prefect server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalfleet.simulator.process import start_simulator
from tests.support.cli_here import evalfleet_here
from tests.support.helpers import result_table

BENCH = "zerobench_subquestions"  # 11 demo samples
DECODINGS = 3  # --epochs 2: the greedy epoch and two sampled ones


evalfleet = evalfleet_here


def requests(log: Path, model: str = "sim-0.5") -> int:
    """Requests the simulator logged for `model` (the judge is sim-0.9)."""
    lines = log.read_text().splitlines() if log.exists() else []
    return sum(json.loads(line)["model"] == model for line in lines)


def reused_from(
    runs: Path, run_id: str, stage: str = "completions", judge: str = "anthropic/sim-0.9"
) -> dict[str | None, int]:
    counts: dict[str | None, int] = {}
    for path in (runs / run_id / stage).rglob("*.json"):
        record = json.loads(path.read_text())
        if stage == "judgements" and record["judge_model"] != judge:
            continue
        source = record.get("reused_from")
        counts[source] = counts.get(source, 0) + 1
    return counts


@pytest.mark.slow  # four runs, three judges and an estimate on the session's services
def test_limit_then_full_run_with_reuse_pays_once(
    demo_dataset, answer_key, tmp_path, session_services
):
    runs, log = tmp_path / "runs", tmp_path / "sim.jsonl"
    half_prose = {"latency": {"ms": 5}, "rules": [{"match": "sim-0.5", "unformatted_rate": 0.5}]}
    with start_simulator(answer_key, half_prose, log) as sim:  # prose answers go to the judge
        base = ("run", "-m", "openai/sim-0.5", "-b", BENCH, "--dataset-path", demo_dataset)
        base += ("--judge-model", "anthropic/sim-0.9")
        base += ("--epochs", "2", "--store", str(runs), "--simulator-url", sim.url)
        first = evalfleet(*base, "--run-id", "first", "--limit", "10")
        assert first.returncode == 0, first.stderr[-2000:]
        assert requests(log) == 10 * DECODINGS

        estimate = evalfleet(*base, "--run-id", "full", "--reuse-from", "first", "--estimate")
        assert estimate.returncode == 0, estimate.stderr[-2000:]
        assert "already stored: 30 items, not requested again" in estimate.stdout

        reused = evalfleet(*base, "--run-id", "full", "--reuse-from", "first")
        assert reused.returncode == 0, reused.stderr[-2000:]
        assert requests(log) == 10 * DECODINGS + 1 * DECODINGS  # only the 11th sample asked
        judged = requests(log, "sim-0.9")

        fresh = evalfleet(*base, "--run-id", "fresh")
        assert fresh.returncode == 0, fresh.stderr[-2000:]
        assert requests(log) == 10 * DECODINGS + 11 * DECODINGS + 1 * DECODINGS
        fresh_judged = requests(log, "sim-0.9") - judged

        missing = evalfleet(*base, "--run-id", "other", "--reuse-from", "nope")

        # `judge --reuse-from`: a second judge grades `fresh`, then `full` taking those
        # judgements (the same answers, prompts and judge) instead of asking again
        second = ("--judge", "anthropic/sim-0.8", "--store", str(runs), "--simulator-url", sim.url)
        graded = evalfleet("judge", "fresh", *second)
        assert graded.returncode == 0, graded.stderr[-2000:]
        asked_fresh = requests(log, "sim-0.8")
        taken = evalfleet("judge", "full", *second, "--reuse-from", "fresh")
        assert taken.returncode == 0, taken.stderr[-2000:]
        asked_full = requests(log, "sim-0.8") - asked_fresh
        judge_missing = evalfleet("judge", "full", *second, "--reuse-from", "nope")
    assert reused_from(runs, "full") == {"first": 30, None: 3}
    event = json.loads((runs / "full" / "manifest.json").read_text())["history"][0]  # then judged
    assert (event["event"], event["reused"], event["reused_from"]) == ("created", 30, ["first"])
    event = json.loads((runs / "fresh" / "manifest.json").read_text())["history"][0]
    assert "reused" not in event
    assert reused_from(runs, "fresh") == {None: 33}
    # judgements reuse the same way: those of the reused answers are copied, not asked
    copied = reused_from(runs, "full", "judgements")
    first_judged = sum(reused_from(runs, "first", "judgements").values())
    assert copied["first"] == first_judged > 0
    assert judged == first_judged + copied[None]
    assert (
        sum(copied.values())
        == fresh_judged
        == sum(reused_from(runs, "fresh", "judgements").values())
    )
    columns = ["sample_id", "epoch", "scoring", "answer", "value", "judged", "output_tokens"]
    a = result_table(runs, "full", "samples.parquet")[columns].reset_index(drop=True)
    b = result_table(runs, "fresh", "samples.parquet")[columns].reset_index(drop=True)
    assert len(a) == 11 * DECODINGS * 4  # four scoring modes, the two judges among them
    assert a.equals(b)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines()[-1] == (
        "error: --reuse-from nope: no such run in the store (see `evalfleet status`); "
        "name a run that stored answers, or '*'"
    )
    assert not (runs / "other").exists()
    assert asked_fresh > 0 and asked_full == 0
    graded_by_second = reused_from(runs, "full", "judgements", "anthropic/sim-0.8")
    assert graded_by_second["fresh"] == asked_fresh  # each of its judgements copied once
    assert judge_missing.returncode == 2
    assert (
        judge_missing.stderr.strip()
        .splitlines()[-1]
        .startswith("error: --reuse-from nope: no such run in the store")
    )
