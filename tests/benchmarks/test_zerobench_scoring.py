"""Reference §1.6 vectors 1-30 in both modes, plus one or more vectors per robust rule."""

from __future__ import annotations

import pytest

from evalfleet.benchmarks.zerobench.scoring import SCORERS, score_robust, score_upstream
from evalfleet.core.types import Score

LOREM = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
    "incididunt ut labore et dolore magna aliqua"
)
MOVES = ", ".join(["down", "right", "up", "left", "right", "down"] * 9 + ["down"] * 4)
WRONG_MOVES = "up" + MOVES[len("down") :]
assert len(MOVES.split(", ")) == 58 and WRONG_MOVES.startswith("up, right")


def lorem(x: str) -> str:
    return f"{LOREM}: {{{x}}}"


# (response, target, upstream extracted, upstream correct, robust answer, robust correct)
VECTORS: dict[int, tuple[str, str, str | None, bool, str | None, bool]] = {
    1: (lorem("night"), "night", "night", True, "night", True),
    2: (lorem("2704"), "2704", "2704", True, "2704", True),
    3: (lorem(MOVES), MOVES, MOVES, True, MOVES, True),
    4: (lorem("morning"), "night", "morning", False, "morning", False),
    5: (lorem("2701"), "2704", "2701", False, "2701", False),
    6: (lorem(WRONG_MOVES), MOVES, WRONG_MOVES, False, WRONG_MOVES, False),
    7: ("answer: a", "a", None, False, None, False),
    8: ("Lorem ipsum dolor sit amet," * 10000, "a", None, False, None, False),
    9: ("... so the saving is {11.90}", "11.90", "11.90", True, "11.90", True),
    10: ("Therefore {11.9}", "11.90", "11.9", False, "11.9", True),
    11: ("Answer: {$11.90}", "11.90", "$11.90", False, "$11.90", True),
    12: ("Answer: {11.90} dollars", "11.90", "11.90", True, "11.90", True),
    13: ("First guess {10}. Final answer: {11.90}", "11.90", "11.90", True, "11.90", True),
    14: ("{a}{b}", "a", "b", False, "b", False),
    15: ("The answer is $\\boxed{11.90}$", "11.90", "11.90", True, "11.90", True),
    16: ("Final answer: {PARIS}", "Paris", "paris", True, "paris", True),
    17: ("{paris}", "PARIS", "paris", True, "paris", True),
    18: ("Final answer: {ÉCOLE}", "école", "école", True, "école", True),
    19: ("like this: {final answer}", "11.90", "final answer", False, None, False),
    20: ("Final answer: {}", "11.90", "", False, None, False),
    21: ("Final answer: {11.90}\n\n", "  11.90 ", "11.90", True, "11.90", True),
    22: ("The answer is 11.90", "11.90", None, False, None, False),
    23: ("So {7}.", "7", "7", True, "7", True),
    24: ("{11.90}\n{11.90}", "11.90", "11.90", True, "11.90", True),
    25: ("{11.90}.", "11.90", "11.90", True, "11.90", True),
    26: ("Final answer: {0.5}", "1/2", "0.5", False, "0.5", False),
    27: ("{7} apples", "7 apples", "7", False, "7", False),
    28: ("Final answer: {11.90}}", "11.90", "11.90", True, "11.90", True),
    29: ("Final answer: {5} and then {11.90", "5", "5", True, "5", True),
    30: ('{"answer": "11.90"}', "11.90", '"answer": "11.90"', False, '"answer": "11.90"', False),
}


def test_all_thirty_vectors_are_listed() -> None:
    assert sorted(VECTORS) == list(range(1, 31))


@pytest.mark.parametrize("number", sorted(VECTORS))
def test_upstream_vectors(number: int) -> None:
    response, target, extracted, correct, _, _ = VECTORS[number]
    assert score_upstream(response, target) == Score(
        scoring="upstream", answer=extracted, correct=correct, value=1.0 if correct else 0.0
    )


@pytest.mark.parametrize("number", sorted(VECTORS))
def test_robust_vectors(number: int) -> None:
    response, target, _, _, answer, correct = VECTORS[number]
    assert score_robust(response, target) == Score(
        scoring="robust", answer=answer, correct=correct, value=1.0 if correct else 0.0
    )


def test_upstream_does_not_cross_newlines_or_strip_inside_braces() -> None:
    assert score_upstream("{11.\n90}", "11.90").answer is None
    assert score_upstream("{ 11.90 }", "11.90") == Score("upstream", " 11.90 ", False, 0.0)
    assert score_upstream("{\\frac{1}{2}}", "\\frac{1}{2}").answer == "2"


