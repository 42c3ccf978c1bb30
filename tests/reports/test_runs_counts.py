"""`evalfleet runs` from the counts a run's last aggregation recorded ({run}/counts.json), and
only while they hold: exact figures for a run stored by an older evalfleet (no Ray, no
Prefect), edited to hold every kind of item `runs` counts.

The run (`tests/data/stored_runs`, 180 answers) is made to hold an item whose answer became a
terminal error (failed), one with a terminal error beside its answer (done), one whose answer
is gone (missing), one answered for another request (stale: done for `runs`) and one whose
record cannot be decoded (done for `runs`, which reads no record): `runs` counts 178 done and
1 failed, where the aggregation's own states say 1 stale and 1 unreadable. Its heartbeat is
this process's, ended. Each test then deletes one record by hand (no writer of evalfleet
does that, so nothing voids the counts): a listing gives 177 done, the recorded counts 178,
and every figure below tells which one `runs` showed.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from evalfleet.cli.main import main
from evalfleet.core.types import Decoding
from evalfleet.engine.run.state import answer_counts, list_records, quarantine
from evalfleet.engine.scoring.aggregate import aggregate_run
from evalfleet.engine.store import counts
from evalfleet.providers.batch import BatchStatus, LineResult
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.types import ErrorKind, ProviderError, ProviderResponse, Usage
from evalfleet.reports import status
from evalfleet.reports.status import run_progress
from evalfleet.storage import LocalStore, Store, layout, open_store
from evalfleet.storage.changes import marks
from evalfleet.tasks import batch_jobs
from evalfleet.tasks.records import build_record
from evalfleet.tasks.work import WorkItem

STORED = Path(__file__).resolve().parents[1] / "data" / "stored_runs" / "store"
RUN = "stored-zerobench"
MODEL = "openai/sim-0.3"
CONFIG = ModelConfig(
    id=MODEL, provider="openai", api_model="sim-0.3", base_url=None, api_key_env="OPENAI_API_KEY"
)
STARTED = "2026-11-26T12:57:23.250000+00:00"
RECORDED = {"done": 178, "failed": 1}
LISTED = {"done": 177, "failed": 1}  # after the record each test deletes by hand


def answer_keys(store: LocalStore) -> list[str]:
    names = layout.parse_record_keys(RUN, store.list(layout.stage_prefix(RUN, layout.ANSWER)))
    return sorted(n.key for n in names if n.item.model == MODEL and not n.failed)


def work_item(store: LocalStore, key: str) -> WorkItem:
    """The work item a stored answer answered."""
    record = json.loads(store.get(key))
    name = layout.parse_record_key(RUN, key)
    return WorkItem(RUN, name.item, Decoding(**record["request"]), record["request_hash"])


def store_failure(store: LocalStore, item: WorkItem) -> None:
    error = ProviderError(ErrorKind.BAD_REQUEST, "refused")
    record = build_record(
        item,
        CONFIG,
        response=None,
        error=error,
        attempts=1,
        attempt_errors=[error],
        started=1.0,
        finished=2.0,
        latency_s=None,
    )
    assert store.put_if_absent(item.failure_key(2000), record.to_bytes())


def set_beat(store: LocalStore, **fields) -> None:
    manifest = json.loads(store.get(layout.manifest_key(RUN)))
    manifest["heartbeat"] = {**manifest["heartbeat"], **fields}
    store.put(layout.manifest_key(RUN), json.dumps(manifest).encode())


def now() -> str:
    return datetime.now(UTC).isoformat()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> tuple[Path, dict, dict]:
    """The edited run, aggregated once: (its store's root, the aggregation's result, the
    items `missing` (gone) and `hand` (to delete by hand))."""
    root = tmp_path_factory.mktemp("counts") / "runs"
    shutil.copytree(STORED / RUN, root / RUN)
    store = LocalStore(root)
    keys = answer_keys(store)
    failed, beside, missing, stale, torn, hand = keys[:6]
    store_failure(store, work_item(store, failed))
    store.delete(failed)
    store_failure(store, work_item(store, beside))
    items = {"missing": work_item(store, missing), "hand": hand}
    store.delete(missing)
    head, _, tail = stale.rpartition("/")
    (root / stale).rename(root / head / f"{tail.split('.')[0]}.0123456789abcdef.json")
    (root / torn).write_bytes(b"{}")
    # the run's heartbeat: this process's (alive, so it can be made to look running), ended
    set_beat(
        store, state="finished", started_at=STARTED, host=socket.gethostname(), pid=os.getpid()
    )
    result = aggregate_run(store, RUN)
    return root, result, items


@pytest.fixture
def run(prepared, tmp_path) -> tuple[LocalStore, dict]:
    """A copy of the aggregated run, with one more record deleted by hand."""
    root, _, items = prepared
    copy = tmp_path / "runs"
    shutil.copytree(root, copy)
    store = LocalStore(copy)
    store.delete(items["hand"])
    return store, items


def shown(store: Store) -> dict[str, object]:
    row = run_progress(store, RUN)
    return {"done": row["done"], "failed": row["failed"], "counted": row["counted"]}


def aggregation(store: Store) -> str:
    at = datetime.fromisoformat(json.loads(store.get(layout.counts_key(RUN)))["listed_at"])
    return f"aggregation {at:%Y-%m-%d %H:%M:%S}Z"


def test_aggregation_records_what_a_listing_counts(prepared):
    root, result, _ = prepared
    store = LocalStore(root)
    recorded = json.loads(store.get(layout.counts_key(RUN)))
    listed_at = datetime.fromisoformat(recorded.pop("listed_at"))
    assert recorded == {
        **RECORDED,
        "heartbeat": [STARTED, socket.gethostname(), os.getpid()],
        "changes_seen": [],
    }
    assert timedelta(0) < datetime.now(UTC) - listed_at < timedelta(minutes=10)
    # the listing's count, as `runs` made it before; the aggregation's own states differ
    assert answer_counts(list_records(store, RUN, (layout.ANSWER,)))._asdict() == RECORDED
    assert (result["stale"], result["unreadable"], result["missing"]) == (1, 1, 2)


def test_runs_shows_an_ended_runs_recorded_counts_without_listing(run, monkeypatch, capsys):
    store, _ = run

    def no_listing(*args, **kwargs):
        raise AssertionError("listed")

    monkeypatch.setattr(status, "list_records", no_listing)
    capsys.readouterr()
    assert main(["runs", "--store", store.url]) == 0
    created = json.loads(store.get(layout.manifest_key(RUN)))["created_at"]
    assert capsys.readouterr().out.splitlines() == [
        "| run_id           | created_at                | models                         |"
        " benchmarks                        |   expected |   done |   failed | progress   |"
        " state    | counted                          |",
        "|:-----------------|:--------------------------|:-------------------------------|"
        ":----------------------------------|-----------:|-------:|---------:|:-----------|"
        ":---------|:---------------------------------|",
        f"| stored-zerobench | {created} | openai/sim-0.3, openai/sim-0.7 |"
        " zerobench, zerobench_subquestions |        180 |    178 |        1 | 98.9%      |"
        f" finished | {aggregation(store)} |",
        "",
        'counted "aggregation T": the answers as the run\'s last aggregation listed them at T'
        " (UTC);",
        "the run has ended and none was written or moved since. `evalfleet status RUN` reads"
        " every record.",
    ]


def test_without_counts_runs_lists_as_before(run, capsys):
    store, _ = run
    store.delete(layout.counts_key(RUN))
    assert shown(store) == {**LISTED, "counted": "listed now"}
    capsys.readouterr()
    assert main(["runs", "--store", store.url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].endswith("| finished | listed now |") and len(out) == 3  # no footnote


class EndedJob:
    """A provider whose batch job has ended with one answer."""

    def __init__(self, line: LineResult) -> None:
        self.line = line

    async def status(self, provider_id: str) -> BatchStatus:
        return BatchStatus(provider_id, "ended", "completed")

    async def results(self, provider_id: str) -> list[LineResult]:
        return [self.line]


def collect_answer(store: Store, item: WorkItem) -> None:
    """The batch poller collects a job that answered `item` (its answer is written)."""
    job = batch_jobs.Job("job-1", RUN, MODEL, "chat", [], state="submitted", provider_id="b-1")
    job.items.append(
        batch_jobs.JobItem("line-0", list(item.key), item.request_hash, item.decoding.to_dict(), 1)
    )
    answer = ProviderResponse(
        text="So the final answer is {3}", finish_reason="stop", usage=Usage()
    )
    results = asyncio.run(
        batch_jobs.collect(store, EndedJob(LineResult("line-0", answer)), job, CONFIG, 3)
    )
    assert results is not None and job.written == {"ok": 1, "failed": 0, "retry": 0}
    assert store.exists(item.store_key)


def test_an_answer_the_batch_poller_writes_voids_them(run):
    store, items = run
    assert shown(store) == {**RECORDED, "counted": aggregation(store)}
    collect_answer(store, items["missing"])
    assert not store.exists(layout.counts_key(RUN))
    assert len(marks(store, RUN)) == 1
    assert shown(store) == {"done": 178, "failed": 1, "counted": "listed now"}  # 177 + 1
    # the poller aggregates a run whose jobs have all ended: its counts saw the mark
    aggregate_run(store, RUN)
    assert json.loads(store.get(layout.counts_key(RUN)))["changes_seen"] == marks(store, RUN)
    assert shown(store) == {"done": 178, "failed": 1, "counted": aggregation(store)}


def test_an_aggregation_listing_while_the_poller_writes_records_no_counts_that_hold(run):
    """The aggregation lists before the answer lands and records its counts after the poller
    has deleted counts.json: the poller's mark, put after its answer, was not seen."""
    store, items = run
    store.delete(layout.counts_key(RUN))
    listed = counts.before_listing(store, RUN)
    assert listed is not None
    before = answer_counts(list_records(store, RUN, (layout.ANSWER,)))
    collect_answer(store, items["missing"])
    counts.record(store, RUN, listed, before)
    assert json.loads(store.get(layout.counts_key(RUN)))["done"] == 177
    assert shown(store) == {"done": 178, "failed": 1, "counted": "listed now"}


