"""DatBench's discriminative selection on a hand-made matrix (5 models x 9 items in two
capabilities), every figure worked out by hand in the comments; the blind filter's τ table and
comparator; the vision delta's paired SE; the judge prompt's rewrite, slots and verdict."""

from __future__ import annotations

import pytest

from evalfleet.benchmarks.datbench import blind, judge_prompt, selection
from evalfleet.core.types import DatasetError

MODELS = ["m1", "m2", "m3", "m4", "m5"]
# chart: model totals over its 6 items are 4, 3, 2, 3, 2, so y = [2/3, 1/2, 1/3, 1/2, 1/3]
# (mean 7/15, population SD 0.124722).
CHART = {
    "c1": [1, 1, 1, 0, 0],
    "c2": [1, 1, 0, 1, 0],
    "c3": [1, 0, 0, 0, 0],
    "c4": [1, 1, 1, 1, 1],  # everyone right: r_pb undefined
    "c5": [0, 0, 0, 0, 0],  # everyone wrong, flagged frontier: the reserve takes it
    "c6": [0, 0, 0, 1, 1],  # right only for weaker models: negative
}
# table: totals 2, 2, 2, 1, 1 over 3 items, y = [2/3, 2/3, 2/3, 1/3, 1/3]
TABLE = {
    "t1": [1, 0, 1, 0, 1],
    "t2": [1, 1, 0, 0, 0],
    "t3": [0, 1, 1, 1, 0],
}
FRONTIER = {"c4", "c5"}  # c4 is flagged too, but every model solves it: not a frontier item


def items() -> list[selection.Item]:
    out = []
    for capability, rows in (("chart", CHART), ("table", TABLE)):
        for item_id, row in rows.items():
            correct = {m: float(v) for m, v in zip(MODELS, row, strict=True)}
            out.append(selection.Item(item_id, capability, item_id in FRONTIER, correct))
    return out


# c2: right = m1, m2, m4 -> M1 = (2/3 + 1/2 + 1/2)/3 = 5/9, M0 = 1/3, p = 0.6:
#     r_pb = (5/9 - 1/3) / 0.124722 * sqrt(0.24) = 0.872872
# c1: M1 = (2/3 + 1/2 + 1/3)/3 = 1/2, M0 = 5/12 -> 0.083333 / 0.124722 * 0.489898 = 0.327327
# c3: M1 = 2/3, M0 = 5/12, p = 0.2 -> 0.25 / 0.124722 * 0.4 = 0.801784
# t2: y mean 8/15, SD 0.163299; M1 = 2/3, M0 = 4/9, p = 0.4 -> 0.222222/0.163299*0.489898
#     = 0.666667; t1 and t3: M1 = 5/9, M0 = 1/2 -> 0.055556/0.163299*0.489898 = 0.166667
TOTAL = {
    "c1": 0.327327, "c2": 0.872872, "c3": 0.801784, "c4": None, "c5": None, "c6": -0.327327,
    "t1": 0.166667, "t2": 0.666667, "t3": 0.166667,
}  # fmt: skip
# Leave one out, e.g. c2: y = (totals - x)/5 = [3/5, 2/5, 2/5, 2/5, 2/5]: M1 = 7/15, M0 = 2/5,
# SD = 0.08, p = 0.6 -> 0.066667 / 0.08 * 0.489898 = 0.408248; c1: y = [3/5, 2/5, 1/5, 3/5,
# 2/5] -> M1 = 2/5, M0 = 1/2, SD = 0.146969 -> -0.1 / 0.146969 * 0.489898 = -0.327327
LEAVE_ONE_OUT = {
    "c1": -0.327327, "c2": 0.408248, "c3": 0.408248, "c4": None, "c5": None, "c6": -0.720577,
    "t1": -0.645497, "t2": -0.408248, "t3": -0.645497,
}  # fmt: skip


def values(scored: list[selection.Scored]) -> dict[str, float | None]:
    return {s.item.id: None if s.r_pb is None else round(s.r_pb, 6) for s in scored}


def test_point_biserial_of_every_item_over_its_capability():
    assert values(selection.discrimination(items(), MODELS)) == TOTAL


def test_point_biserial_leave_one_out():
    scored = selection.discrimination(items(), MODELS, leave_one_out=True)
    assert values(scored) == LEAVE_ONE_OUT


def test_greedy_order_with_the_frontier_reserve():
    scored = selection.discrimination(items(), MODELS)
    # k = 3, reserve floor(3 * 0.34) = 1: c5 (flagged and failed by all); then c2, c3.
    # table has no frontier item: all three slots by r_pb, the t1/t3 tie in dataset order.
    chosen = [(s.item.id, why) for s, why in selection.select(scored, 3, 0.34)]
    assert chosen == [
        ("c5", "frontier"),
        ("c2", "discriminative"),
        ("c3", "discriminative"),
        ("t2", "discriminative"),
        ("t1", "discriminative"),
        ("t3", "discriminative"),
    ]
    # every chart item: negative after positive, undefined last
    everything = [s.item.id for s, _ in selection.select(scored, 6, 0.0)][:6]
    assert everything == ["c2", "c3", "c1", "c6", "c4", "c5"]
    # 0.8728716 + 0.8017837 + 0.6666667 + 0.1666667 + 0.1666667 (c5 has none)
    subset = [s for s, _ in selection.select(scored, 3, 0.34)]
    assert round(selection.total_discrimination(subset), 6) == 2.674655
    # two per capability, no reserve: c2, c3, t2, t1 -> 2.507989
    smaller = [s for s, _ in selection.select(scored, 2, 0.0)]
    assert round(selection.total_discrimination(smaller), 6) == 2.507989


