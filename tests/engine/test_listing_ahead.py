"""A resumed run's records listed by a child while the command starts: the plan takes that
listing once, within the block only, and lists again itself when the child gave nothing."""

from __future__ import annotations

import signal

from engine.prepare import listing_ahead as ahead
from engine.prepare.plan import plan
from engine.prepare.resolve import resolve
from engine.run.request import EvalRequest
from engine.run.state import list_records
from storage import layout

STAGES = (layout.ANSWER,)


def _request(tmp_path, demo_dataset, run_id: str = "ahead") -> EvalRequest:
    return EvalRequest(
        models=["openai/sim-0.5"],
        benchmarks=["zerobench"],
        run_id=run_id,
        store=str(tmp_path / "runs"),
        simulator_url="http://127.0.0.1:9",
        dataset_path=demo_dataset,
    )


def _partly_answered(request):
    from tests.support.helpers import answered_run

    run, items = answered_run(request, 10)
    for item in items[::2]:
        run.store.delete(item.store_key)
    return run, items


def test_the_plan_takes_the_childs_listing_once_and_only_within_the_block(tmp_path, demo_dataset):
    request = _request(tmp_path, demo_dataset)
    run, items = _partly_answered(request)
    expected = list_records(run.store, run.run_id, STAGES)
    assert len(expected.ok) == len(items) // 2 == 12
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES):
        child = ahead._ahead[(run.store.url, run.run_id, STAGES)]
        listed = ahead.taken_ahead(run.store, run.run_id, STAGES)
        assert listed == expected
        assert ahead.taken_ahead(run.store, run.run_id, STAGES) is None  # once
    assert child.process.returncode == 0
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES):
        child = ahead._ahead[(run.store.url, run.run_id, STAGES)]
    assert child.process.poll() is not None  # not taken: the child is gone with the block
    assert ahead.taken_ahead(run.store, run.run_id, STAGES) is None
    assert not ahead._ahead


def test_a_new_run_lists_nothing_ahead(tmp_path, demo_dataset):
    run = resolve(_request(tmp_path, demo_dataset, "fresh"))
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES):
        assert not ahead._ahead
        assert plan(run).states == {"missing": 24}


def test_a_killed_listing_child_leaves_the_plan_to_list(tmp_path, demo_dataset):
    request = _request(tmp_path, demo_dataset)
    run, items = _partly_answered(request)
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES):
        child = ahead._ahead[(run.store.url, run.run_id, STAGES)]
        child.process.send_signal(signal.SIGKILL)
        child.process.wait()
        planned = plan(resolve(request))
    assert child.process.returncode == -signal.SIGKILL
    assert dict(planned.states) == {"done": 12, "missing": 12}
    assert [i.store_key for i in planned.todo] == [i.store_key for i in items[::2]]
