"""A run's judges against a labelled slice: on the stored ROME demo run's samples table (a
judge, anthropic/sim-0.9, graded 16 answers), labels built here; and a labels file that cannot
be read is one line before any judge is asked."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evalfleet.benchmarks import registry
from evalfleet.cli.main import main
from evalfleet.engine.scoring.agreement import read_labels, slice_agreement
from evalfleet.metrics.agreement import agreement
from evalfleet.reports.judge_slice import to_text

SAMPLES = (
    Path(__file__).resolve().parents[1] / "data/stored_runs/tables/stored-rome/samples.parquet"
)
JUDGE = "anthropic/sim-0.9"


def test_each_rater_against_the_labels():
    samples = pd.read_parquet(SAMPLES)
    judged = samples[(samples.scoring == "judge") & samples.judged]
    assert len(judged) == 16
    # a person agrees with the judge on every answer but the first two
    human = list(judged.correct.astype(bool))
    human[0], human[1] = not human[0], not human[1]
    lines = [
        json.dumps({"model": m, "sample_id": s, "epoch": int(e), "correct": h})
        for m, s, e, h in zip(judged.model, judged.sample_id, judged.epoch, human, strict=True)
    ]
    labels = read_labels("\n".join(lines), "labels.jsonl")
    table = slice_agreement(samples, labels, {"rome": registry.get("rome")}, [JUDGE])
    assert list(table.rater) == ["rules (upstream)", JUDGE]
    row = table.set_index("rater").loc[JUDGE]
    want = agreement(list(judged.correct.astype(bool)), human, list(judged.sample_id))
    assert (row.labelled, row.accuracy) == (16, 0.875)
    assert (row.accuracy_low, row.accuracy_high) == (
        round(want.accuracy_interval.low, 4),
        round(want.accuracy_interval.high, 4),
    )
    assert row.kappa == round(want.kappa, 4)
    assert (row.kappa_low, row.kappa_high) == (
        round(want.kappa_interval.low, 4),
        round(want.kappa_interval.high, 4),
    )
    text = to_text(table, len(labels))
    assert f"| rome | {JUDGE} | 16 | 0.875 |" in text


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('{"model": "m", "sample_id": "q"}\n', "labels.jsonl line 1 needs the fields model"),
        ("not json\n", "labels.jsonl line 1 is not JSON"),
        ('{"model": "m", "sample_id": "q", "epoch": 0, "correct": "yes"}\n', "correct must be"),
        ("\n", "labels.jsonl has no labelled answer"),
    ],
)
def test_a_bad_labels_file_is_one_line_before_any_judge(tmp_path, capsys, content, words):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(content)
    store = tmp_path / "runs"
    argv = ["judge", "some-run", "--judge", JUDGE, "--labels", str(labels), "--store", str(store)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and words in err[0]
    assert not store.exists()
