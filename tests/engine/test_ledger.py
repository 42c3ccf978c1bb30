"""A run's ledger entries: the billed attempts of a call that stored no record count in what
the run cost (its usage table, a cap's starting spend); those of a call that did are in its
record already and count once."""

from __future__ import annotations

from evalfleet.core.record import Attempt, Cost, Usage
from evalfleet.core.types import Decoding
from evalfleet.engine.run.ledger import unrecorded
from evalfleet.engine.run.state import stored_spend
from evalfleet.engine.scoring.spend import UsageSums
from evalfleet.providers.types import ErrorKind, ProviderError, ProviderResponse
from evalfleet.providers.types import Usage as CallUsage
from evalfleet.storage import layout
from evalfleet.storage.layout import ItemKey
from evalfleet.storage.local import LocalStore
from evalfleet.tasks.records import build_record, ledger_entry
from evalfleet.tasks.work import WorkItem

RUN = "led"
ITEM = WorkItem(RUN, ItemKey.answer("openai/m", "zerobench", "7", 1), Decoding(), "cd" * 32)


def empty(number: int, usd: float) -> Attempt:
    return Attempt(
        number,
        "empty_answer",
        status=200,
        request_id=f"req_{number}",
        usage=Usage(1000, 0),
        cost=Cost(input=usd, total=usd),
    )


def keep(store: LocalStore, call_id: str, attempt: Attempt) -> None:
    entry = ledger_entry(ITEM, call_id, attempt)
    key = layout.ledger_key(RUN, ITEM.key, ITEM.request_hash, call_id, attempt.number)
    assert store.put_if_absent(key, entry.to_bytes())


def test_only_the_entries_of_calls_without_a_record_are_unrecorded(tmp_path):
    from evalfleet.providers.registry import resolve_model

    store = LocalStore(str(tmp_path))
    config = resolve_model("openai/gpt-4o-2024-11-20")
    # call "a" was killed after two empty answers: no record
    keep(store, "aaaaaaaaaaaa", empty(1, 0.001))
    keep(store, "aaaaaaaaaaaa", empty(2, 0.002))
    # call "b" stored its record after an empty answer: the record has the attempt
    keep(store, "bbbbbbbbbbbb", empty(1, 0.004))
    answer = ProviderResponse("{7}", "stop", CallUsage(1000, 10))
    record = build_record(
        ITEM,
        config,
        response=answer,
        error=None,
        attempts=2,
        attempt_errors=[ProviderError(ErrorKind.EMPTY_ANSWER, "empty", status=200)],
        started=0.0,
        finished=1.0,
        latency_s=0.5,
        ledger=[
            empty(1, 0.004),
            Attempt(2, "answer", usage=Usage(1000, 10), cost=Cost(total=0.0026)),
        ],
        call_id="bbbbbbbbbbbb",
    )
    assert record.spent_usd == 0.0066 and record.billed_attempts == 2
    assert store.put_if_absent(ITEM.store_key, record.to_bytes())

    found = unrecorded(store, RUN)
    assert sorted((e.call_id, e.attempt.number) for e in found) == [
        ("aaaaaaaaaaaa", 1),
        ("aaaaaaaaaaaa", 2),
    ]
    # a cap's starting spend: the record's two attempts and the killed call's two
    assert stored_spend(store, RUN) == 0.0066 + 0.003

    sums = UsageSums()
    sums.add_answer("openai/m", "zerobench", record)
    for entry in found:
        sums.add_unrecorded(entry)
    (row,) = sums.usage_table([("openai/m", "zerobench")]).to_dict("records")
    assert row["cost_usd"] == 0.0096
    assert row["billed_attempts"] == 4
    assert row["retry_cost_usd"] == 0.004 + 0.003  # the record's first and the killed call's
    assert row["input_tokens"] == 4000 and row["answers"] == 1
