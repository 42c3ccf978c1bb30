"""Planning: a resume from a moved copy of the same data is the same run; its manifest records
the inputs it used and its history, and nothing is stale."""

from __future__ import annotations

import json
import shutil

from evalfleet.engine.prepare.plan import plan
from evalfleet.engine.prepare.resolve import resolve
from evalfleet.engine.run.request import EvalRequest
from evalfleet.storage import layout


def test_resume_with_a_moved_dataset_updates_the_manifest(tmp_path, demo_dataset):
    moved = tmp_path / "moved"
    shutil.copytree(demo_dataset, moved)
    base = dict(
        models=["openai/sim-0.5"],
        benchmarks=["zerobench"],
        run_id="r1",
        store=str(tmp_path / "runs"),
        simulator_url="http://127.0.0.1:9",
    )
    first = plan(resolve(EvalRequest(**base, dataset_path=demo_dataset)))
    assert first.event == "new" and first.planned == len(first.todo) == 4 * 6
    manifest_path = tmp_path / "runs" / layout.manifest_key("r1")
    before = json.loads(manifest_path.read_text())
    assert [e["event"] for e in before["history"]] == ["created"]
    assert (tmp_path / "runs" / layout.plan_key("r1", "zerobench")).is_file()

    second = plan(resolve(EvalRequest(**base, dataset_path=str(moved))))
    after = json.loads(manifest_path.read_text())
    assert second.event == "resumed"
    assert after["request"]["dataset_path"] == str(moved)
    assert after["identity"] == before["identity"]
    assert after["created_at"] == before["created_at"]
    assert [e["event"] for e in after["history"]] == ["created", "resumed"]
    # identical bytes, so the same revision hash and the same request hashes: nothing stale
    assert after["datasets"]["zerobench"]["revision"] == before["datasets"]["zerobench"]["revision"]
    assert after["datasets"]["zerobench"]["source"] == f"dataset path {moved}"
    assert [i.request_hash for i in second.todo] == [i.request_hash for i in first.todo]


def test_a_plan_keeps_the_places_of_what_is_left_and_makes_the_same_items(tmp_path, demo_dataset):
    """The todo of a partly answered run holds 8-byte places; the items it makes from them
    are those every-answer listing gives, in its order, less the stored ones."""
    from evalfleet.engine.run.items import AnswerSpace, answer_items
    from tests.support.helpers import answered_run

    request = EvalRequest(
        models=["openai/sim-0.5", "openai/sim-0.6"],
        benchmarks=["zerobench", "zerobench_subquestions"],
        run_id="places",
        store=str(tmp_path / "runs"),
        simulator_url="http://127.0.0.1:9",
        dataset_path=demo_dataset,
    )
    run, items = answered_run(request, 10)
    stored = set(range(0, len(items), 3))  # every third answer kept, the others deleted
    for n, item in enumerate(items):
        if n not in stored:
            run.store.delete(item.store_key)
    planned = plan(resolve(request))
    space = AnswerSpace(run)
    assert [space.item(p) for p in range(len(space))] == list(space) == answer_items(run)
    hashed = [pair for name in space.names for pair in space.keys_and_hashes(name)]
    assert hashed == [(tuple(i.key), i.request_hash) for i in items]
    assert [p for name in space.names for p in space.places_of(name)] == list(range(len(items)))
    some = {tuple(i.key) for i in items[:3]}  # only the hashes a plan compares are worked out
    hashed = [pair for name in space.names for pair in space.keys_and_hashes(name, (some, ()))]
    assert hashed == [(tuple(i.key), i.request_hash if n < 3 else "") for n, i in enumerate(items)]
    assert planned.planned == len(items)
    assert planned.todo.places.itemsize == 8
    assert list(planned.todo.places) == [n for n in range(len(items)) if n not in stored]
    assert list(planned.todo) == [i for n, i in enumerate(items) if n not in stored]
    assert dict(planned.states) == {"done": len(stored), "missing": len(items) - len(stored)}
    left = planned.todo.where(lambda item: item.key.model == "openai/sim-0.6")
    assert list(left) == [i for i in planned.todo if i.key.model == "openai/sim-0.6"]
    samples = [(i.key.benchmark, i.key.sample_id) for i in planned.todo]
    assert planned.todo.samples() == list(dict.fromkeys(samples))


def test_aggregation_classifies_from_keys_and_hashes_as_reconcile_does(tmp_path, demo_dataset):
    """`reconcile_keys` (aggregation's million answers, no WorkItem made) gives the states,
    record keys and set-aside empty records `reconcile` gives, in the same order."""
    from evalfleet.engine.run.items import AnswerSpace
    from evalfleet.engine.run.state import list_records, reconcile, reconcile_keys
    from tests.support.helpers import answered_run

    request = EvalRequest(
        models=["openai/sim-0.5", "openai/sim-0.6"],
        benchmarks=["zerobench"],
        run_id="keys",
        store=str(tmp_path / "runs"),
        simulator_url="http://127.0.0.1:9",
        dataset_path=demo_dataset,
    )
    run, items = answered_run(request, 10)
    for item in items[1::4]:
        run.store.delete(item.store_key)
    listing = list_records(run.store, run.run_id, (layout.ANSWER,))
    listing.empty.add(items[2].store_key)  # as an S3 listing's zero size shows it
    space = AnswerSpace(run)
    pairs = (pair for name in space.names for pair in space.keys_and_hashes(name))
    fast = reconcile_keys(listing, pairs)
    slow = reconcile(run.store, listing, items, read=False)
    assert list(fast.state.items()) == list(slow.state.items())
    assert fast.record_key == slow.record_key and fast.undecodable == [items[2].store_key]
    assert fast.undecodable == slow.undecodable
    assert type(next(iter(fast.state))).__name__ == "ItemKey"
    states = list(fast.state.values())
    assert states.count("missing") == len(items[1::4]) + 1 == 13