def test_random_baseline_of_the_whole_pool_is_its_total():
    scored = selection.discrimination(items(), MODELS)
    # every item drawn: c1 and c6 cancel, so the same 2.674655 as the k=3 subset above
    full = selection.random_baseline(scored, {"chart": 6, "table": 3}, seed=3, draws=5)
    assert round(full, 6) == 2.674655
    # one table item per draw: its mean over many draws tends to (1/6 + 2/3 + 1/6)/3 = 1/3
    one = selection.random_baseline(scored, {"table": 1}, seed=3, draws=30000)
    assert one == pytest.approx(1 / 3, abs=0.01)


def test_rank_agreement_subset_against_full():
    pool = [i for i in items() if i.capability == "chart"]
    # on c6 alone the models score [0, 0, 0, 1, 1]; on the chart pool [4, 3, 2, 3, 2]/6.
    # Spearman: ranks [2, 2, 2, 4.5, 4.5] vs [5, 3.5, 1.5, 3.5, 1.5] -> -2.5/sqrt(7.5*9)
    # Kendall tau-b: 1 concordant, 3 discordant, 4 ties in x, 2 in y -> -2/sqrt(6*8)
    spearman, kendall = selection.rank_agreement([pool[5]], pool, MODELS)
    assert round(spearman, 6) == -0.304290
    assert round(kendall, 6) == -0.288675
    # c1-c3: [3, 2, 1, 1, 0]/3, ranks [5, 4, 2.5, 2.5, 1] -> 8/sqrt(9.5*9) = 0.865181
    assert round(selection.rank_agreement(pool[:3], pool, MODELS)[0], 6) == 0.865181


def test_blind_filter_tau_table_and_comparator():
    # Table 7: ChartQA 1, CountBench 4, MMBench 6, RealWorldQA 8; MathVista 6 as MCQ, else 1
    assert blind.tau_for("chartqa", {}, None) == 1
    assert blind.tau_for("countbench", {}, None) == 4
    assert blind.tau_for("mmbench", {}, None) == 6
    assert blind.tau_for("realworldqa", {}, None) == 8
    assert blind.tau_for("mathvista", {"options": ["1", "2"]}, None) == 6
    assert blind.tau_for("mathvista", {}, None) == 1
    assert blind.tau_for("unlisted", {}, None) is None
    assert blind.tau_for("unlisted", {}, 3) == 3
    solved = {"a": [True, False, False], "b": [True, True, False], "c": [True] * 3}
    dataset = {"a": "chartqa", "b": "chartqa", "c": "countbench"}
    meta = dict.fromkeys(solved, {})
    gt = {v.unit: v.remove for v in blind.blind_filter(solved, dataset, meta, "gt")}
    ge = {v.unit: v.remove for v in blind.blind_filter(solved, dataset, meta, "ge")}
    # chartqa τ=1: a solved by 1 (> 1 no, >= 1 yes), b by 2; countbench τ=4: c by 3
    assert gt == {"a": False, "b": True, "c": False}
    assert ge == {"a": True, "b": True, "c": False}


def test_vision_delta_is_paired():
    seen = {"u1": 1.0, "u2": 1.0, "u3": 0.0, "u4": 0.5}
    unseen = {"u1": 0.0, "u2": 1.0, "u3": 0.0, "u9": 1.0}
    capability = {"u1": "chart", "u2": "chart", "u3": "table", "u4": "table", "u9": "table"}
    rows = {d.capability: d for d in blind.vision_delta(seen, unseen, capability)}
    # chart: d = [1, 0] -> mean 0.5, SE = sd([1, 0])/sqrt(2) = 0.707107/1.414214 = 0.5
    assert (rows["chart"].n, rows["chart"].delta, rows["chart"].se) == (2, 0.5, 0.5)
    # table: only u3 is paired; all: d = [1, 0, 0] -> 1/3, SE = 0.57735/sqrt(3) = 1/3
    assert (rows["table"].n, rows["table"].delta, rows["table"].se) == (1, 0.0, 0.0)
    assert rows["all"].n == 3
    assert rows["all"].with_image == pytest.approx(2 / 3)
    assert rows["all"].se == pytest.approx(1 / 3)


PROMPT = (
    "Grade the answer.\nQuestion: {question}\nReference: {ground_truth}\nResponse: {response}\n"
    "Respond with exactly two lines:\nreason: ...\nanswer: true|false"
)


def test_judge_prompt_rewrite_fill_and_verdict():
    template = judge_prompt.judge_template(PROMPT, "r1", "slots")
    assert template == (
        "Grade the answer.\nQuestion: {question}\nReference: {ground_truth}\nResponse: "
        "{response}\n\nOutput exactly one boolean token: true or false. answer: "
    )
    filled = judge_prompt.fill(template, "Q {response}?", "7", "Final Answer: 7")
    assert filled.startswith("Grade the answer.\nQuestion: Q {response}?\nReference: 7\n")
    assert "Response: Final Answer: 7\n\nOutput exactly" in filled
    assert judge_prompt.verdict("reason: fine\nanswer: TRUE") is True
    assert judge_prompt.verdict('answer: false ... {"answer": "true"}') is True
    assert judge_prompt.verdict("answer: false") is False
    assert judge_prompt.verdict("I think it is right.") is None


def test_judge_prompt_without_a_response_slot_fails_at_load():
    cut = "Is it right?\nRespond with exactly two lines:\n{response}"
    with pytest.raises(DatasetError, match="no slot for the response .it was cut"):
        judge_prompt.judge_template(cut, "r9", "slots")
    appended = judge_prompt.judge_template("Is it right?", "r9", "append")
    assert appended.endswith("[Model response]\n{response}\n\nanswer: ")
