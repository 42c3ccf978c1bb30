"""What is checked before money is spent, and what a stored cost may be (no Ray, no requests):

- a cost cap that is not a finite number of USD above 0 is refused in one line, exit 2,
  nothing written;
- a name that makes a record's key too long for a local disk (a segment over 255 bytes) or
  for S3 (a key over 1,024 bytes, the store's prefix included) is refused in one line before
  anything is written or asked;
- a stored record whose cost is negative or not a number is unreadable: `status` counts it,
  `status --quarantine` moves it aside, and the spend a cap starts from leaves it out;
- the budget reserves each call's expected cost, settles to the real one, probes a model's
  first calls, and refuses only what would pass the cap;
- `evalfleet aggregate` rebuilds the store's leaderboard.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalfleet.cli.main import main
from evalfleet.core.record import Record
from evalfleet.core.types import ConfigError
from evalfleet.engine.prepare.resolve import ResolvedRun, resolve
from evalfleet.engine.run.request import EvalRequest
from evalfleet.engine.run.state import stored_spend
from evalfleet.storage import layout, open_store
from evalfleet.storage.layout import ItemKey
from evalfleet.tasks.budget import PROBE, Budget
from evalfleet.tasks.work import WorkItem
from tests.support.helpers import answered_run

SIM = "http://127.0.0.1:9"  # never contacted: nothing here sends a request
MODEL = "openai/sim-0.5"
LONG = "openai/sim-0.5-" + "x" * 290  # 305 characters, 307 bytes once percent-encoded


def run_args(dataset: str, store: Path, run_id: str, *extra: str) -> list[str]:
    return [
        *("run", "-m", MODEL, "-b", "zerobench", "--dataset-path", dataset),
        *("--simulator-url", SIM, "--store", str(store), "--run-id", run_id, *extra),
    ]


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0]


# --- the cap ----------------------------------------------------------------------------


@pytest.mark.parametrize("cap", ["inf", "nan", "0", "-1", "-inf"])
def test_a_cap_that_is_not_a_finite_positive_number_is_refused(cap, demo_dataset, tmp_path, capsys):
    store = tmp_path / "runs"
    code = main(run_args(demo_dataset, store, "capped", f"--max-cost-usd={cap}", "--estimate"))
    assert code == 2
    assert one_error_line(capsys.readouterr().err) == (
        "error: invalid request: --max-cost-usd: a cost cap is a number of USD above 0, such as "
        f"5 or 0.5; {cap} is not one"
    )
    assert not store.exists()


# --- names too long to be stored --------------------------------------------------------


def test_a_model_name_too_long_for_a_file_name_is_refused_before_anything(
    demo_dataset, tmp_path, capsys
):
    store = tmp_path / "runs"
    args = run_args(demo_dataset, store, "long", "-m", LONG)
    for extra in ((), ("--estimate",)):
        assert main([*args, *extra]) == 2
        assert one_error_line(capsys.readouterr().err) == (
            f"error: model {LONG[:40]!r}… (305 characters) cannot be stored: it makes a "
            "307-byte name in its records' keys, over the 255 bytes a file name may have; give "
            "the model a shorter id in the model registry (its api_model keeps the name "
            "the provider knows)"
        )
        assert not store.exists()


def test_a_name_whose_keys_pass_what_s3_allows_is_refused(demo_dataset):
    from evalfleet.engine.store.storable import check_storable

    # 248 characters, a 250-byte segment: it fits a file name. The longest record key, a
    # failure's moved to quarantine, is "k/quarantine/completions/" (25) + 250 + "/zerobench/"
    # (11) + "4/" (2) + "5.<16 hex>.failed-<13 digits>.json" (44) = 332 bytes; under a 703-byte
    # S3 prefix ("p…/q…/r…/s…/"), 1,035: past what S3 takes
    model = "openai/sim-0.5-" + "y" * 233
    request = EvalRequest(models=[model], dataset_path=demo_dataset, simulator_url=SIM)
    prefix = "p" * 200 + "/" + "q" * 200 + "/" + "r" * 200 + "/" + "s" * 99
    s3 = open_store(f"s3://evalfleet-keys/{prefix}")
    local = open_store("/tmp/unused-store")
    run = resolve(request.model_copy(update={"run_id": "k", "store": "/tmp/unused-store"}))
    check_storable("k", local, [model], [], run.data)  # fits on a local disk
    with pytest.raises(ConfigError) as refused:
        check_storable("k", s3, [model], [], run.data)
    assert str(refused.value) == (
        f"the records of {model} on zerobench in run k cannot be stored: their keys under "
        f"{s3.describe()} would be 1035 bytes, over the 1024 an S3 key may have; use a shorter "
        "model id, sample ids, run id or store prefix"
    )


# --- stored costs -----------------------------------------------------------------------


def stored_run(dataset: str, runs: Path, run_id: str) -> tuple[ResolvedRun, list[WorkItem]]:
    """A run of the demo's main questions with every answer stored, each costing $0.0001
    (100 input tokens at $1 per million), as a worker writes them."""
    request = EvalRequest(
        models=[MODEL],
        benchmarks=["zerobench"],
        dataset_path=dataset,
        run_id=run_id,
        store=str(runs),
        simulator_url=SIM,
    )
    return answered_run(request, 100)


def test_a_record_whose_cost_is_negative_or_not_a_number_is_unreadable(
    demo_dataset, tmp_path, capsys
):
    runs = tmp_path / "runs"
    run, items = stored_run(demo_dataset, runs, "costs")
    assert len(items) == 24
    bad = {
        items[0].store_key: {"cost_usd": -0.5},
        items[1].store_key: {"cost_usd": float("nan")},  # json writes NaN, and reads it
        items[2].store_key: {"cost_usd": "0.0001"},
        items[3].store_key: {"cost_usd": float("inf")},
        items[4].store_key: {"cost": {"input": -1.0, "total": 0.0001}},
    }
    for key, change in bad.items():
        record = json.loads((runs / key).read_text())
        (runs / key).write_text(json.dumps({**record, **change}))
    assert [Record.read((runs / key).read_bytes()) for key in bad] == [None] * 5
    good = json.loads((runs / items[5].store_key).read_text())
    assert Record.read(json.dumps({**good, "cost_usd": 0}).encode()) is not None
    old = {k: v for k, v in good.items() if k not in ("cost", "cost_usd")}  # before costs
    assert Record.read(json.dumps(old).encode()) is not None

    # the spend a cap starts from: the 19 readable records at $0.0001
    assert stored_spend(run.store, "costs") == pytest.approx(19 * 0.0001, abs=1e-12)

    assert main(["status", "costs", "--store", str(runs), "--quarantine"]) == 0
    out = capsys.readouterr().out
    assert "| answer  | openai/sim-0.5 | zerobench   |     19 |" in out
    quarantined = sorted(layout.quarantine_key("costs", key) for key in bad)
    assert run.store.list("costs/quarantine") == quarantined
    assert not any((runs / key).exists() for key in bad)


# --- the budget -------------------------------------------------------------------------


def work(model: str, sample: str, benchmark: str = "zerobench") -> WorkItem:
    return WorkItem("r", ItemKey.answer(model, benchmark, sample, 0), None, "0" * 64)  # type: ignore[arg-type]


def test_the_budget_reserves_settles_and_probes():
    budget = Budget(cap_usd=1.0, spent_usd=0.25, cost_of=lambda item, prompt: 0.2)
    # nothing known of the model yet: PROBE calls at a time, each reserving the estimate
    assert budget.limit("m") == PROBE == 3
    assert [budget.reserve(work("m", str(i)), None) for i in range(4)] == [True] * 3 + [False]
    assert (budget.spent_usd, budget.reserved_usd) == (0.25, pytest.approx(0.6))
    # each settles to its real cost; the refused one fits once they have
    for i in range(3):
        budget.settle(work("m", str(i)).key, ("ok", 0.01))
    assert (budget.spent_usd, budget.reserved_usd) == (pytest.approx(0.28), 0.0)
    assert budget.limit("m") is None  # three landed: their mean stands for the next ones
    assert budget.expected(work("m", "9"), None) == pytest.approx(0.01)
    assert budget.expected(work("m", "9", "omnibench"), None) == pytest.approx(0.01)
    # the cap: 0.28 spent, 72 calls of 0.01 fit, the 73rd would pass it
    assert sum(budget.reserve(work("m", f"x{i}"), None) for i in range(80)) == 72
    # a call lost with its worker frees its reservation and costs nothing yet
    budget.settle(work("m", "x0").key, None)
    assert budget.reserved_usd == pytest.approx(0.71)
    assert budget.reserve(work("m", "y"), None) is True


# --- aggregate ---------------------------------------------------------------------------


def test_aggregate_rebuilds_the_leaderboard(demo_dataset, tmp_path, capsys):
    runs = tmp_path / "runs"
    stored_run(demo_dataset, runs, "agg")
    assert not (runs / "leaderboard").exists()
    assert main(["aggregate", "agg", "--store", str(runs)]) == 0
    out = capsys.readouterr().out
    assert f"leaderboard: {runs}/leaderboard/" in out
    board = (runs / "leaderboard" / "leaderboard.csv").read_text().splitlines()
    assert len(board) == 1 + 2  # zerobench's two rule scorings of the one model
    assert all(",agg," in line for line in board[1:])
