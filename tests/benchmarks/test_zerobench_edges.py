"""Issue 48 on ZeroBench's tables: a partly measured pass@k names its own n (case 9), the
subquestion split's pass@1 is the grouped headline, and a note says which epochs each column
reads (case 10)."""

from __future__ import annotations

from evalfleet.benchmarks.interface import ScoredItem
from evalfleet.benchmarks.zerobench.metrics import metric_rows


def item(sample: str, epoch: int, correct: bool) -> ScoredItem:
    return ScoredItem(sample, sample, epoch, float(correct), correct, False, False, None)


def test_case_9_a_partly_extended_pass_at_5_names_its_n():
    """120 questions with the greedy epoch, the first 50 with 5 sampled epochs too."""
    groups = {f"q{i}": f"q{i}" for i in range(120)}
    items = [item(f"q{i}", 0, i < 6) for i in range(120)]
    items += [item(f"q{i}", e, e == 1 and i < 45) for i in range(50) for e in range(1, 6)]
    rows = {
        r.metric: r
        for r in metric_rows(items, groups, protocol="zerobench-paper", epochs=6, grouped=False)
    }
    assert (rows["n_questions"].value, rows["pass@5"].n, rows["5/5"].n) == (120, 50, 50)
    assert rows["pass@5"].value == 0.9
    assert rows["pass@5"].note == (
        "pass@5 on 50 of 120 questions (n=50): the others have fewer than 5 sampled epochs so far"
    )
    assert rows["5/5"].note.startswith("5/5 on 50 of 120 questions (n=50)")
    assert rows["n_epochs"].note == (
        "epochs: pass@1 and num_correct read the greedy epoch 0; pass@5 and 5/5 the sampled "
        "epochs 1–5"
    )


def test_case_10_the_subquestion_pass_at_1_is_the_grouped_headline():
    """Main question m1 has 3 subquestions all right, m2 one subquestion wrong: the plain mean
    is 0.75, the grouped mean (the headline, every main question once) 0.5."""
    groups = {"m1_1": "m1", "m1_2": "m1", "m1_3": "m1", "m2_1": "m2"}
    items = [item(s, 0, s != "m2_1") for s in groups]
    rows = {
        r.metric: r
        for r in metric_rows(items, groups, protocol="sampled-k", epochs=1, grouped=True)
    }
    assert rows["pass@1"].value == rows["grouped_accuracy"].value == 0.5
    assert rows["accuracy"].value == 0.75
    assert (
        rows["n_epochs"].note
        == "epochs: every column reads all epochs (1); pass@1 is the mean of c/n"
    )


def test_one_sampled_epoch_is_named_as_its_one_column():
    """--epochs 1 on zerobench-paper: the greedy epoch and one sampled one. The pass@1 column
    is the greedy epoch's; the sampled epoch has 1/1 alone (its own pass@1 would be the same
    figure): the note said "pass@1 and 1/1 the sampled epochs 1–1"."""
    groups = {"q0": "q0", "q1": "q1", "q2": "q2", "q3": "q3"}
    items = [item(s, 0, s != "q3") for s in groups] + [item(s, 1, s == "q0") for s in groups]
    rows = {
        r.metric: r
        for r in metric_rows(items, groups, protocol="zerobench-paper", epochs=2, grouped=False)
    }
    assert "pass@1" in rows and not any(m.startswith("pass@") and m != "pass@1" for m in rows)
    assert (rows["pass@1"].value, rows["1/1"].value) == (0.75, 0.25)
    assert rows["n_epochs"].note == (
        "epochs: pass@1 and num_correct read the greedy epoch 0; 1/1 the sampled epoch 1 (the "
        "sampled pass@1: the same figure)"
    )
