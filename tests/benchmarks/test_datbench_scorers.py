"""DatBench scorers: the traced vectors of the upstream spec (§5-§7) and of the reference doc
(§4.2), in compat mode (upstream bd2ecaf, quirks included) and default mode (quirks fixed).

Each vector gives the compat result and the default result; where they are equal the quirk
does not apply. Floats are compared with a tight absolute tolerance.
"""

from __future__ import annotations

import json

import pytest

from evalfleet.benchmarks.datbench.scoring import (
    REGISTRY_KEYS,
    ScoreDetails,
    ScorerInput,
    check_sample,
    extract_final_answer,
    score,
    scorer_name,
)
from evalfleet.core.types import DatasetError

TOL = 1e-6
TABLE_1 = "<table><tr><td>1</td></tr></table>"


def row(
    dataset: str,
    answer: str = "",
    all_answers: list[str] | None = None,
    question: str = "",
    metadata: dict | None = None,
    question_id: str = "q1",
) -> ScorerInput:
    return ScorerInput(
        question_id=question_id,
        question=question,
        answer=answer,
        all_answers=[answer] if all_answers is None else all_answers,
        dataset=dataset,
        metadata=metadata or {},
    )


def both(sample: ScorerInput, out: str) -> tuple[ScoreDetails, ScoreDetails]:
    result = score(sample, out, compat=True), score(sample, out)
    for details in result:
        json.dumps(details.details)  # must be JSON-serialisable
        assert isinstance(details.score, float)
    return result


def check(sample: ScorerInput, out: str, compat: float, default: float) -> tuple:
    upstream, fixed = both(sample, out)
    assert upstream.score == pytest.approx(compat, abs=TOL)
    assert fixed.score == pytest.approx(default, abs=TOL)
    return upstream, fixed


# --------------------------------------------------------------------------- registry


SPEC_KEYS = {
    "pixmo_points_eval", "refcoco_testA", "refcoco_testB", "refcoco_plus_testA",
    "refcoco_plus_testB", "refcoco_m_val", "refcocog_test", "docvqa", "ocr-vqa", "infovqa",
    "cc-ocr-doc_parsing", "cc-ocr-kie", "ocrbench-v2", "countbench", "tallyqa", "text-vqa",
    "cc-ocr-multi_scene_ocr", "vqa-v2", "ai2d", "mmbench", "mmmu", "mmmupro", "realworldqa",
    "mme-realworld-ocr", "mme-realworld-ad", "mme-realworld-mo", "mme-realworld-dt", "chartqa",
    "chartqapro", "charxiv_descriptive", "charxiv_reasoning", "mathvista", "mathverse_reasoning",
    "mathverse_wo", "mathvision", "logicvista",
}  # fmt: skip


def test_registry_keys_are_the_spec_table():
    assert set(REGISTRY_KEYS) == SPEC_KEYS
    assert len(REGISTRY_KEYS) == len(SPEC_KEYS) == 36


@pytest.mark.parametrize(
    ("dataset", "name"),
    [
        ("refcoco_plus_testB", "refcoco"),
        ("ocr-vqa", "ocrvqa"),
        ("mme-realworld-dt", "mme_realworld"),
        ("charxiv_reasoning", "charxiv"),
        ("mathverse_wo", "mathverse"),
        ("cc-ocr-multi_scene_ocr", "cc_ocr_multi_scene_ocr"),
        ("refcoco_val", "fallback"),
        ("MMBench", "fallback"),
        ("", "fallback"),
    ],
)
def test_scorer_name(dataset, name):
    assert scorer_name(dataset) == name


# --------------------------------------------------------------------------- extraction


