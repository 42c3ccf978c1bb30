"""The dispatcher's parts on their own, without Ray: small stand-ins for the worker actors
(each records what it was sent) and for the crew. What needs Ray (collecting outcomes, a
worker lost with its node, the drain) is run for real by test_node_loss.py, test_head_loss.py
and tests/engine/test_interrupts.py."""

from __future__ import annotations

from typing import Any

from evalfleet.core.types import Decoding
from evalfleet.storage.layout import ItemKey
from evalfleet.tasks.budget import Budget
from evalfleet.tasks.dispatch import BLOCK, CHUNK, Dispatcher, dispatch
from evalfleet.tasks.endpoints import DOWN_AFTER
from evalfleet.tasks.work import WorkItem
from evalfleet.tasks.worker import ClaimLost, Outcome

CLAIM = "claim-1"


class Method:
    """An actor method: `.remote(...)` records its arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def remote(self, *args: Any) -> object:
        self.calls.append(args)
        return object()


class Actor:
    def __init__(self, name: str) -> None:
        self.name = name
        self.submit = Method()

    def sent(self) -> list[list[str]]:
        """The names of the items of each chunk submitted, in order."""
        return [[name(item) for item, _ in chunk] for claim, chunk in self.submit.calls]


class Crew:
    claim = CLAIM

    def __init__(self) -> None:
        self.started: list[Actor] = []
        self.ended: list[Actor] | None = None

    def new(self) -> Actor:
        actor = Actor(f"new-{len(self.started)}")
        self.started.append(actor)
        return actor

    def end(self, actors: list[Actor]) -> None:
        self.ended = list(actors)


class Head:
    """A Ray head already lost."""

    def lost(self) -> str:
        return "the Ray head at 10.0.0.1:6379 has not answered for 8 s"

    def answers(self) -> bool:
        return False


def item(model: str, sample: int, recheck: bool = False, judge: str = "") -> WorkItem:
    key = ItemKey.answer(model, "bench", str(sample), 0)
    if judge:
        key = key.judged_by(judge)
    return WorkItem("run", key, Decoding(), "h" * 64, recheck=recheck)


def name(work: WorkItem) -> str:
    prefix = f"{work.key.judge}:" if work.key.judge else ""
    return f"{prefix}{work.key.model}{work.key.sample_id}"


def jobs(model: str, count: int, start: int = 0) -> list[tuple[WorkItem, Any]]:
    return [(item(model, i), i) for i in range(start, start + count)]


def outcome(
    work: WorkItem, status: str = "ok", cost: float = 0.0, kind: str | None = None, error: str = ""
) -> Outcome:
    return Outcome(work.key, status, kind, 1, 10, 5, cost, f"key/{name(work)}", None, error)


def dispatcher(source: Any, workers: int = 1, **options: Any) -> Dispatcher:
    options.setdefault("max_in_flight", 100)
    options.setdefault("per_model_limit", {})
    actors = [Actor(f"w{i}") for i in range(workers)]
    return Dispatcher(source, Crew(), actors, **options)  # type: ignore[arg-type]


def test_fill_sends_the_models_in_turn_up_to_each_ones_limit_and_the_total():
    d = dispatcher(jobs("a", 4) + jobs("b", 4), max_in_flight=5, per_model_limit={"a": 2})
    d.fill()
    assert d.pool[0].actor.sent() == [["a0", "b0", "a1", "b1", "b2"]]
    assert d.pool[0].actor.submit.calls[0][0] == CLAIM
    assert (d.turns.busy, d.in_flight(), d.taken) == ({"a": 2, "b": 3}, 5, 8)
    d.fill()  # no room left: nothing more is sent
    assert len(d.pool[0].actor.submit.calls) == 1
    assert [name(i) for i, _ in d.turns.queues["a"]] == ["a2", "a3"]
    assert [name(i) for i, _ in d.turns.queues["b"]] == ["b3"]


def test_the_total_limit_ends_a_turn_half_way():
    d = dispatcher(jobs("a", 3) + jobs("b", 3) + jobs("c", 3), max_in_flight=4)
    d.fill()
    assert d.pool[0].actor.sent() == [["a0", "b0", "c0", "a1"]]


def test_fill_sends_chunks_each_to_the_least_busy_worker():
    d = dispatcher(jobs("a", 2 * CHUNK + 2), workers=2, max_in_flight=1000)
    d.fill()
    sizes = [[len(c) for c in w.actor.sent()] for w in d.pool]
    assert sizes == [[CHUNK, 2], [CHUNK]]
    assert d.pool[0].actor.sent()[1] == [f"a{2 * CHUNK}", f"a{2 * CHUNK + 1}"]
    assert [len(w.outstanding) for w in d.pool] == [CHUNK + 2, CHUNK]


def test_a_model_at_its_limit_keeps_the_rest_of_the_source_unread():
    source = (job for job in jobs("a", 5000))
    d = dispatcher(source, max_in_flight=10, per_model_limit={"a": 3})
    d.fill()
    assert (d.taken, d.in_flight(), len(d.turns.queues["a"])) == (BLOCK, 3, BLOCK - 3)
    assert d.left_untaken() == 5000 - BLOCK  # counted by reading what is left, once


def test_landed_settles_the_budget_counts_and_hands_the_outcomes_on():
    seen: list[list[str]] = []
    judged = item("a", 0, judge="j")
    budget = Budget(10.0, 1.0, lambda work, prompt: 0.5)
    d = dispatcher(
        jobs("a", 2),
        budget=budget,
        on_progress=lambda outcomes: seen.append([o.store_key for o in outcomes]),
        follow_up=lambda o: [(judged, ["parts"])] if o.key.sample_id == "0" else [],
    )
    d.fill()
    assert budget.reserved_usd == 1.0
    sent = [work for work, _ in d.pool[0].outstanding.values()]
    d.landed(0, [outcome(sent[0], cost=0.25), outcome(sent[1], "failed", 0.0, "timeout", "t/o")])
    assert (budget.spent_usd, budget.reserved_usd) == (1.25, 0.0)
    assert (d.turns.busy["a"], d.in_flight()) == (0, 0)
    result = d.result
    assert (result.submitted, dict(result.statuses)) == (2, {"ok": 1, "failed": 1})
    assert (dict(result.errors), dict(result.cost_usd)) == ({"timeout": 1}, {"answer": 0.25})
    assert seen == [["key/a0", "key/a1"]]
    assert [(name(i), p) for i, p in d.turns.queues["j"]] == [("j:a0", ["parts"])]


def test_the_budget_holds_a_model_back_until_its_calls_settle_then_ends_the_run():
    budget = Budget(0.25, 0.0, lambda work, prompt: 0.1)
    d = dispatcher(jobs("a", 5), budget=budget)
    d.fill()  # the third 0.10 would pass 0.25 with two in flight: wait for them
    assert (d.in_flight(), d.result.budget_reached) == (2, False)
    d.fill()  # refused again, nothing sent, but calls in flight may settle below
    assert (d.in_flight(), d.result.budget_reached) == (2, False)
    d.landed(0, [outcome(w, cost=0.1) for w, _ in list(d.pool[0].outstanding.values())])
    d.fill()  # refused with nothing in flight: the budget is reached
    assert (d.in_flight(), d.result.budget_reached, budget.spent_usd) == (0, True, 0.2)
    assert len(d.turns.queues["a"]) == 3


def test_a_model_the_budget_holds_back_reads_no_more_of_the_source():
    budget = Budget(1.0, 0.0, lambda work, prompt: 0.1 if work.key.model == "b" else 5.0)
    d = dispatcher((job for job in jobs("b", 1) + jobs("a", 3000)), budget=budget)
    d.fill()  # b's one item goes; a's first is refused: nothing more is taken for b
    assert (d.pool[0].actor.sent(), d.taken, d.result.budget_reached) == ([["b0"]], BLOCK, False)


def test_a_down_endpoint_drops_its_queue_and_its_later_items():
    d = dispatcher(jobs("a", DOWN_AFTER + 3) + jobs("b", 1), per_model_limit={"a": DOWN_AFTER})
    d.fill()
    d.turns.queues["a"].appendleft((item("a", 99, recheck=True), 99))  # sent by a lost worker
    failed = [
        outcome(w, "failed", 0.0, "connection", "refused")
        for w, _ in d.pool[0].outstanding.values()
        if w.key.model == "a"
    ]
    d.landed(0, failed)
    assert d.result.down == {"a": "connection: refused"}
    assert "a" not in d.turns.queues
    assert (d.result.not_started, d.result.abandoned) == (3, 1)
    d.enqueue(item("a", 100), 100)  # a follow-up of a model that is down is not queued
    assert ("a" in d.turns.queues, d.result.not_started) == (False, 4)
    assert d.in_flight() == 1  # b's item


def test_a_failed_write_is_kept_once_and_ends_sending():
    d = dispatcher(jobs("a", 3))
    d.fill()
    sent = [w for w, _ in d.pool[0].outstanding.values()]
    d.landed(0, [outcome(sent[0], "write_failed", 0.1, None, "disk full")])
    d.landed(0, [outcome(sent[1], "write_failed", 0.1, None, "again")])
    assert d.result.write_failed == "key/a0: disk full"
    assert d.sending() is False


def test_a_worker_that_lost_the_claim_is_replaced_and_its_items_rechecked_first():
    budget = Budget(10.0, 0.0, lambda work, prompt: 1.0)
    d = dispatcher(jobs("a", 2) + jobs("b", 1), max_in_flight=2, budget=budget)
    d.fill()
    old = d.pool[0].actor
    d.lost(0, ClaimLost())
    assert d.pool[0].actor.name == "new-0" and d.pool[0].outstanding == {}
    assert (d.retired, d.result.redispatched) == ([old], 2)
    assert (d.turns.busy["a"], d.turns.busy["b"], budget.reserved_usd) == (0, 0, 0.0)
    queued = {m: [(name(i), i.recheck) for i, _ in q] for m, q in d.turns.queues.items()}
    assert queued == {"a": [("a0", True), ("a1", False)], "b": [("b0", True)]}


def test_with_the_head_lost_a_lost_worker_is_not_replaced_nor_the_crew_ended():
    d = dispatcher(jobs("a", 2), head=Head())
    d.fill()
    d.lost(0, ClaimLost())
    assert (d.pool[0].actor.name, d.result.redispatched, d.in_flight()) == ("w0", 0, 2)
    result = d.run()  # ends at once: the calls in flight are counted as sent, not stored
    assert (result.head_lost, result.stopped) == (Head().lost(), False)
    assert (result.abandoned, result.not_started) == (2, 0)
    assert d.crew.ended is None


def test_a_stop_before_anything_is_sent_counts_every_job_not_started():
    crew = Crew()
    workers = [Actor("w0"), Actor("w1")]
    source = (job for job in jobs("a", 4))  # its length unknown: counted by reading it
    result = dispatch(
        source,
        crew,  # type: ignore[arg-type]
        workers,
        max_in_flight=10,
        per_model_limit={},
        stop_requested=lambda: True,
    )
    assert (result.stopped, result.not_started, result.abandoned) == (True, 4, 0)
    assert crew.ended == workers
    assert [w.submit.calls for w in workers] == [[], []]