def test_status_quarantine_voids_them(run, capsys):
    store, _ = run
    capsys.readouterr()
    assert main(["status", RUN, "--store", store.url, "--quarantine"]) == 0
    assert (
        "1 undecodable records count as missing (moved to quarantine/):" in capsys.readouterr().out
    )
    assert marks(store, RUN) and not store.exists(layout.counts_key(RUN))
    assert shown(store) == {"done": 176, "failed": 1, "counted": "listed now"}


def test_quarantining_judgements_alone_leaves_them(run):
    """Only answers are counted: the planner moving a judgement aside changes nothing."""
    store, _ = run
    judgement = f"{RUN}/judgements/j/m/zerobench/1/0.0123456789abcdef.json"
    store.put(judgement, b"{}")
    quarantine(store, RUN, [judgement])
    assert not store.exists(judgement) and marks(store, RUN) == []
    assert shown(store) == {**RECORDED, "counted": aggregation(store)}


@pytest.mark.parametrize(
    "beat",
    [
        pytest.param({"state": "running", "at": "NOW"}, id="running"),
        pytest.param({"state": "running", "at": "2026-01-01T00:00:00+00:00"}, id="crashed"),
        pytest.param({"state": "finished", "started_at": "NOW"}, id="a-later-command"),
        pytest.param({"state": "finished", "pid": 1}, id="another-process"),
    ],
)
def test_a_heartbeat_that_is_not_the_ended_one_they_saw_voids_them(run, beat):
    store, _ = run
    set_beat(store, **{k: now() if v == "NOW" else v for k, v in beat.items()})
    assert shown(store) == {**LISTED, "counted": "listed now"}


