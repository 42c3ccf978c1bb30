"""Why this verdict: each benchmark's rule scorers name the rule or evaluator that decided and
the answer it compared, in words; the report shows those words (`reports.report_why`)."""

from __future__ import annotations

import pytest

from evalfleet.benchmarks.registry import get
from evalfleet.benchmarks.rome.scoring import rule_score
from evalfleet.benchmarks.zerobench.scoring import score_robust, score_upstream
from evalfleet.core.types import Part, Sample, Score


@pytest.mark.parametrize(
    ("response", "target", "why"),
    [
        (
            "Final answer: {$11.90}. Check: {x+1}",
            "11.90",
            "E4 (the last group labelled as the answer) read '$11.90'; compared with the "
            "normalised target '11.90': C2 (equal text after C1 dropped $ and %), so right",
        ),
        (
            "so \\boxed{1,234}",
            "1234",
            "E3 (the last \\boxed{...}) read '1,234'; compared with the normalised target "
            "'1234': C3 (equal numbers), so right",
        ),
        (
            "{down,right}",
            "down, right",
            "E5 (the last group that is not a LaTeX argument) read 'down,right'; compared with "
            "the normalised target 'down, right': C4 (equal lists), so right",
        ),
        (
            "{7} then {8}",
            "7",
            "E5 (the last group that is not a LaTeX argument) read '8'; compared with the "
            "normalised target '7': C1-C4: no rule equates them, so wrong",
        ),
        ("no braces", "7", "E7: no answer group in the response, so wrong"),
    ],
)
def test_zerobench_robust_names_its_extraction_and_comparison_rules(response, target, why):
    assert score_robust(response, target).explanation == why


def test_zerobench_upstream_says_what_it_compared():
    assert score_upstream("Final answer: {$11.90}", "11.90").explanation == (
        "upstream rule: the last {...} group of the lower-cased response, '$11.90', differs "
        "from the lower-cased target '11.90' (exact text)"
    )
    assert score_upstream("{ABC}", "abc ").explanation == (
        "upstream rule: the last {...} group of the lower-cased response, 'abc', equals the "
        "lower-cased target 'abc' (exact text)"
    )
    assert score_upstream("none", "7").explanation == (
        "upstream rule: the lower-cased response holds no {...} group, so no answer"
    )


def test_rome_names_its_evaluator_and_what_it_compared_against():
    annotation = {"evaluator": "number_matching", "evaluator_kwargs": {"value_to_match": 12}}
    sample = Sample("q", [Part.of_text("How many?")], "12", metadata={"annotation": annotation})
    score = rule_score(sample, "Final Answer: 12 cars", "upstream")
    assert (score.answer, score.correct) == ("12 cars", True)
    assert score.explanation == (
        "ROME evaluator number_matching (upstream extraction) read '12 cars'; "
        "against value_to_match=12: score 1"
    )


def test_omnibench_names_each_letter_parser():
    bench = get("omnibench")
    sample = Sample("o", [Part.of_text("Which?")], "C", choices=["cat", "dog", "cow", "pig"])
    evalscope, original = bench.score(sample, "It barks. ANSWER: B", bench.options_model())
    assert evalscope.explanation == (
        "evalscope's letter extraction (evalscope@fde259d2: the last ANSWER: label, else the "
        "last capital letter if it is an option) read option B; the target is C, so wrong"
    )
    nothing = bench.score(sample, "no idea", bench.options_model())[1]
    assert nothing.explanation == (
        "OmniBench's original parser (omnibench-inference@21a7f75: (X), then 'X ' or 'X.', "
        "then an option's text) read no option letter, so wrong"
    )
    assert original.answer == "B"


def test_datbench_names_the_scorer_its_dataset_registers():
    bench = get("datbench")
    meta = {"question": "How many?", "all_answers": ["7"], "dataset": "countbench"}
    sample = Sample("d", [Part.of_text("How many?")], "7", metadata={**meta, "row_metadata": {}})
    default, compat = bench.score(sample, "I count. Final answer: 8", bench.options_model())
    assert (default.judged, default.correct) == (False, False)
    assert default.explanation == (
        "DatBench scorer countbench (default) read '8': score 0, wrong (under 0.5)"
    )
    assert compat.explanation.startswith("DatBench scorer countbench (compat) read ")


def test_the_explanation_is_not_part_of_the_verdict():
    assert Score("robust", "7", True, 1.0, explanation="E4") == Score("robust", "7", True, 1.0)


def zerobench_data():
    from evalfleet.core.types import Decoding
    from evalfleet.engine.run.items import BenchmarkData

    bench = get("zerobench")
    sample = Sample("1", [Part.of_text("How many?")], "7")
    return BenchmarkData(
        bench, bench.options_model(), [sample], "rev", "here", "greedy", [Decoding()]
    )


def test_the_report_words_each_verdict_and_says_when_the_scorer_changed_since():
    from evalfleet.reports.report_why import explanations

    data = zerobench_data()
    kinds = ["rule", "rule"]
    why = explanations(data, "1", "so {7}", ["upstream", "robust"], kinds, {}, "RW")
    assert why[0] == score_upstream("so {7}", "7").explanation
    assert why[1] == (
        score_robust("so {7}", "7").explanation
        + " (today's scorer; the stored verdict, scored by older code, stands)"
    )
    failed = explanations(data, "1", None, ["upstream"], ["rule"], {}, "E")
    assert failed == ["the call failed for good: no response to score, counted wrong"]
    judged = explanations(data, "1", "x", ["judge"], ["judge"], {"judge": "m/j"}, "r")
    assert judged == ["judge m/j graded the response (its words below)"]  # no reply kept
    reply = "The response ends with the answer {7}"
    judged = explanations(
        data, "1", "so {7}", ["judge"], ["judge-extract"], {"judge": "m/j"}, "r", {"m/j": reply}
    )
    assert judged == [
        "judge m/j: the judge read the answer '7' out of the response; it equals the "
        "lower-cased target '7'"
    ]
    # a judge's mode the rules decided (no judge asked): the rule's words
    ruled = explanations(data, "1", "so {7}", ["judge"], ["judge"], {"judge": "m/j"}, "R")
    assert ruled == [
        "no judge asked, so the rules decide: " + score_upstream("so {7}", "7").explanation
    ]