# (rule, response, target, robust answer, robust correct, upstream correct)
ROBUST_RULES = [
    ("E1 strip inside braces", "{ 11.90 }", "11.90", "11.90", True, False),
    ("E1 nested braces", "So {\\frac{1}{2}}", "\\frac{1}{2}", "\\frac{1}{2}", True, False),
    ("E1 group across lines", "{new\nyork}", "New York", "new york", True, False),
    ("E1 unmatched open brace", "{a {b} c", "b", "b", True, False),
    ("E2 placeholder skipped", "{42}. Format: {Final Answer}", "42", "42", True, False),
    ("E2 empty group skipped", "{11.90} then {}", "11.90", "11.90", True, False),
    ("E3 boxed preferred", "\\boxed{12}. Here {x} is a variable", "12", "12", True, False),
    ("E3 last boxed", "\\boxed{3}, no: \\boxed{4}", "4", "4", True, True),
    ("E3 nested boxed", "$\\boxed{\\frac{3}{4}}$", "\\frac{3}{4}", "\\frac{3}{4}", True, False),
    ("E3 boxed text", "\\boxed{\\text{Paris}}", "Paris", "paris", True, False),
    ("E4 labelled beats later group", "Final answer: {7}. Check: {x+1}", "7", "7", True, False),
    ("E4 label with is", "The final answer is {12}. Units: {cm}", "12", "12", True, False),
    ("E4 markdown label", "**Final Answer:** {Paris}\n\nNote {x}", "Paris", "paris", True, False),
    ("E4 last label wins", "Answer: {3}. Final answer: {4}. {x}", "4", "4", True, False),
    ("E4 boxed still first", "\\boxed{3}, final answer: {4}", "3", "3", True, False),
    ("E5 latex after answer", "{12}, as $\\frac{24}{2}$", "12", "12", True, False),
    ("E5 superscript after", "{12} since x^{2} = 144", "12", "12", True, False),
    ("E5 chained args", "{7}; \\binom {7}{1} = 7", "7", "7", True, False),
    ("E6 only latex args", "Answer: \\textbf{42}", "42", "42", True, True),
    ("U double braces", "So {{42}}", "42", "42", True, False),
    ("U triple braces", "So {{{ 7 }}}", "7", "7", True, False),
    ("U two groups not unwrapped", "{{a}{b}}", "ab", "{a}{b}", False, False),
    ("L answer label inside", "{Answer: 7}", "7", "7", True, False),
    ("L final answer label inside", "{final answer = 11.90}", "11.90", "11.90", True, False),
    ("L label only at the start", "{the answer: 7}", "7", "the answer: 7", False, False),
    ("N1 case folding", "{STRASSE}", "straße", "strasse", True, False),
    ("N1 unicode minus", "{\u22125}", "-5", "-5", True, False),
    ("N2 markdown bold", "{**42**}", "42", "42", True, False),
    ("N2 markdown code", "{`down, up`}", "down, up", "down, up", True, False),
    ("N3 collapse whitespace", "{new   york}", "New York", "new york", True, False),
    ("N3 trailing period", "{Paris.}", "Paris", "paris", True, False),
    ("C1 math dollars", "{$42$}", "42", "$42$", True, False),
    ("C1 percent dropped", "{25\\%}", "25", "25%", True, False),
    ("C1 target has dollar", "{11.90}", "$11.90", "11.90", False, False),
    ("C1 dollar kept, number", "{$11.9}", "$11.90", "$11.9", True, False),
    ("C1 target has percent", "{25 \\%}", "25%", "25 %", True, False),
    ("C1 percent required", "{25}", "25%", "25", False, False),
    ("C3 trailing zero", "{11.9}", "11.90", "11.9", True, False),
    ("C3 thousands in answer", "{1,234}", "1234", "1,234", True, False),
    ("C3 thousands in target", "{1234}", "1,234", "1234", True, False),
    ("C3 bad grouping", "{12,34}", "1234", "12,34", False, False),
    ("C3 leading plus", "{+5}", "5", "+5", True, False),
    ("C3 sign matters", "{-5}", "5", "-5", False, False),
    ("C3 leading dot", "{.5}", "0.5", ".5", True, False),
    ("C4 list spacing", "{down,right,  up}", "down, right, up", "down,right, up", True, False),
    ("C4 list numbers", "{1, 2.50}", "1, 2.5", "1, 2.50", True, False),
    ("C4 list is not a number", "{1, 234}", "1,234", "1, 234", False, False),
    ("C4 list order", "{up, down}", "down, up", "up, down", False, False),
]


@pytest.mark.parametrize(
    ("rule", "response", "target", "answer", "correct", "upstream"),
    ROBUST_RULES,
    ids=[r[0] for r in ROBUST_RULES],
)
def test_robust_rules(
    rule: str, response: str, target: str, answer: str, correct: bool, upstream: bool
) -> None:
    assert score_robust(response, target) == Score("robust", answer, correct, float(correct))
    assert score_upstream(response, target).correct is upstream


def test_scorers_registry() -> None:
    assert list(SCORERS) == ["upstream", "robust"]
    assert SCORERS["upstream"] is score_upstream
    assert SCORERS["robust"] is score_robust