def test_a_heartbeat_that_began_after_the_listing_voids_them(run):
    """Counts of a listing that began before the command they were recorded under."""
    store, _ = run
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    set_beat(store, started_at=later)
    aggregate_run(store, RUN)
    assert json.loads(store.get(layout.counts_key(RUN)))["heartbeat"][0] == later
    assert shown(store) == {**LISTED, "counted": "listed now"}


def test_a_command_aggregating_its_own_run_records_them_for_when_it_has_ended(run):
    """`evalfleet run` aggregates under its own running heartbeat, once its answers are in."""
    store, _ = run
    store.delete(layout.counts_key(RUN))
    set_beat(store, state="running", at=now())  # this process's
    aggregate_run(store, RUN)
    assert json.loads(store.get(layout.counts_key(RUN)))["done"] == 177
    store.delete(answer_keys(store)[-1])  # by hand: listed, 176; recorded, 177
    assert shown(store) == {"done": 176, "failed": 1, "counted": "listed now"}  # still running
    set_beat(store, state="finished")
    assert shown(store) == {"done": 177, "failed": 1, "counted": aggregation(store)}


def test_an_aggregation_beside_a_live_command_records_nothing(run):
    store, _ = run
    store.delete(layout.counts_key(RUN))
    set_beat(store, state="running", at=now(), pid=os.getppid())  # alive, not this process
    aggregate_run(store, RUN)
    assert not store.exists(layout.counts_key(RUN))
    set_beat(store, state="finished")
    assert shown(store) == {**LISTED, "counted": "listed now"}


