"""The checkpoint record: the bytes of today's format read back into a `Record` and written
again unchanged, and whatever is not a record refused with the field that is wrong."""

from __future__ import annotations

import json

import pytest

from evalfleet.core.record import CallError, Cost, Graded, Record, UnreadableRecord, Usage
from evalfleet.core.types import Decoding

# a record as evalfleet wrote them before the type existed (record_version 2)
STORED = {
    "record_version": 2,
    "run_id": "demo",
    "stage": "judge",
    "judge_model": "anthropic/sim-0.9",
    "model": "openai/sim-0.3",
    "benchmark": "zerobench_subquestions",
    "sample_id": "1_2",
    "epoch": 1,
    "request_hash": "05e1b194708a9e9d0cae16a2ae6d33c7edff6b2cbb6bfdb2408a2e2deead1620",
    "graded": {"key": "demo/completions/x/1.json", "response_sha256": "ab" * 32},
    "provider": "openai",
    "api_model": "sim-0.3",
    "model_reported": "sim-0.3",
    "request": {
        "temperature": 0.7,
        "top_p": 0.95,
        "max_tokens": 16000,
        "seed": 43,
        "reasoning_effort": None,
    },
    "response": "So the final answer is {10}",
    "reasoning": None,
    "finish_reason": "stop",
    "usage": {
        "input_tokens": 292,
        "output_tokens": 28,
        "reasoning_tokens": 0,
        "cached_input_tokens": 0,
    },
    "cost_usd": 0.000404,
    "cost": {
        "input": 0.000292,
        "cached_input": 0.0,
        "output": 0.000112,
        "reasoning": 0.0,
        "total": 0.000404,
    },
    "latency_s": 0.3597,
    "attempts": 2,
    "attempt_errors": [
        {"type": "server_error", "status": 500, "message": "boom", "request_id": "req_1"}
    ],
    "request_id": "req_sim8d2d6a00007f",
    "started_at": "2026-11-26T09:10:38.818+00:00",
    "finished_at": "2026-11-26T09:10:39.177+00:00",
    "error": None,
    "batch": None,
}


def test_todays_format_reads_into_attributes_and_writes_back_unchanged():
    record = Record.from_bytes(json.dumps(STORED).encode())
    assert record.stage == "judge" and record.judge_model == "anthropic/sim-0.9"
    assert record.graded == Graded("demo/completions/x/1.json", "ab" * 32)
    assert record.request == Decoding(0.7, 0.95, 16000, 43, None)
    assert record.usage == Usage(292, 28, 0, 0)
    assert record.cost == Cost(0.000292, 0.0, 0.000112, 0.0, 0.000404)
    assert record.attempt_errors == (CallError("server_error", 500, "boom", "req_1"),)
    assert (record.failed, record.spent_usd) == (False, 0.000404)
    assert record.to_dict() == STORED
    assert list(json.loads(record.to_bytes())) == list(STORED)  # the same field order
    assert Record.from_bytes(record.to_bytes()) == record


def test_a_record_from_before_costs_were_kept_still_reads():
    old = {k: v for k, v in STORED.items() if k not in ("cost", "cost_usd", "attempt_errors")}
    record = Record.from_bytes(json.dumps(old).encode())
    assert (record.cost, record.cost_usd, record.spent_usd) == (None, None, 0.0)
    assert record.attempt_errors == ()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"sample_id": 7}, "sample_id is int, not text"),
        ({"epoch": "1"}, "epoch is str, not an integer"),
        ({"cost_usd": -0.5}, "cost_usd is -0.5, not a cost"),
        ({"cost_usd": float("nan")}, "cost_usd is nan, not a cost"),
        ({"cost_usd": "0.1"}, "cost_usd is str, not a number of USD"),
        ({"cost": {"input": float("inf")}}, "cost.input is inf, not a cost"),
        ({"usage": {"input_tokens": 1.5}}, "input_tokens is float, not an integer"),
    ],
)
def test_what_is_not_a_record_is_refused_naming_the_field(change, words):
    with pytest.raises(UnreadableRecord, match=words.replace(".", r"\.")):
        Record.from_bytes(json.dumps({**STORED, **change}).encode())
    assert Record.read(json.dumps({**STORED, **change}).encode()) is None