@pytest.mark.parametrize(
    ("text", "compat", "default"),
    [
        ("Reasoning...\nANSWER: Paris", "Paris", "Paris"),
        ("Reasoning...\nFinal Answer: 42\nThanks!", "42", "42"),
        ("Reasoning\nANSWER: 3\nANSWER: 4", "4", "4"),
        ("ANSWER: 3\nANSWER: 4", "4", "4"),
        ("The value is \\boxed{7}. Later \\boxed{8}", "8", "8"),
        ("<|begin_of_box|> 12 <|end_of_box|> and \\boxed{3}", "12", "12"),
        ("Answer:\nParis", "Paris", "Paris"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1", "\\frac{1}{2}"),
        ("**Answer:** B", "**Answer:** B", "B"),
        ("**Final Answer**: **42**", "**Final Answer**: **42**", "42"),
        ("**Answer:**\nB", "B", "B"),
        ("Final Answer: 'blue'", "blue", "blue"),
        ("ANSWER: <answer>", "", ""),
        ("ANSWER: <answer>female</answer>", "female", "female"),
        ("Answer: `blue`", "blue", "blue"),
        ("answer:   two   words ", "two words", "two words"),
        ("line one\n\nlast line here  ", "last line here", "last line here"),
        ("Final answer is 9", "Final answer is 9", "Final answer is 9"),
        ("", "", ""),
        ("\\boxed{} then 5", "\\boxed{} then 5", "\\boxed{} then 5"),
    ],
)
def test_extract_final_answer(text, compat, default):
    assert extract_final_answer(text, compat=True) == compat
    assert extract_final_answer(text) == default


def test_extract_final_answer_non_string():
    assert extract_final_answer(None) == ""
    assert extract_final_answer(42, compat=True) == ""


# --------------------------------------------------------------------------- fallback


@pytest.mark.parametrize(
    ("answer", "out", "expected"),
    [("Paris", "ANSWER: paris", 1.0), ("Paris", "Paris.", 0.0), (" Yes ", "yes", 1.0)],
)
def test_fallback(answer, out, expected):
    upstream, fixed = check(row("table-something", answer), out, expected, expected)
    assert upstream.details == {} and fixed.answer == (out.split(": ")[-1])


# --------------------------------------------------------------------------- metadata checks


@pytest.mark.parametrize(
    ("sample", "message"),
    [
        (
            row("tallyqa", "3"),
            "DatBench row 'q1' (dataset 'tallyqa'): metadata lacks 'is_simple', "
            "which the tallyqa scorer requires",
        ),
        (
            row("vqa-v2", "yes", metadata={"question_type": "is"}),
            "DatBench row 'q1' (dataset 'vqa-v2'): metadata lacks 'answer_type', "
            "which the vqav2 scorer requires",
        ),
        (
            row("vqa-v2", "yes", question_id="v9"),
            "DatBench row 'v9' (dataset 'vqa-v2'): metadata lacks 'answer_type', "
            "'question_type', which the vqav2 scorer requires",
        ),
        (
            row("refcocog_test"),
            "DatBench row 'q1' (dataset 'refcocog_test'): metadata lacks 'bbox', "
            "which the refcoco scorer requires",
        ),
        (
            row("refcoco_testA", metadata={"bbox": [0.1, 0.2, 0.3]}),
            "DatBench row 'q1' (dataset 'refcoco_testA'): metadata 'bbox' must be a list of "
            "4 numbers, which the refcoco scorer requires",
        ),
        (
            row("pixmo_points_eval", metadata={"points_target": []}),
            "DatBench row 'q1' (dataset 'pixmo_points_eval'): metadata lacks 'points_mask', "
            "'has_target', which the pixmo_points_eval scorer requires",
        ),
    ],
)
def test_check_sample_errors(sample, message):
    with pytest.raises(DatasetError) as error:
        check_sample(sample)
    assert str(error.value) == message
    assert "\n" not in message
    for compat in (True, False):
        with pytest.raises(DatasetError) as error:
            score(sample, "ANSWER: 3", compat=compat)
        assert str(error.value) == message


def test_check_sample_accepts_complete_rows():
    check_sample(row("tallyqa", "3", metadata={"is_simple": True}))
    check_sample(row("refcoco_testB", metadata={"bbox": [0, 0, 1, 1]}))
    check_sample(row("unknown-dataset"))
    check_sample(row("mmbench", "B"))


# --------------------------------------------------------------------------- OCRBench v2


def ocrbench(task, answers, method=None, question="", **extra):
    metadata = {"type": task} | ({"eval": method} if method else {}) | extra
    return row("ocrbench-v2", answers[0], answers, question, metadata)


HTML_Q = "Convert the table in the image to HTML."


@pytest.mark.parametrize(
    ("sample", "out", "compat", "default"),
    [
        (ocrbench("text recognition en", ["STOP"]), "ANSWER: The sign reads stop", 1.0, 1.0),
        (
            ocrbench("document classification en", ["B"], "multiple choice"),
            "Answer: (B)",
            1.0,
            1.0,
        ),
        (
            ocrbench("document classification en", ["B"], "multiple choice"),
            "Answer: B. letter",
            0.0,
            0.0,
        ),
        (ocrbench("text counting en", ["10"], "regression"), "ANSWER: 8", 0.8, 0.8),
        (ocrbench("text counting en", ["3"]), "13", 1.0, 1.0),
        (
            ocrbench("key information extraction en", ["{'name': 'Bob', 'date': '2020'}"]),
            '{"name": "bob", "date": "2021"}',
            0.5,
            0.5,
        ),
        (
            ocrbench("reasoning VQA en", ["the quick brown fox jumps"]),
            "the quick brown fox jumped",
            1 - 2 / 26,
            1 - 2 / 26,
        ),
        (ocrbench("text recognition en", ["Stop"], "case sensitive"), "STOP", 0.0, 0.0),
        (ocrbench("formula recognition en", ["x^{2}"]), "Answer: x ^ {2} + 1", 1.0, 1.0),
        (ocrbench("formula recognition cn", ["\\text{km}"]), "km", 1.0, 1.0),
        (ocrbench("cognition VQA cn", ["北京"]), "答案是北 京", 1.0, 1.0),
        (ocrbench("table parsing en", [TABLE_1], question=HTML_Q), TABLE_1, 1.0, 1.0),
        (
            ocrbench("table parsing en", [TABLE_1], question=HTML_Q),
            "<table><tr><td>2</td></tr></table>",
            0.5,
            0.5,
        ),
        (ocrbench("table parsing en", [TABLE_1], question=HTML_Q), "no table", 0.0, 0.0),
        (
            ocrbench("VQA with position en", ["stop"], bbox=[10, 10, 20, 20]),
            '{"answer": "stop", "bbox": [10, 10, 20, 20]}',
            1.0,
            1.0,
        ),
        (
            ocrbench("VQA with position en", ["stop"], bbox=[10, 10, 20, 20]),
            "stop at [10, 10, 20, 30]",
            0.75,
            0.75,
        ),
        (ocrbench("text spotting en", ["exit"]), "EXIT sign", 1.0, 1.0),
        (ocrbench("some new task", ["cat"]), "a cat", 1.0, 1.0),
    ],
)
def test_ocrbench(sample, out, compat, default):
    check(sample, out, compat, default)


def test_ocrbench_full_page_reads_the_whole_transcription():
    # O1: compat scores the last line only (BLEU ~0, METEOR 0.4934, F 2/3, 1 - 12/23)
    sample = ocrbench("full-page OCR en", ["Hello world\nsecond line"])
    meteor = (0.5 / 0.95) * (1 - 0.5 * 0.5**3)
    compat = (0.0 + meteor + 2 / 3 + (1 - 12 / 23)) / 4
    upstream, fixed = check(sample, "Hello world\nsecond line", compat, (1 + 0.9921875 + 1 + 1) / 4)
    assert upstream.details["scoring_method"] == "full_page_ocr"
    assert upstream.answer == "second line"
    # a predicted word with no exact or stem match makes METEOR fail (WordNet absent): it counts 0
    expected = (0.5 + 1 - 1 / 3) / 4  # BLEU ~0, METEOR 0, F 1/2, edit 1/3
    check(ocrbench("full-page OCR en", ["a b"]), "a c", expected, expected)


def test_ocrbench_chinese_full_page():
    # jieba gives two tokens: BLEU ~0 (no 3-grams), METEOR of an exact match, F 1, edit 0
    meteor = 1 - 0.5 * 0.5**3
    sample = ocrbench("full-page OCR cn", ["你好世界"])
    check(sample, "你好世界", (meteor + 2) / 4, (meteor + 2) / 4)


# --------------------------------------------------------------------------- grounding


def pixmo(has_target, points, masks):
    metadata = {"points_target": points, "points_mask": masks, "has_target": has_target}
    return row("pixmo_points_eval", metadata=metadata)


MASK_2X2 = [[[False, False], [False, True]]]
MASK_4X4 = [[[r == 3 and c == 1 for c in range(4)] for r in range(4)]]


@pytest.mark.parametrize(
    ("sample", "out", "compat", "default"),
    [
        (pixmo(False, [], []), "There is no such object in the image.", 1.0, 1.0),
        (pixmo(False, [], []), "(500, 500)", 0.0, 0.0),
        (pixmo(True, [[50, 50]], MASK_2X2), "Point: (600, 700)", 1.0, 1.0),
        (pixmo(True, [[50, 50]], MASK_2X2), "(100, 100) and (600, 700)", 2 / 3, 2 / 3),
        (pixmo(True, [[25, 75]], MASK_4X4), "\\boxed{0.25, 0.75}", 1.0, 1.0),
        (pixmo(True, [[50, 50]], MASK_2X2), "I see nothing", 0.0, 0.0),
        # G1: a point on the bottom-right edge is in the last mask cell by default
        (pixmo(True, [[90, 90]], MASK_2X2), "(1000, 1000)", 0.0, 1.0),
    ],
)
def test_pixmo_points(sample, out, compat, default):
    check(sample, out, compat, default)


def test_pixmo_details():
    upstream, fixed = both(pixmo(True, [[50, 50]], MASK_2X2), "(100, 100) and (600, 700)")
    assert upstream.details["precision"] == pytest.approx(0.5, abs=TOL)
    assert upstream.details["recall"] == pytest.approx(1.0, abs=TOL)
    assert upstream.details["predicted_points"] == [[0.1, 0.1], [0.6, 0.7]]
    assert upstream.details["ground_truth_points"] == [[0.5, 0.5]]
    assert json.loads(fixed.answer) == [[0.1, 0.1], [0.6, 0.7]]


def refcoco(bbox):
    return row("refcoco_testA", metadata={"bbox": bbox})


@pytest.mark.parametrize(
    ("bbox", "out", "iou", "compat", "default"),
    [
        ([0.1, 0.1, 0.5, 0.5], "\\boxed{[100, 100, 500, 500]}", 1.0, 1.0, 1.0),
        ([0, 0, 0.5, 0.5], "The box is [0, 0, 0.5, 0.25]", 0.5, 1.0, 1.0),
        ([0, 0, 0.5, 0.5], "[0, 0, 0.5, 0.2]", 0.4, 0.0, 0.0),
        ([0, 0, 0.5, 0.5], "no box", 0.0, 0.0, 0.0),
        ([0, 0, 0.5, 0.5], "[10, 20, 30]", 0.0, 0.0, 0.0),
    ],
)
def test_refcoco(bbox, out, iou, compat, default):
    upstream, fixed = check(refcoco(bbox), out, compat, default)
    assert upstream.details["iou"] == pytest.approx(iou, abs=TOL)
    assert fixed.details["iou"] == pytest.approx(iou, abs=TOL)


def test_refcoco_parentheses_and_last_group():
    # G2: parentheses are read, and the last group wins
    upstream, fixed = check(refcoco([0.1, 0.2, 0.3, 0.4]), "(100, 200, 300, 400)", 0.0, 1.0)
    assert upstream.answer is None and upstream.details["pred_bbox"] == [0, 0, 0, 0]
    assert fixed.details["iou"] == pytest.approx(1.0, abs=TOL)
    out = "first [0, 0, 0.1, 0.1], final [0, 0, 0.5, 0.5]"
    upstream, fixed = check(refcoco([0, 0, 0.5, 0.5]), out, 0.0, 1.0)
    assert upstream.details["iou"] == pytest.approx(0.04, abs=TOL)
    assert upstream.details["recall@0.3"] == 0.0 and fixed.details["recall@0.7"] == 1.0


# --------------------------------------------------------------------------- documents


@pytest.mark.parametrize(
    ("golds", "out", "expected"),
    [
        (["1995"], "ANSWER: 1995", 1.0),
        (["Dear Dr. Lobo", "Dr. Lobo"], "Answer: Dear dr. Lobo", 1.0),
        (["12/15/88"], "12/15/89", 0.875),
        (["hello"], "help", 0.6),
        (["abcd"], "abxy", 0.5),
        (["cat"], "dog", 0.0),
    ],
)
def test_docvqa(golds, out, expected):
    upstream, _ = check(row("docvqa", golds[0], golds), out, expected, expected)
    assert upstream.details["anls_thresholded_0_5"] == pytest.approx(
        expected if expected >= 0.5 else 0.0, abs=TOL
    )


@pytest.mark.parametrize(
    ("answer", "out", "expected"),
    [
        ("Harry Potter", "ANSWER: harry potter", 1.0),
        ("Romance", "Romance.", 0.875),
        ("Yes", "No", 0.0),
        ("", "anything", 0.0),
    ],
)
def test_ocrvqa(answer, out, expected):
    check(row("ocr-vqa", answer, ["ignored"]), out, expected, expected)


@pytest.mark.parametrize(
    ("answer", "golds", "out", "compat", "default"),
    [
        ("london", ["london"], "Answer: London", 1.0, 1.0),
        ("12/15/88", ["12/15/88"], "12/15/89", 0.875, 0.875),
        ("abcd", ["abcd"], "abxy", 0.0, 0.0),
        # V1: all_answers count by default
        ("2015", ["2015", "2016"], "2016", 0.75, 1.0),
        ("", [], "x", 0.0, 0.0),
    ],
)
def test_infovqa(answer, golds, out, compat, default):
    check(row("infovqa", answer, golds), out, compat, default)


# --------------------------------------------------------------------------- CC-OCR


def cc_doc(answer, category=None, key="l2_category"):
    return row("cc-ocr-doc_parsing", answer, metadata={key: category} if category else {})


@pytest.mark.parametrize(
    ("sample", "out", "compat", "default"),
    [
        (cc_doc("Hello World", "doc"), "Hello World", 1.0, 1.0),
        (cc_doc("abcd", "doc"), "```latex\nabcf\n```", 0.75, 0.75),
        (cc_doc("x^2 + y^2", "formula"), "\\boxed{x^{2}+y^2}", 7 / 9, 7 / 9),
        (cc_doc("<smiles>CCO</smiles>", "molecular"), "CCO", 1.0, 1.0),
        (cc_doc(TABLE_1, "table"), "<table><tr><td>2</td></tr></table>", 1.0, 1.0),
        (cc_doc(TABLE_1, "table"), "<table><tr><td>1</td><td>2</td></tr></table>", 2 / 3, 2 / 3),
        (cc_doc("abc"), "abd", 2 / 3, 2 / 3),
        # C1: the hyphenated key routes the row by default
        (cc_doc("<smiles>CCO</smiles>", "molecular", "l2-category"), "CCO", 0.15, 1.0),
    ],
)
def test_cc_ocr_doc_parsing(sample, out, compat, default):
    check(sample, out, compat, default)


KIE_GOLD = '{"company": "ACME", "total": "12.00"}'


@pytest.mark.parametrize(
    ("out", "f1", "nted", "compat", "default"),
    [
        (KIE_GOLD, 2 / 2.000001, 1.0, 0.99999975, 1.0),
        (
            '```json\n{"company": "ACME", "total": "13.00"}\n```',
            1 / 2.000001,
            0.75,
            0.624999875,
            0.625,
        ),
        ("I cannot read it.", 0.0, 0.0, 0.0, 0.0),
        ('\\boxed{{"company": "ACME"}} done', 1 / 1.500001, 0.5, 0.583333, 0.583333),
    ],
)
def test_cc_ocr_kie(out, f1, nted, compat, default):
    upstream, _ = check(row("cc-ocr-kie", KIE_GOLD), out, compat, default)
    assert upstream.details["f1_score"] == pytest.approx(f1, abs=1e-9)
    assert upstream.details["nted_score"] == pytest.approx(nted, abs=1e-9)


@pytest.mark.parametrize(
    ("answer", "out", "compat", "default"),
    [
        ("Hello World", "hello world", 1.0, 1.0),
        ("STOP", "The sign says STOP", 8 / 19, 8 / 19),
        ("abc", "cba", 1.0, 1.0),
        ("中文", "anything", 0.0, 0.0),
        ("中文", "中文", 1.0, 1.0),
        # C3: non-ASCII characters are scored by default
        ("中文", "中国", 1.0, 0.5),
        ("Café", "cafe", 6 / 7, 0.75),
    ],
)
def test_cc_ocr_multi_scene(answer, out, compat, default):
    check(row("cc-ocr-multi_scene_ocr", answer), out, compat, default)


# --------------------------------------------------------------------------- counting


@pytest.mark.parametrize(
    ("answer", "out", "compat", "default", "parsed"),
    [
        ("3", "3", 1.0, 1.0, (3, 3)),
        ("5", "I count 2 apples and 5 pears.\nANSWER: five", 1.0, 1.0, (5, 5)),
        # N1: number words are whole words by default
        ("7", "There are seventeen birds", 1.0, 0.0, (7, 17)),
        ("4", "ANSWER: 4.5", 0.0, 0.0, (5, 5)),
        ("0", "None", 0.0, 0.0, (1, None)),
        ("10", "\\boxed{10}", 1.0, 1.0, (10, 10)),
        ("2", "two or three", 1.0, 0.0, (2, 3)),
    ],
)
def test_countbench(answer, out, compat, default, parsed):
    upstream, fixed = check(row("countbench", answer), out, compat, default)
    assert (upstream.details["parsed_answer"], fixed.details["parsed_answer"]) == parsed


@pytest.mark.parametrize(
    ("answer", "out", "expected", "parsed"),
    [
        ("3", "ANSWER: 3", 1.0, 3),
        ("21", "twenty-one", 1.0, 21),
        ("2", "There are 2 dogs and 3 cats", 1.0, 2),
        ("4", "So, the answer is four.", 1.0, 4),
        ("0", "None", 0.0, None),
        ("12", "I can see twelve", 1.0, 12),
    ],
)
def test_tallyqa(answer, out, expected, parsed):
    sample = row("tallyqa", answer, metadata={"is_simple": False})
    upstream, fixed = check(sample, out, expected, expected)
    assert upstream.details["parsed_answer"] == fixed.details["parsed_answer"] == parsed
    assert upstream.details["is_simple"] is False


# --------------------------------------------------------------------------- VQA


@pytest.mark.parametrize(
    ("golds", "out", "expected"),
    [
        (["stop"] * 10, "STOP", 1.0),
        (["coca cola"] * 2 + ["coke"] * 8, "Coca Cola", 0.6),
        (["the cat"] * 3 + ["dog"] * 7, "cat", 0.9),
        (["two"] * 10, "2", 1.0),
        (["$5"] * 10, "5 dollars", 1.0),
        (["stop"], "stop", 0.0),
    ],
)
def test_textvqa(golds, out, expected):
    check(row("text-vqa", golds[0], golds), out, expected, expected)


VQA_META = {"answer_type": "other", "question_type": "what"}


@pytest.mark.parametrize(
    ("golds", "out", "expected"),
    [
        (["yes"] * 10, "Yes.", 1.0),
        (["2"] * 3 + ["3"] * 7, "two", 0.9),
        (["red"] + ["blue"] * 9, "red", 0.3),
        (["dog"] * 10, "ANSWER: a dog", 1.0),
        (["don't know"] * 10, "dont know", 1.0),
    ],
)
def test_vqav2(golds, out, expected):
    upstream, _ = check(row("vqa-v2", golds[0], golds, metadata=VQA_META), out, expected, expected)
    assert upstream.details["answer_type"] == "other"


# --------------------------------------------------------------------------- multiple choice


@pytest.mark.parametrize(
    ("answer", "out", "compat", "default", "letters"),
    [
        # A1: the string answer is compared as a string by default
        ("1", "ANSWER: B", 0.0, 1.0, ("B", "B")),
        ("B", "B", 0.0, 1.0, ("B", "B")),
        ("0", "The answer is a cat", 0.0, 0.0, ("A", None)),
    ],
)
def test_ai2d(answer, out, compat, default, letters):
    upstream, fixed = check(row("ai2d", answer), out, compat, default)
    assert (upstream.answer, fixed.answer) == letters


def test_ai2d_option_text_and_metadata_choices():
    sample = row("ai2d", "a bird", metadata={"options": ["a dog", "a cat", "a bird"]})
    fixed = score(sample, "I pick (C)")
    assert (fixed.score, fixed.answer, fixed.details["predicted_index"]) == (1.0, "C", 2)


MMBENCH_OPTIONS = {"options": ["a dog", "a cat", "a bird", "a fish"]}


@pytest.mark.parametrize(
    ("answer", "out", "compat", "default", "letters"),
    [
        ("B", "ANSWER: B", 1.0, 1.0, ("B", "B")),
        ("B", "The answer is B.", 1.0, 1.0, ("B", "B")),
        # D1: the article "a" is not choice A by default
        ("B", "It is a cat", 0.0, 0.0, ("A", None)),
        ("A", "It is a cat", 1.0, 0.0, ("A", None)),
        ("D", "\\boxed{D}", 1.0, 1.0, ("D", "D")),
        ("B", "ANSWER: E", 0.0, 0.0, (None, None)),
        ("C", "I choose (C) a bird", 1.0, 1.0, ("C", "C")),
        ("C", "ANSWER: (C)", 1.0, 1.0, ("C", "C")),
        ("B", "ANSWER: (C)", 0.0, 0.0, ("C", "C")),
        ("B", "ANSWER: C) a bird", 0.0, 0.0, ("C", "C")),
        ("B", "\\boxed{D}", 0.0, 0.0, ("D", "D")),
        ("C", "ANSWER: (c)", 1.0, 1.0, ("C", "C")),
        ("C", "Answer: Option (c)", 1.0, 1.0, ("C", "C")),
    ],
)
def test_mmbench(answer, out, compat, default, letters):
    upstream, fixed = check(row("mmbench", answer, metadata=MMBENCH_OPTIONS), out, compat, default)
    assert (upstream.answer, fixed.answer) == letters
    assert upstream.details["is_correct"] is (compat == 1.0)


def test_mmbench_pipe_in_character_class():
    # D2: upstream's class for choices 1/2 is [1|2], which also matches "|"
    sample = row("mmbench", "|", metadata={"all_choices": ["1", "2"], "index2ans": {"1": "x"}})
    upstream, fixed = check(sample, "a|b", 1.0, 0.0)
    assert (upstream.answer, fixed.answer) == ("|", None)


MMMU_META = {
    "all_choices": ["A", "B", "C", "D"],
    "index2ans": {"A": "alpha", "B": "beta", "C": "gamma", "D": "delta"},
}


@pytest.mark.parametrize(
    ("answer", "out", "compat", "default", "metadata"),
    [
        ("B", "Reasoning...\nAnswer: b", 1.0, 1.0, MMMU_META),
        # A3: the letter cascade reads \boxed{B} by default
        ("B", "\\boxed{B}", 0.0, 1.0, MMMU_META),
        ("A", "The correct option is (A) because ...", 1.0, 1.0, MMMU_META),
        ("C", "Final Answer: C", 1.0, 1.0, MMMU_META),
        ("B", "ANSWER: (B)", 1.0, 1.0, MMMU_META),
        # A3: choices fall back to the options list
        ("B", "ANSWER: (B)", 0.0, 1.0, {"options": ["alpha", "beta"]}),
        # D3: "Answer: a truck" is not choice A by default
        ("A", "Answer: a truck", 1.0, 0.0, MMMU_META),
    ],
)
def test_mmmu(answer, out, compat, default, metadata):
    check(row("mmmu", answer, metadata=metadata), out, compat, default)


MMMUPRO_META = {
    "options": ["alpha", "beta"],
    "index2ans": {"A": "alpha", "B": "beta"},
    "all_choices": ["A", "B"],
}


@pytest.mark.parametrize(
    ("answer", "out", "expected", "metadata", "letter"),
    [
        ("B", "\\boxed{B}", 1.0, MMMUPRO_META, "B"),
        ("C", "Answer: c", 1.0, {"options": "['x', 'y', 'z']"}, "C"),
        ("B", "The answer is beta", 0.0, MMMUPRO_META, None),
        ("B", "I think that the final answer is beta", 1.0, MMMUPRO_META, "B"),
        ("B", "ANSWER: B", 0.0, {}, None),
    ],
)
def test_mmmupro(answer, out, expected, metadata, letter):
    upstream, fixed = check(row("mmmupro", answer, metadata=metadata), out, expected, expected)
    assert upstream.answer == fixed.answer == letter


RWQA_Q = "How many cars?\nA. 1\nB. 2\nC. 3"


@pytest.mark.parametrize(
    ("question", "answer", "out", "compat", "default", "preds"),
    [
        (RWQA_Q, "B", "ANSWER: B", 1.0, 1.0, ("B", "B")),
        (RWQA_Q, "B", "Answer: 2", 1.0, 1.0, ("B", "B")),
        ("Is it red?", "Yes", "yes.", 1.0, 1.0, ("yes.", "yes.")),
        ("How many?", "3", "ANSWER: three", 1.0, 1.0, ("3", "3")),
        # A4: the article is not a letter by default
        (RWQA_Q, "C", "Answer: a truck on the left", 0.0, 0.0, ("A", "a truck on the left")),
        (RWQA_Q, "A", "Answer: a truck on the left", 1.0, 0.0, ("A", "a truck on the left")),
        (RWQA_Q, "C", "Thinking...\nAnswer: (c)", 1.0, 1.0, ("C", "C")),
        (RWQA_Q, "C", "Answer: (c) three", 1.0, 1.0, ("C", "C")),
    ],
)
def test_realworldqa(question, answer, out, compat, default, preds):
    upstream, fixed = check(row("realworldqa", answer, question=question), out, compat, default)
    assert (upstream.details["pred_answer"], fixed.details["pred_answer"]) == preds


def test_realworldqa_options_from_metadata():
    sample = row("realworldqa", "B", question="Which?", metadata={"options": ["left", "right"]})
    check(sample, "It is on the right", 1.0, 1.0)


@pytest.mark.parametrize(
    ("answer", "out", "compat", "default", "letters", "options"),
    [
        ("B", "B", 1.0, 1.0, ("B", "B"), None),
        ("C", "The answer is (C) blue", 1.0, 1.0, ("C", "C"), None),
        ("B", "A person is walking, so the answer is \\boxed{B}", 1.0, 1.0, ("B", "B"), None),
        # A5: upper-case standalone letters, and the "Answer:" marker wins
        ("D", "It's a dog. Answer: D", 0.0, 1.0, ("A", "D"), None),
        ("D", "A person is walking. Answer: D", 0.0, 1.0, ("A", "D"), None),
        ("A", "", 0.0, 0.0, (None, None), None),
        ("A", "", 1.0, 0.0, ("A", None), ["(A) red", "(B) blue"]),
        ("B", "blue", 1.0, 1.0, ("B", "B"), ["(A) red", "(B) blue"]),
        ("C", "I pick (c)", 1.0, 1.0, ("C", "C"), None),
    ],
)
def test_mme_realworld(answer, out, compat, default, letters, options):
    metadata = {"options": options} if options else {}
    sample = row("mme-realworld-ocr", answer, metadata=metadata)
    upstream, fixed = check(sample, out, compat, default)
    assert (upstream.answer, fixed.answer) == letters


# --------------------------------------------------------------------------- charts


@pytest.mark.parametrize(
    ("golds", "out", "compat", "default"),
    [
        (["16.9"], "ANSWER: 17", 1.0, 1.0),
        (["45%"], "0.45", 1.0, 1.0),
        (["100"], "106", 0.0, 0.0),
        (["Yes"], "yes.", 1.0, 1.0),
        (["[Apple, Banana]"], "[banana, apple]", 1.0, 1.0),
        (["1,234"], "1234", 1.0, 1.0),
        # H1: a gold of 0 matches 0 by default
        (["0"], "0.0", 0.0, 1.0),
        (["12", "twelve"], "twelve", 1.0, 1.0),
    ],
)
def test_chartqa(golds, out, compat, default):
    check(row("chartqa", golds[0], golds), out, compat, default)


def chartqapro(answers, question_type, flags, question="", **extra):
    metadata = {"question_type": question_type, "year_flags": flags} | extra
    return row("chartqapro", answers[-1], answers, question, metadata)


@pytest.mark.parametrize(
    ("sample", "out", "compat", "default"),
    [
        (chartqapro(["42"], "Factoid", ["NO"]), "ANSWER: 43", 1.0, 1.0),
        (chartqapro(["2019"], "Factoid", ["YES"]), "2020", 0.0, 0.0),
        (chartqapro(["B"], "Multi Choice", []), "b) Increase", 1.0, 1.0),
        (chartqapro(["True"], "Fact Checking", []), "true.", 1.0, 1.0),
        (chartqapro(["0.6"], "Factoid", [], "What percentage of sales?"), "60%", 1.0, 1.0),
        (chartqapro(["[Asia, Europe]"], "Factoid", ["NO"]), "['Asia', 'Europe']", 1.0, 1.0),
        # H2: every answer counts by default
        (chartqapro(["10", "ten"], "Factoid", []), "10", 0.0, 1.0),
        # H2: Conversational rows keep the last answer
        (chartqapro(["5", "7"], "Conversational", ["NO", "NO"]), "5", 0.0, 0.0),
        # H3: multi-word list items survive by default
        (
            chartqapro(["[New York, Los Angeles]"], "Factoid", ["NO"]),
            "['New York', 'Los Angeles']",
            0.0,
            1.0,
        ),
        (chartqapro(["0"], "Factoid", []), "0", 1.0, 1.0),
        (chartqapro(["[1, 2]"], "Factoid", []), "[1, 3]", 0.5, 0.5),
        (chartqapro(["9", "42"], "Factoid", [], is_multi_turn=True), "9", 1.0, 1.0),
    ],
)
def test_chartqapro(sample, out, compat, default):
    check(sample, out, compat, default)


def test_chartqapro_prefers_metadata_answers():
    sample = row("chartqapro", "99", ["99"], metadata={"all_answers": ["42"]})
    upstream, fixed = check(sample, "42", 1.0, 1.0)
    assert upstream.details["ground_truth"] == "42"


def charxiv(answer, question_type=None, dataset="charxiv_descriptive"):
    metadata = {"question_type": question_type} if question_type else {}
    return row(dataset, answer, metadata=metadata)


@pytest.mark.parametrize(
    ("sample", "out", "compat", "default"),
    [
        (
            charxiv("Not Applicable", "descriptive"),
            "ANSWER: There is no title, so Not Applicable",
            1.0,
            1.0,
        ),
        (charxiv("1,000", "descriptive"), "1000", 1.0, 1.0),
        (charxiv("Time (s)", "descriptive"), "Time", 0.0, 0.0),
        # H5: a prediction contained in the answer no longer passes
        (charxiv("Model A", "reasoning"), "ANSWER: A", 1.0, 0.0),
        (charxiv("increase", "reasoning"), "It will increase steadily", 1.0, 1.0),
        # H4: the dataset name gives the question type by default
        (charxiv("increase", None, "charxiv_reasoning"), "It will increase steadily", 0.0, 1.0),
    ],
)
def test_charxiv(sample, out, compat, default):
    check(sample, out, compat, default)


# --------------------------------------------------------------------------- maths


@pytest.mark.parametrize(
    ("answer", "out", "compat", "default"),
    [
        ("3.5", "ANSWER: 3.50", 1.0, 1.0),
        ("1,000", "1000", 1.0, 1.0),
        ("circle", "Answer: The shape is a circle", 1.0, 1.0),
        # M1: the last number of a text prediction is compared with a number gold
        ("2", "Answer: x = 2", 0.0, 1.0),
        ("A", "ANSWER: A", 1.0, 1.0),
        ("A", "Answer: (A)", 0.0, 0.0),
        ("5", "The result is 5\n<answer>", 1.0, 1.0),
        # M1: an empty gold is never matched
        ("", "anything", 1.0, 0.0),
    ],
)
def test_mathvista(answer, out, compat, default):
    check(row("mathvista", answer), out, compat, default)


@pytest.mark.parametrize("dataset", ["mathverse_reasoning", "mathverse_wo"])
def test_mathverse(dataset):
    upstream, fixed = check(row(dataset, "12"), "ANSWER: 12", 0.0, 1.0)
    assert upstream.details == {"error": "upstream mathverse scorer is not implemented"}
    assert upstream.answer is None
    assert (fixed.answer, fixed.details) == ("12", {"scorer": "fallback"})


MATHVISION_OPTIONS = {"options": ["3", "4", "5", "6", "7"]}


@pytest.mark.parametrize(
    ("answer", "metadata", "out", "compat", "default"),
    [
        ("5", {}, "The answer is \\boxed{5}", 1.0, 1.0),
        ("C", MATHVISION_OPTIONS, "Answer: \\boxed{C}", 1.0, 1.0),
        ("C", MATHVISION_OPTIONS, "\\boxed{5}", 1.0, 1.0),
        ("C", MATHVISION_OPTIONS, "The answer is D.", 0.0, 0.0),
        ("0.5", {}, "\\boxed{\\frac{1}{2}}", 1.0, 1.0),
        # X1: sympy evaluates square roots by default
        ("2\\sqrt{2}", {}, "\\boxed{\\sqrt{8}}", 0.0, 1.0),
        ("(1,2)", {}, "So the point is \\boxed{(1, 2)}", 1.0, 1.0),
        ("B", {"correct_choice_letter": "B", **MATHVISION_OPTIONS}, "The answer is 4", 1.0, 1.0),
    ],
)
def test_mathvision(answer, metadata, out, compat, default):
    check(row("mathvision", answer, metadata=metadata), out, compat, default)


LOGICVISTA_Q = "Which?\nA. x\nB. y\nC. z\nD. w"


@pytest.mark.parametrize(
    ("answer", "out", "compat", "default", "preds"),
    [
        ("B", "ANSWER: B", 1.0, 1.0, ("B", "B")),
        ("A, C", "Answer: A, C", 1.0, 1.0, ("A, C", "A, C")),
        # M3: letters inside words never count by default
        ("B", "The answer is B", 0.0, 1.0, ("A, B, E, H", "B")),
        ("D", "\\boxed{D}", 1.0, 1.0, ("D", "D")),
        ("C", "c", 1.0, 1.0, ("C", "C")),
        # M3: a textual gold gives no letters, and is never matched by default
        ("Cat", "ca", 1.0, 0.0, ("A, C", None)),
        ("B, D", "(b) and (d)", 0.0, 1.0, ("A, B, D", "B, D")),
        ("C", "(c) because", 0.0, 1.0, ("A, B, C, E", "C")),
    ],
)
def test_logicvista(answer, out, compat, default, preds):
    sample = row("logicvista", answer, question=LOGICVISTA_Q)
    upstream, fixed = check(sample, out, compat, default)
    assert (upstream.answer, fixed.answer) == preds
