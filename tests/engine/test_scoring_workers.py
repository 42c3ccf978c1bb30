"""Scoring in worker processes: the shards come back in order, as this process scores them,
and a worker's failure stops the aggregation with the worker's own traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalfleet.engine.scoring import score
from evalfleet.engine.scoring.shards import Shard, score_shard
from evalfleet.engine.scoring.workers import ScoringWorkerError, WorkerPool
from evalfleet.engine.store.stored import load_run
from evalfleet.storage import open_store
from evalfleet.storage.layout import ItemKey

STORED = Path(__file__).resolve().parents[1] / "data" / "stored_runs" / "store"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("workers") / "runs"
    shutil.copytree(STORED, root)
    return open_store(str(root))


def test_workers_score_each_shard_as_this_process_does_in_order(store, monkeypatch):
    monkeypatch.setattr(score, "SHARD_ANSWERS", 5)
    run = load_run(store, "stored-rome", read=False)  # a judge: its records are read too
    shards = list(score.list_shards(run))
    assert [len(s.answers) for s in shards] == [5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5]
    here = [score_shard(run, shard) for shard in shards]
    with WorkerPool(store, "stored-rome", 2) as pool:
        there = list(pool.map(shards))
    assert [p.rows.to_pylist() for p in there] == [p.rows.to_pylist() for p in here]
    assert [p.scored_keys for p in there] == [p.scored_keys for p in here]
    assert [p.usage.rows for p in there] == [p.usage.rows for p in here]
    assert [p.usage.judge_rows for p in there] == [p.usage.judge_rows for p in here]
    judged = sum(len(p.scored_keys) for p in here) - sum(len(s.answers) for s in shards)
    assert judged == 16  # the judgements of judges.csv, read with the answers they grade


def test_a_worker_that_fails_names_its_error(store):
    unknown = Shard("no_such_benchmark", [(ItemKey.answer("m", "x", "1", 0), "k", "done")])
    with (
        WorkerPool(store, "stored-rome", 2) as pool,
        pytest.raises(ScoringWorkerError, match="KeyError: 'no_such_benchmark'"),
    ):
        list(pool.map([unknown]))