@pytest.mark.parametrize(
    "data", [b"", b"{", b"[1, 2]", b"\xff\xfe", json.dumps({"model": "m"}).encode()]
)
def test_cut_short_or_garbage_bytes_are_not_a_record(data):
    assert Record.read(data) is None
    if data:
        with pytest.raises(UnreadableRecord):
            Record.from_bytes(data)


def test_a_record_is_frozen():
    record = Record.from_bytes(json.dumps(STORED).encode())
    with pytest.raises(AttributeError):
        record.response = "changed"  # type: ignore[misc]


# --- the per-attempt ledger (record_version 3) ----------------------------------------------

EMPTY = {
    "number": 1,
    "outcome": "empty_answer",
    "at": "2026-11-28T09:00:00.000+00:00",
    "latency_s": 0.5,
    "status": 200,
    "request_id": "req_1",
    "message": "empty answer (finish reason stop)",
    "finish_reason": "stop",
    "usage": {
        "input_tokens": 1000,
        "output_tokens": 0,
        "reasoning_tokens": 0,
        "cached_input_tokens": 0,
    },
    "cost": {"input": 0.001, "cached_input": 0.0, "output": 0.0, "reasoning": 0.0, "total": 0.001},
    "estimated": False,
}
REFUSED = {
    **EMPTY,
    "number": 2,
    "outcome": "server_error",
    "status": 500,
    "request_id": "req_2",
    "message": "boom",
    "finish_reason": None,
    "usage": None,
    "cost": None,
}
ANSWERED = {
    **EMPTY,
    "number": 3,
    "outcome": "answer",
    "request_id": "req_3",
    "message": "",
    "usage": {
        "input_tokens": 1000,
        "output_tokens": 50,
        "reasoning_tokens": 0,
        "cached_input_tokens": 0,
    },
    "cost": {
        "input": 0.001,
        "cached_input": 0.0,
        "output": 0.0002,
        "reasoning": 0.0,
        "total": 0.0012,
    },
    "estimated": True,
}
V3 = {
    **STORED,
    "record_version": 3,
    "call_id": "0a1b2c3d4e5f",
    "ledger": [EMPTY, REFUSED, ANSWERED],
    "usage": {
        "input_tokens": 2000,
        "output_tokens": 50,
        "reasoning_tokens": 0,
        "cached_input_tokens": 0,
    },
    "cost_usd": 0.0022,
}


def test_a_record_with_its_ledger_reads_and_writes_back_unchanged():
    record = Record.from_bytes(json.dumps(V3).encode())
    assert [a.outcome for a in record.ledger] == ["empty_answer", "server_error", "answer"]
    assert [a.billed for a in record.ledger] == [True, False, True]
    assert record.billed_attempts == 2
    assert record.retry_cost_usd == 0.001  # the empty answer before the last billed one
    assert record.cost_estimated  # the last one's usage was counted here
    assert record.ledger[1].cost_usd == 0.0
    assert record.to_dict() == V3
    assert Record.from_bytes(record.to_bytes()) == record


def test_a_record_before_the_ledger_counts_its_one_answer_as_billed():
    record = Record.from_bytes(json.dumps(STORED).encode())
    assert (record.billed_attempts, record.retry_cost_usd, record.cost_estimated) == (1, 0, False)
    assert "ledger" not in record.to_dict()  # written back as it was read


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            {"ledger": [{**EMPTY, "usage": {**EMPTY["usage"], "input_tokens": -5}}]},
            "input_tokens is -5, not a count of tokens",
        ),
        (
            {"ledger": [{**EMPTY, "cost": {**EMPTY["cost"], "total": -1.0}}]},
            "cost.total is -1.0, not a cost",
        ),
        ({"ledger": ["x"]}, "a ledger entry is str, not an object"),
        ({"stage": "guess"}, "stage is 'guess', not one of answer, judge"),
        ({"record_version": 9}, "record_version is 9, not 1 to 3"),
    ],
)
def test_a_ledger_or_stage_that_is_not_one_is_refused(change, words):
    with pytest.raises(UnreadableRecord, match=words.replace(".", r"\.").replace("(", r"\(")):
        Record.from_bytes(json.dumps({**V3, **change}).encode())
