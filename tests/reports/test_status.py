"""`evalfleet runs` and `evalfleet status RUN_ID`: exact tables for a finished and a partial run.

One real run (the simulator answers one model and returns empty answers, a terminal error, for
the other), then plain-filesystem edits of the local store make it partial: deleted records
(missing), a record renamed to another request hash (stale), records that cannot be decoded.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from evalfleet.cli.main import main
from evalfleet.engine.run.request import EvalRequest
from evalfleet.engine.store.manifest import read_manifest
from evalfleet.flows.evaluate import evaluate
from evalfleet.simulator.process import start_simulator
from evalfleet.storage import LocalStore, layout

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack


RUN_ID = "status-run"
OK, BROKEN = "openai/sim-0.5", "openai/sim-0.5-broken"
MAIN, SUB = "zerobench", "zerobench_subquestions"
SIMULATOR = {
    "latency": {"ms": 5},
    "rules": [{"match": "sim-0.5-broken", "faults": {"empty_content": 1.0}}],
}


def cli(capsys, *args: str) -> list[str]:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out.splitlines()


def shard_keys(store: LocalStore, model: str, benchmark: str, failed: bool) -> list[str]:
    names = (
        layout.parse_record_key(RUN_ID, key)
        for key in store.list(layout.stage_prefix(RUN_ID, layout.ANSWER))
    )
    return [
        n.key
        for n in names
        if n is not None
        and (n.item.model, n.item.benchmark, n.failed) == (model, benchmark, failed)
    ]


@pytest.fixture(scope="module")
def finished_run(ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path_factory):
    work = tmp_path_factory.mktemp("status")
    runs = work / "runs"
    with start_simulator(answer_key, SIMULATOR, work / "sim.jsonl") as sim:
        result = evaluate(
            EvalRequest(
                models=[OK, BROKEN],
                dataset_path=demo_dataset,
                run_id=RUN_ID,
                store=str(runs),
                simulator_url=sim.url,
                workers=1,
            )
        )
    assert result.statuses == {"ok": 90, "failed": 90}
    assert result.errors == {"empty_answer": 90}
    # Beside the run: a run whose manifest cannot be read, and a directory that is no run.
    (runs / "broken-run").mkdir()
    (runs / "broken-run" / "manifest.json").write_text('{"run_id": "broken-run", ')
    (runs / "scratch").mkdir()
    (runs / "scratch" / "notes.txt").write_text("not a run")
    return runs


RUNS_HEADER = [
    "| run_id     | created_at                | models                                |"
    " benchmarks                        |   expected |   done |   failed | progress            |"
    " state     | counted    |",
    "|:-----------|:--------------------------|:--------------------------------------|"
    ":----------------------------------|-----------:|-------:|---------:|:--------------------|"
    ":----------|:-----------|",
    "| broken-run | ?                         | ?                                     |"
    " ?                                 |          ? |      ? |        ? | unreadable manifest |"
    " ?         | ?          |",
]
STATUS_HEADER = [
    "| stage   | model                 | benchmark              |   done |   failed |   stale |"
    "   missing |   unreadable |",
    "|:--------|:----------------------|:-----------------------|-------:|---------:|--------:|"
    "----------:|-------------:|",
]


def runs_row(created: str, done: int, failed: int, progress: str) -> str:
    return (
        f"| status-run | {created} | openai/sim-0.5, openai/sim-0.5-broken |"
        f" zerobench, zerobench_subquestions |        180 |     {done} |       {failed} |"
        f" {progress:<19} | evaluated | listed now |"  # the evaluate flow ended; not aggregated
    )


NO_RESULTS = f"results: none yet (`evalfleet aggregate {RUN_ID}`)"


def test_finished_run(finished_run: Path, capsys):
    runs = str(finished_run)
    created = read_manifest(LocalStore(runs), RUN_ID).created_at
    assert len(created) == 25  # e.g. 2026-01-31T12:00:00+00:00: the column width below
    assert cli(capsys, "runs", "--store", runs) == [
        *RUNS_HEADER,
        runs_row(created, 90, 90, "50.0%"),
    ]
    assert cli(capsys, "status", RUN_ID, "--store", runs) == [
        *STATUS_HEADER,
        "| answer  | openai/sim-0.5        | zerobench              |     24 |        0 |       0 |"
        "         0 |            0 |",
        "| answer  | openai/sim-0.5        | zerobench_subquestions |     66 |        0 |       0 |"
        "         0 |            0 |",
        "| answer  | openai/sim-0.5-broken | zerobench              |      0 |       24 |       0 |"
        "         0 |            0 |",
        "| answer  | openai/sim-0.5-broken | zerobench_subquestions |      0 |       66 |       0 |"
        "         0 |            0 |",
        NO_RESULTS,  # evaluated, not aggregated
    ]


def test_partial_run(finished_run: Path, tmp_path: Path, capsys):
    runs_dir = shutil.copytree(finished_run, tmp_path / "runs")
    runs = str(runs_dir)
    store = LocalStore(runs)
    created = read_manifest(store, RUN_ID).created_at

    # Deleted records and deleted failure records: missing.
    for key in sorted(shard_keys(store, OK, MAIN, failed=False))[:3]:
        store.delete(key)
    for key in sorted(shard_keys(store, BROKEN, SUB, failed=True))[:4]:
        store.delete(key)
    assert cli(capsys, "runs", "--store", runs) == [
        *RUNS_HEADER,
        runs_row(created, 87, 86, "48.3%"),
    ]
    assert cli(capsys, "status", RUN_ID, "--store", runs) == [
        *STATUS_HEADER,
        "| answer  | openai/sim-0.5        | zerobench              |     21 |        0 |       0 |"
        "         3 |            0 |",
        "| answer  | openai/sim-0.5        | zerobench_subquestions |     66 |        0 |       0 |"
        "         0 |            0 |",
        "| answer  | openai/sim-0.5-broken | zerobench              |      0 |       24 |       0 |"
        "         0 |            0 |",
        "| answer  | openai/sim-0.5-broken | zerobench_subquestions |      0 |       62 |       0 |"
        "         4 |            0 |",
        NO_RESULTS,
    ]

    # Two records that answered another request (another hash): stale. A record that is valid
    # JSON but no record, and a torn failure record: unreadable, so missing.
    sub_records = sorted(shard_keys(store, OK, SUB, failed=False))
    for key in sub_records[:2]:
        head, _, tail = key.rpartition("/")
        epoch = tail.split(".")[0]
        (runs_dir / key).rename(runs_dir / head / f"{epoch}.0123456789abcdef.json")
    not_a_record = sub_records[2]
    (runs_dir / not_a_record).write_bytes(b"{}")
    torn = sorted(shard_keys(store, BROKEN, MAIN, failed=True))[0]
    (runs_dir / torn).write_bytes((runs_dir / torn).read_bytes()[:100])
    rows = [
        "| answer  | openai/sim-0.5        | zerobench              |     21 |        0 |       0 |"
        "         3 |            0 |",
        "| answer  | openai/sim-0.5        | zerobench_subquestions |     63 |        0 |       2 |"
        "         1 |            1 |",
        "| answer  | openai/sim-0.5-broken | zerobench              |      0 |       23 |       0 |"
        "         1 |            1 |",
        "| answer  | openai/sim-0.5-broken | zerobench_subquestions |      0 |       62 |       0 |"
        "         4 |            0 |",
    ]
    assert cli(capsys, "status", RUN_ID, "--store", runs) == [
        *STATUS_HEADER,
        *rows,
        "2 undecodable records count as missing (the next run moves them aside):",
        f"  {torn}",  # items are listed in plan order: zerobench first
        f"  {not_a_record}",
        NO_RESULTS,
    ]
    assert cli(capsys, "status", RUN_ID, "--store", runs, "--quarantine") == [
        *STATUS_HEADER,
        *rows,
        "2 undecodable records count as missing (moved to quarantine/):",
        f"  {torn}",
        f"  {not_a_record}",
        NO_RESULTS,
    ]
    quarantined = [f"{RUN_ID}/quarantine/{k[len(RUN_ID) + 1 :]}" for k in (torn, not_a_record)]
    assert store.list(f"{RUN_ID}/quarantine") == sorted(quarantined)
    assert cli(capsys, "status", RUN_ID, "--store", runs) == [
        *STATUS_HEADER,
        *(row[: -len("1 |")] + "0 |" for row in rows),
        NO_RESULTS,
    ]

    # Aggregated, the ended run shows the counts of the aggregation's listing: the stale
    # records count as done, the two moved aside are gone.
    def shown(out: list[str]) -> list[str]:  # done, failed, progress, state, counted
        return [cell.strip() for cell in out[3].split("|")[6:11]]

    assert shown(cli(capsys, "runs", "--store", runs)) == [
        "86",
        "85",
        "47.8%",
        "evaluated",
        "listed now",
    ]
    capsys.readouterr()
    assert main(["aggregate", RUN_ID, "--store", runs]) == 0
    recorded = json.loads(store.get(layout.counts_key(RUN_ID)))
    assert (recorded["done"], recorded["failed"]) == (86, 85)
    at = datetime.fromisoformat(recorded["listed_at"])
    out = cli(capsys, "runs", "--store", runs)
    assert shown(out) == [
        "86",
        "85",
        "47.8%",
        "evaluated",
        f"aggregation {at:%Y-%m-%d %H:%M:%S}Z",
    ]
    assert out[-1].endswith("`evalfleet status RUN` reads every record.")


def test_status_of_an_unknown_run(finished_run: Path, capsys):
    capsys.readouterr()
    assert main(["status", "no-such-run", "--store", str(finished_run)]) == 2
    assert capsys.readouterr().err == (
        f"error: no run 'no-such-run' in local directory {finished_run}: "
        f"`evalfleet runs --store {finished_run}` lists the runs there\n"
    )
