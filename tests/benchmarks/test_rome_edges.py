"""Issue 48 case 11: annotations upstream's evaluators score, though they depart from the
documented argument types, are loaded, scored as upstream scores them and named in one
warning; what upstream cannot score is still refused."""

from __future__ import annotations

import json
import logging

import pytest

from evalfleet.benchmarks.rome import dataset as rome_data
from evalfleet.benchmarks.rome.scoring import score_annotation
from evalfleet.core.types import DatasetError


def item(qid: str, evaluator: str, **kwargs) -> dict:
    return {
        "question_id": qid,
        "question": "What?",
        "reference": "x",
        "evaluator": evaluator,
        "evaluator_kwargs": kwargs,
        "task": "t",
    }


def test_upstream_scorable_annotations_load_with_one_warning(tmp_path, caplog):
    label = item("q1", "choices_matching", label="A,C")
    units = item("q2", "multi_interval_matching", intervals=[[1, 3]], units=["m", "cm"])
    (tmp_path / "test.json").write_text(json.dumps([label, units]))
    with caplog.at_level(logging.WARNING, logger="evalfleet.benchmarks.rome.dataset"):
        samples = rome_data.load(tmp_path, "test.json", None, None)
    assert [s.id for s in samples] == ["q1", "q2"]
    warnings = [r.getMessage() for r in caplog.records if "documented types" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].endswith("q1 (label 'A,C'), q2 (units ['m', 'cm'])")
    # scored as upstream scores them: "A,C" sorts to ",AC", which no letters equal; the unit
    # "m" of the first interval is read letter by letter and found in "2 m"
    assert score_annotation(label, "Final Answer: A, C", "upstream").value == 0
    assert score_annotation(units, "Final Answer: 2 m", "upstream").value == 1
    assert score_annotation(units, "Final Answer: 5 m", "upstream").value == 0


def test_what_upstream_cannot_score_is_still_refused(tmp_path):
    bad = item("q3", "choices_matching", label=["A"])
    (tmp_path / "test.json").write_text(json.dumps([bad]))
    with pytest.raises(DatasetError, match="^ROME question 'q3': evaluator_kwargs.label must be"):
        rome_data.load(tmp_path, "test.json", None, None)


def test_case_10_a_task_has_its_own_interval_or_says_one_question():
    from evalfleet.benchmarks.interface import ScoredItem
    from evalfleet.benchmarks.rome.benchmark import Rome
    from evalfleet.core.types import Sample
    from evalfleet.metrics.intervals import t975, wilson

    tasks = {"a1": "a", "a2": "a", "b1": "b"}
    samples = {
        q: Sample(id=q, parts=[], target="x", metadata={"task": t}) for q, t in tasks.items()
    }
    right = {("a1", 0), ("a1", 1), ("b1", 0)}
    scored = [
        ScoredItem(q, q, e, float((q, e) in right), (q, e) in right, False, False, None)
        for q in tasks
        for e in (0, 1)
    ]
    rows = Rome().metrics(scored, samples, "sampled-k", 2)
    got = {(r.group, r.metric): r.value for r in rows}
    # task a: questions valued 1.0 and 0.0: two units, the small-sample rule: n_eff =
    # 0.25 / (0.5 / 2) = 1, Wilson on 0.5 of 1 with t(0.975, 1) = 12.71 for z
    want = wilson(0.5, 1, t975(1))
    assert (got[("task=a", "accuracy_ci95_low")], got[("task=a", "accuracy_ci95_high")]) == (
        want.low,
        want.high,
    )
    assert got[("task=b", "accuracy_ci95_low")] is None  # one question: no interval
    assert ("", "accuracy_ci95_low") not in got  # the whole benchmark's is the headline's
