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
from evalfleet.engine.scoring.agreement import panel_verdicts, read_labels, slice_agreement
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


def panel_samples() -> pd.DataFrame:
    """Four answers of one model to rome questions; the rules and three judges' verdicts."""
    verdicts = {  # answer -> rules, J1 (primary), J2, J3
        ("q1", 0): (True, True, True, False),
        ("q2", 0): (False, True, False, False),
        ("q3", 0): (True, True, True, True),
        ("q4", 0): (False, False, True, True),
    }
    scorings = ["upstream", "judge", f"judge@{J2}", f"judge@{J3}"]
    rows = []
    for (sample, epoch), marks in verdicts.items():
        for scoring, correct in zip(scorings, marks, strict=True):
            rows.append(
                {
                    "model": "m",
                    "benchmark": "rome",
                    "sample_id": sample,
                    "epoch": epoch,
                    "scoring": scoring,
                    "correct": correct,
                    "judged": scoring != "upstream",
                    "score_error": None,
                    "error": None,
                }
            )
    return pd.DataFrame(rows)


J2, J3 = "google/sim-0.8", "openai/sim-0.85"


def test_a_panel_is_the_majority_of_its_judges():
    samples = panel_samples()
    judges = [JUDGE, J2, J3]
    panel = panel_verdicts(samples, registry.get("rome"), judges, judges)
    assert panel.correct.to_dict() == {
        ("m", "q1", 0): True,  # 2 of 3
        ("m", "q2", 0): False,  # 1 of 3
        ("m", "q3", 0): True,
        ("m", "q4", 0): True,  # 2 of 3
    }
    labels = read_labels(
        "\n".join(
            json.dumps({"model": "m", "sample_id": q, "epoch": 0, "correct": c})
            for q, c in (("q1", True), ("q2", False), ("q3", True), ("q4", False))
        ),
        "labels.jsonl",
    )
    table = slice_agreement(samples, labels, {"rome": registry.get("rome")}, judges, judges)
    accuracy = dict(zip(table.rater, table.accuracy, strict=True))
    assert accuracy == {
        "rules (upstream)": 1.0,
        JUDGE: 0.75,
        J2: 0.75,
        J3: 0.5,
        "panel (majority of 3)": 0.75,
    }


def test_a_panel_of_two_is_refused_before_any_judge(tmp_path, capsys):
    store = tmp_path / "runs"
    argv = ["judge", "r", "--judge", JUDGE, "--judge", J2, "--panel", "majority"]
    assert main([*argv, "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: a --panel majority needs at least 3 judges, the run would have 2: repeat "
        "--judge, e.g. --judge A --judge B --judge C"
    ]
    assert not store.exists()


def test_the_shipped_rome_slice_reads_the_rome_demo_run():
    """The ROME demo's slice (a person's verdicts on the 16 answers its judge grades, the
    same on every demo run) against the stored demo run: the judge agrees on 11 of 16."""
    from evalfleet.reports.judge_slice import load_labels

    labels = load_labels("demo")
    assert labels.groupby("benchmark").size().to_dict() == {
        "datbench": 4,
        "datbench_blind": 4,
        "rome": 16,
    }
    samples = pd.read_parquet(SAMPLES)
    table = slice_agreement(samples, labels, {"rome": registry.get("rome")}, [JUDGE])
    got = table.set_index("rater")[["labelled", "accuracy"]].to_dict("index")
    assert got[JUDGE] == {"labelled": 16, "accuracy": 0.6875}
    assert got["rules (upstream)"]["labelled"] == 16