def valid(store: LocalStore) -> dict:
    return json.loads(store.get(layout.counts_key(RUN)))


DAMAGED = {
    "empty": lambda c: b"",
    "torn": lambda c: json.dumps(c).encode()[:40],
    "not-utf8": lambda c: b"\xff\xfe{}",
    "null": lambda c: b"null",
    "a-list": lambda c: b"[178, 1]",
    "deep": lambda c: b"[" * 100_000,
    "done-text": lambda c: {**c, "done": "178"},
    "done-negative": lambda c: {**c, "done": -1},
    "done-bool": lambda c: {**c, "done": True},
    "done-float": lambda c: {**c, "done": 178.0},
    "done-huge-float": lambda c: json.dumps(c).replace('"done": 178', '"done": 1e999').encode(),
    "failed-missing": lambda c: {k: v for k, v in c.items() if k != "failed"},
    "failed-null": lambda c: {**c, "failed": None},
    "listed-at-word": lambda c: {**c, "listed_at": "yesterday"},
    "listed-at-naive": lambda c: {**c, "listed_at": "2026-11-26T23:00:00"},
    "listed-at-number": lambda c: {**c, "listed_at": 1.7e9},
    "listed-at-missing": lambda c: {k: v for k, v in c.items() if k != "listed_at"},
    "seen-text": lambda c: {**c, "changes_seen": "all"},
    "seen-numbers": lambda c: {**c, "changes_seen": [1]},
    "heartbeat-text": lambda c: {**c, "heartbeat": "finished"},
    "heartbeat-other": lambda c: {**c, "heartbeat": [*c["heartbeat"][:2], 1]},
    "heartbeat-short": lambda c: {**c, "heartbeat": c["heartbeat"][:2]},
    "heartbeat-none": lambda c: {**c, "heartbeat": None},
    "heartbeat-start-garbage": lambda c: {**c, "heartbeat": [5, *c["heartbeat"][1:]]},
}


@pytest.mark.parametrize("damage", DAMAGED.values(), ids=DAMAGED.keys())
def test_a_counts_file_that_is_not_what_aggregation_writes_is_listed(run, damage):
    store, _ = run
    body = damage(valid(store))
    store.put(
        layout.counts_key(RUN), body if isinstance(body, bytes) else json.dumps(body).encode()
    )
    assert shown(store) == {**LISTED, "counted": "listed now"}


def test_the_undamaged_counts_file_is_used(run):
    """The control of the test above: the file it damages holds."""
    store, _ = run
    store.put(layout.counts_key(RUN), json.dumps(valid(store)).encode())
    assert shown(store) == {**RECORDED, "counted": aggregation(store)}


def test_on_s3_as_on_a_local_store(run, moto_server):
    """The run copied to S3 (its results left behind): the recorded counts are shown, an
    answer the batch poller writes voids them, and a new aggregation records them again."""
    local, items = run
    moto_server.create_bucket("counts")
    store = open_store("s3://counts/team/runs", s3_endpoint_url=moto_server.endpoint)
    keys = [k for k in local.list(RUN) if not k.startswith(f"{RUN}/results/")]
    assert store.put_many_if_absent({k: local.get(k) for k in keys}) == dict.fromkeys(keys, True)
    assert shown(store) == {**RECORDED, "counted": aggregation(store)}
    collect_answer(store, items["missing"])
    assert not store.exists(layout.counts_key(RUN)) and len(marks(store, RUN)) == 1
    assert shown(store) == {"done": 178, "failed": 1, "counted": "listed now"}
    aggregate_run(store, RUN)
    assert shown(store) == {"done": 178, "failed": 1, "counted": aggregation(store)}
