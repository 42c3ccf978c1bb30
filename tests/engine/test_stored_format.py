"""Runs stored before the typed Record and the one pipeline still aggregate to the same tables.

`tests/data/stored_runs/store` holds two demo runs (ZeroBench with its subquestions, and ROME
with a judge) as evalfleet left them at commit 01868a3, the last one whose records were
untyped dicts: manifest, plan, completions and judgements. `tables/` holds the tables that
code wrote from them. Today's code reads the same records and must write the same figures:
every column the old tables had, the same rows in the same order, equal to 1e-12.

Deliberate statistical fixes change expected figures here, each named:
- issue 48: headlines on fewer than 30 units (ZeroBench's 4 main questions, ROME's 10
  questions per task) take the small-sample Wilson interval instead of the percentile
  bootstrap, which covered 0.88 with 4 clusters: `ci95_low`/`ci95_high` of metrics.csv and
  the summaries, and ROME's `ci95_pct_over_questions`, were rewritten from today's code;
- issue 48: the subquestion split's `pass@1` is the grouped mean (the headline, every main
  question once: 0.4545 -> 0.4583), and its `n_epochs` row notes which epochs each column
  reads (metrics.csv `value`, `note`; summary_zerobench_subquestions.csv `pass@1`);
- issue 48: ROME's tasks have their own interval over their questions (metrics.csv gains
  `accuracy_ci95_low`/`_high` rows per task; summary_rome.csv's task rows show it, or
  "—, one question", where they were empty)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from evalfleet.engine.scoring import score
from evalfleet.engine.scoring.aggregate import aggregate_run
from evalfleet.storage import open_store

DATA = Path(__file__).resolve().parents[1] / "data" / "stored_runs"
RUNS = sorted(p.name for p in (DATA / "store").iterdir())
# columns today's tables add to the old ones: named here, never silently
LEDGER = {  # the per-attempt ledger's (records before it: one billed attempt each)
    "billed_attempts",
    "retry_cost_usd",
    "estimated_cost_usd",
    "judge_billed_attempts",
    "judge_retry_cost_usd",
    "judge_estimated_cost_usd",
}
# issue 48: Cohen's kappa between judges has its 95 % interval (a bootstrap over questions)
KAPPA = {"kappa_low", "kappa_high"}
ADDED: dict[str, set[str]] = {
    "usage.csv": LEDGER,
    "usage.parquet": LEDGER,
    "judge_agreement.csv": KAPPA,
}


def read(path: Path) -> pd.DataFrame:
    return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("stored") / "runs"
    shutil.copytree(DATA / "store", root)
    return root


def test_the_fixture_is_what_the_old_code_wrote():
    assert RUNS == ["stored-rome", "stored-zerobench"]
    tables = {run: sorted(p.name for p in (DATA / "tables" / run).iterdir()) for run in RUNS}
    assert "judges.csv" in tables["stored-rome"]  # the judge's records are read too
    assert "summary_zerobench_subquestions.csv" in tables["stored-zerobench"]


@pytest.fixture(params=["here", "workers"])
def scoring(request, monkeypatch):
    """Score in this process, or in two worker processes at a few answers a shard (as a
    run of a million answers is scored)."""
    if request.param == "workers":
        monkeypatch.setattr(score, "PARALLEL_FROM", 0)
        monkeypatch.setattr(score, "SHARD_ANSWERS", 7)
    return request.param


@pytest.mark.parametrize("run_id", RUNS)
def test_old_records_aggregate_to_the_same_tables(store, run_id, scoring):
    result = aggregate_run(open_store(str(store)), run_id)
    written = store / run_id / "results" / result["version"]
    assert (result["unreadable"], result["missing"], result["stale"]) == (0, 0, 0)
    for old_path in sorted((DATA / "tables" / run_id).iterdir()):
        old = read(old_path)
        new = read(written / old_path.name)
        added = set(new.columns) - set(old.columns)
        assert added == ADDED.get(old_path.name, set()), old_path.name
        assert len(new) == len(old) and len(old) > 0, old_path.name
        # samples.parquet has a fixed schema now (written shard by shard): a text column with
        # no value in it reads as missing text, where the old file had a column of type null
        empty = [c for c in old.columns if old[c].isna().all()]
        assert all(new[c].isna().all() for c in empty), old_path.name
        columns = [c for c in old.columns if c not in empty]
        pd.testing.assert_frame_equal(
            new[columns].reset_index(drop=True),
            old[columns].reset_index(drop=True),
            check_exact=False,
            rtol=1e-12,
            atol=1e-12,
            check_dtype=False,
            obj=f"{run_id}/{old_path.name}",
        )
