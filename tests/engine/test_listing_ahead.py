"""A resumed run's records listed by a child while the command starts: the plan takes that
listing once, within the block only, and only if nothing can have written since; otherwise,
or when the child gave nothing, it lists again itself."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
from datetime import UTC, datetime

from engine.prepare import listing_ahead as ahead
from engine.prepare.plan import plan
from engine.prepare.resolve import resolve
from engine.run.request import EvalRequest
from storage import layout
from storage.changes import records_changing

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
    """The run with 12 of its 24 answers stored (every other one deleted)."""
    from tests.support.helpers import answered_run

    run, items = answered_run(request, 10)
    for item in items[::2]:
        run.store.delete(item.store_key)
    return run, items


def _child(run):
    return ahead._ahead[(run.store.url, run.run_id)]


def _listed(child) -> None:
    """Until the child has its answer written (the pipe readable)."""
    ready, _, _ = select.select([child.answer], [], [], 30)
    assert ready, "the listing child gave no answer in 30 s"


def test_the_plan_takes_the_childs_listing_once_and_only_within_the_block(tmp_path, demo_dataset):
    """Seen by a record deleted behind its back (no writer may do that unmarked): the plan
    that took the child's listing still counts it done."""
    request = _request(tmp_path, demo_dataset)
    run, items = _partly_answered(request)
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES):
        _listed(_child(run))
        run.store.delete(items[1].store_key)
        planned = plan(resolve(request))
        assert not ahead._ahead  # taken, once
    assert dict(planned.states) == {"done": 12, "missing": 12}
    assert [i.store_key for i in planned.todo] == [i.store_key for i in items[::2]]
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES):
        child = _child(run)
    assert child.process.poll() is not None  # not taken: gone with the block
    assert ahead.taken_ahead(run.store, run.run_id, STAGES) is None
    assert not ahead._ahead
    assert plan(resolve(request)).states["done"] == 11  # listed by the plan itself


def test_a_new_run_or_one_held_elsewhere_is_not_listed_ahead(tmp_path, demo_dataset):
    run = resolve(_request(tmp_path, demo_dataset, "fresh"))
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES):
        assert not ahead._ahead
        assert plan(run).states == {"missing": 24}
    key = layout.manifest_key(run.run_id)
    manifest = json.loads(run.store.get(key))
    manifest["heartbeat"] = {  # another live process on this host, beating now
        "state": "running",
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "interval_s": 10.0,
        "started_at": "2026-11-27T00:00:00.000000+00:00",
        "host": socket.gethostname(),
        "pid": os.getppid(),
        "flow_run_id": None,
    }
    run.store.put(key, json.dumps(manifest).encode())
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES):
        assert not ahead._ahead


def test_a_change_marked_after_the_listing_began_is_not_missed(tmp_path, demo_dataset):
    """A record moved aside by a writer outside a run command (here deleted inside
    `records_changing`, as `status --quarantine` does) after the child listed it: the plan
    lists again and asks that answer."""
    request = _request(tmp_path, demo_dataset)
    run, items = _partly_answered(request)
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES):
        child = _child(run)
        _listed(child)
        with records_changing(run.store, run.run_id, "test"):
            run.store.delete(items[1].store_key)
        planned = plan(resolve(request))
    assert child.process.poll() is not None
    assert dict(planned.states) == {"done": 11, "missing": 13}  # listed again
    assert items[1].store_key in [i.store_key for i in planned.todo]


def test_a_run_opened_by_another_command_meanwhile_is_listed_again(tmp_path, demo_dataset):
    """Another command opened the run after the child listed it (the manifest's history has
    its event besides this command's) and its records changed: the plan lists again."""
    from engine.store.manifest import open_run

    request = _request(tmp_path, demo_dataset)
    run, items = _partly_answered(request)
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES):
        child = _child(run)
        _listed(child)
        open_run(run.store, run.manifest, run.data, extend=False)  # the other command
        run.store.delete(items[1].store_key)
        planned = plan(resolve(request))
    assert child.process.poll() is not None
    assert dict(planned.states) == {"done": 11, "missing": 13}  # listed again


def test_a_killed_listing_child_leaves_the_plan_to_list(tmp_path, demo_dataset):
    request = _request(tmp_path, demo_dataset)
    run, items = _partly_answered(request)
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES):
        child = _child(run)
        child.process.send_signal(signal.SIGKILL)
        child.process.wait()
        planned = plan(resolve(request))
    assert child.process.returncode == -signal.SIGKILL
    assert dict(planned.states) == {"done": 12, "missing": 12}
    assert [i.store_key for i in planned.todo] == [i.store_key for i in items[::2]]
