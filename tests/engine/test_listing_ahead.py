"""A resumed run's records listed by a child while the command starts, and its answers swept
there once the run is resolved: the plan takes that sweep (or the listing) once, within the
block only, and only if nothing can have written since; otherwise, or when the child gave
nothing, it lists and sweeps again itself."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
from datetime import UTC, datetime

import pytest

from evalfleet.engine.prepare import listing_ahead as ahead
from evalfleet.engine.prepare.plan import plan
from evalfleet.engine.prepare.resolve import resolve
from evalfleet.engine.run.request import EvalRequest
from evalfleet.storage import layout
from evalfleet.storage.changes import records_changing

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


def _listed(child, swept_for=None) -> None:
    """Until the child has its answer written (the pipe readable): the sweep of `swept_for`
    (a resolved run), or its listing."""
    if swept_for is None:
        child.end_asking()
    else:
        ahead.sweep_ahead(swept_for, retry_errors=True)
    ready, _, _ = select.select([child.answer], [], [], 30)
    assert ready, "the listing child gave no answer in 30 s"


@pytest.mark.parametrize("swept", [True, False], ids=["swept", "listing"])
def test_the_plan_takes_the_childs_answer_once_and_only_within_the_block(
    tmp_path, demo_dataset, swept
):
    """Seen by a record deleted behind its back (no writer may do that unmarked): the plan
    that took the child's sweep (or listing) still counts it done."""
    request = _request(tmp_path, demo_dataset)
    run, items = _partly_answered(request)
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES) as listing:
        assert listing is True  # the command then leaves both cores to the listing
        resolved = resolve(request)
        child = _child(run)
        _listed(child, resolved if swept else None)
        assert child.wanted == ({"missing", "stale", "failed"} if swept else None)
        run.store.delete(items[1].store_key)
        planned = plan(resolved)
        assert not ahead._ahead  # taken, once
    assert dict(planned.states) == {"done": 12, "missing": 12}
    assert [i.store_key for i in planned.todo] == [i.store_key for i in items[::2]]
    assert sorted(planned.unverified) == sorted(i.store_key for i in items[1::2])
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES):
        child = _child(run)
    assert child.process.poll() is not None  # not taken: gone with the block
    assert ahead.taken_ahead(run.store, run.run_id, STAGES, {"missing", "stale"}) is None
    assert not ahead._ahead
    assert plan(resolve(request)).states["done"] == 11  # listed by the plan itself


def test_a_sweep_for_other_states_or_a_capped_run_is_not_taken(tmp_path, demo_dataset):
    """The child swept asking failed answers again, the plan does not retry them: it lists
    and sweeps again. A capped run's plan needs the listing (what was spent): the child
    answers that instead of a sweep."""
    request = _request(tmp_path, demo_dataset)
    run, items = _partly_answered(request)
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES):
        resolved = resolve(request)
        _listed(_child(run), resolved)
        run.store.delete(items[1].store_key)
        planned = plan(resolved, retry_errors=False)
    assert dict(planned.states) == {"done": 11, "missing": 13}  # listed again
    capped = request.model_copy(update={"max_cost_usd": 5.0})
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES):
        resolved = resolve(capped)
        child = _child(run)
        ahead.sweep_ahead(resolved, retry_errors=True)
        assert child.wanted is None  # the listing, not a sweep
        assert select.select([child.answer], [], [], 30)[0]
        run.store.delete(items[3].store_key)
        planned = plan(resolved)
    assert dict(planned.states) == {"done": 11, "missing": 13}  # the child's listing
    assert planned.spent_usd > 0


def test_a_new_run_or_one_held_elsewhere_is_not_listed_ahead(tmp_path, demo_dataset):
    run = resolve(_request(tmp_path, demo_dataset, "fresh"))
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES) as listing:
        assert listing is False
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
    with ahead.listing_ahead(run.store, None, run.run_id, STAGES) as listing:
        assert listing is False
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
    from evalfleet.engine.store.manifest import open_run

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
