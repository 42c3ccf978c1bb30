"""The online step of a run whose items left all go to the batch API says so, counting and
naming them, and does not claim they are stored; a run with nothing left says that."""

from __future__ import annotations

from evalfleet.engine.generation.online import nothing_online
from evalfleet.engine.prepare.plan import plan
from evalfleet.engine.prepare.resolve import resolve
from evalfleet.engine.run.request import EvalRequest
from tests.support.helpers import answered_run

ONLINE, BATCHED = "openai/sim-0.5", "anthropic/sim-0.6"


def request(tmp_path, dataset: str, **fields) -> EvalRequest:
    return EvalRequest(
        benchmarks=["zerobench"],
        simulator_url="http://127.0.0.1:9",
        store=str(tmp_path / "runs"),
        dataset_path=dataset,
        **fields,
    )


def test_items_left_for_the_batch_api_are_counted_and_named(tmp_path, demo_dataset):
    """The online model's answers are stored, the batch model's are not (24 items)."""
    asked = request(
        tmp_path, demo_dataset, models=[ONLINE, BATCHED], batch_models=[BATCHED], run_id="half"
    )
    run, items = answered_run(asked, 10)
    for item in items:
        if item.key.model == BATCHED:
            run.store.delete(item.store_key)
    whole = plan(resolve(asked))
    assert (len(whole.todo), len(whole.online_part().todo)) == (24, 0)
    assert nothing_online(whole) == (
        "nothing to request online: the 24 items without a record (24 answers, 0 judgements) "
        "go to the batch API of anthropic/sim-0.6: the batch step asks them next (or collects "
        "them from the batch jobs already open)"
    )


def test_a_run_with_every_record_stored_says_so(tmp_path, demo_dataset):
    asked = request(tmp_path, demo_dataset, models=[ONLINE], run_id="full")
    answered_run(asked, 10)
    assert nothing_online(plan(resolve(asked))) == (
        "nothing to request: every item already has a stored record"
    )
