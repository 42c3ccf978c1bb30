"""A resume plans from the listing alone and reads the stored records back after its first
requests: an undecodable one (cut short, empty, garbage, or JSON that is no record) is moved to
quarantine/ byte for byte and its item asked again in the same run; never counted done. No Ray
here: `tests/engine/test_write_failures.py` runs it end to end."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from evalfleet.engine.pipeline import Steps, evaluate
from evalfleet.engine.prepare.plan import plan, recheck
from evalfleet.engine.prepare.resolve import ResolvedRun
from evalfleet.engine.run.outcome import RunOutcome
from evalfleet.engine.run.request import EvalRequest
from evalfleet.engine.run.state import undecodable
from evalfleet.storage import layout
from evalfleet.tasks.work import WorkItem
from tests.support.helpers import answered_run

MODEL = "openai/sim-0.5"


def stored_run(dataset: str, runs: Path) -> tuple[ResolvedRun, list[WorkItem]]:
    """The demo's main questions (4 samples x 6 epochs) with every answer stored."""
    request = EvalRequest(
        models=[MODEL],
        benchmarks=["zerobench"],
        dataset_path=dataset,
        run_id="back",
        store=str(runs),
        simulator_url="http://127.0.0.1:9",  # never contacted
    )
    return answered_run(request, 10, 2)


def damage(runs: Path, items: list[WorkItem]) -> dict[str, bytes]:
    """Four records made undecodable, each as it would be found: key -> its bytes."""
    whole = (runs / items[1].store_key).read_bytes()
    assert whole.endswith(b"}")
    record = json.loads(whole)
    damaged = {
        items[1].store_key: whole[:150],  # a write cut short
        items[6].store_key: b"",  # a file whose data never reached the disk
        items[13].store_key: b"\x00\xff\xfe not a record \x80",
        items[20].store_key: json.dumps({**record, "cost_usd": -1.0}).encode(),  # decodes
    }
    for key, data in damaged.items():
        (runs / key).write_bytes(data)
    return damaged


def test_a_resume_reads_no_record_before_its_first_request(demo_dataset, tmp_path):
    runs = tmp_path / "runs"
    run, items = stored_run(demo_dataset, runs)
    damaged = damage(runs, items)
    resumed = plan(run)
    assert (resumed.event, list(resumed.todo), dict(resumed.states)) == (
        "resumed",
        [],
        {"done": 24},
    )
    assert resumed.quarantined == 0
    assert resumed.unverified == [item.store_key for item in items]  # in plan order
    assert run.store.list("back/quarantine") == []
    assert {key: (runs / key).read_bytes() for key in damaged} == damaged  # untouched


def test_the_read_back_quarantines_undecodable_records_and_asks_them_again(demo_dataset, tmp_path):
    runs = tmp_path / "runs"
    run, items = stored_run(demo_dataset, runs)
    damaged = damage(runs, items)
    again = recheck(plan(run))
    assert again is not None
    assert list(again.todo) == [items[1], items[6], items[13], items[20]]
    assert (again.judge_todo, again.quarantined, again.unverified) == ([], 4, [])
    assert dict(again.states) == {"done": 20, "missing": 4}
    quarantined = {layout.quarantine_key("back", key): data for key, data in damaged.items()}
    assert run.store.list("back/quarantine") == sorted(quarantined)
    assert run.store.get_many(quarantined) == quarantined
    assert not any((runs / key).exists() for key in damaged)
    # nothing left to find: the next plan's read-back finds every record whole
    assert recheck(plan(run)) is None


def test_undecodable_names_exactly_the_records_that_do_not_decode(demo_dataset, tmp_path):
    runs = tmp_path / "runs"
    run, items = stored_run(demo_dataset, runs)
    damaged = damage(runs, items)
    (runs / items[3].store_key).unlink()  # gone since the listing: nothing to count done
    keys = [item.store_key for item in items]
    expected = [keys[1], keys[3], keys[6], keys[13], keys[20]]
    assert undecodable(run.store, keys, chunk=5) == expected
    assert undecodable(run.store, keys) == expected
    assert undecodable(run.store, [k for k in keys if k not in expected]) == []
    assert len(damaged) == 4


def steps(calls: list[str], outcomes: list[RunOutcome], again: object | None) -> Steps:
    def generate(run_plan):
        calls.append(f"generate {run_plan.name}")
        return outcomes.pop(0)

    def recheck_step(run_plan):
        calls.append(f"recheck {run_plan.name}")
        return again

    return Steps(
        plan=lambda run, retry_errors: SimpleNamespace(name="plan", unverified=["k"]),
        generate=generate,
        recheck=recheck_step,
        batches=lambda run_plan, retry_errors: RunOutcome("r"),
        aggregate=lambda store, run_id: {},
        leaderboard=lambda store: None,
    )


def test_the_run_reads_back_after_its_first_pass_and_asks_again_what_it_found():
    run = SimpleNamespace(run_id="r", request=SimpleNamespace(uses_batches=lambda: False))
    calls: list[str] = []
    first = RunOutcome("r", submitted=5)
    again = SimpleNamespace(name="again", unverified=[])
    outcome = evaluate(run, steps(calls, [first, RunOutcome("r", submitted=2)], again))
    assert calls == ["generate plan", "recheck plan", "generate again"]
    assert outcome.submitted == 7

    calls.clear()  # every record whole: nothing more
    outcome = evaluate(run, steps(calls, [RunOutcome("r", submitted=5)], None))
    assert (calls, outcome.submitted) == (["generate plan", "recheck plan"], 5)

    calls.clear()  # a stopped run reads nothing back: its next resume does
    stopped = RunOutcome("r", submitted=1, stopped=True)
    evaluate(run, steps(calls, [stopped], again))
    assert calls == ["generate plan"]
