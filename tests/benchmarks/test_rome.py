"""ROME: every evaluator example of reference §2.4 in both modes (and where they differ), the
judge prompt and its parses, loading checks, prompts, and upstream's example files byte for
byte through `evalfleet score rome`."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

import pytest

from evalfleet.benchmarks.rome import ROME, correct_answer
from evalfleet.benchmarks.rome import dataset as rome_data
from evalfleet.benchmarks.rome.judge import (
    PROMPT,
    PROMPT_SHA256,
    grader_prompt,
    parse_robust,
    parse_upstream,
)
from evalfleet.benchmarks.rome.offline import read_predictions
from evalfleet.benchmarks.rome.scoring import score_annotation
from evalfleet.cli.main import main
from evalfleet.core.types import DatasetError

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "rome_example"  # see its SOURCE.md


def item(evaluator: str, **kwargs) -> dict:
    return {
        "question_id": "q",
        "question": "What?",
        "reference": "x",
        "evaluator": evaluator,
        "evaluator_kwargs": kwargs,
        "task": "t",
    }


def score(evaluator: str, answer: str, mode: str = "upstream", **kwargs):
    return score_annotation(item(evaluator, **kwargs), answer, mode).value


# (evaluator, raw answer, kwargs, score) — reference §2.4, the same in both modes
SAME = [
    ("number_matching", "Final Answer: 3.0", {"value_to_match": 3}, 1),
    ("number_matching", "Final Answer: 0", {"value_to_match": 0}, 1),
    ("number_matching", "The answer is \\boxed{12}", {"value_to_match": 12}, 1),
    ("number_matching", "Final Answer: 12 cars", {"value_to_match": 12}, 1),
    ("number_matching", "Final Answer: -4", {"value_to_match": -4.0}, 1),
    ("number_matching", "Final Answer: \u22125", {"value_to_match": -5}, 1),
    ("number_matching", "Final Answer: 50%", {"value_to_match": 50}, 1),
    ("number_matching", "Final Answer: 3 (units 2)", {"value_to_match": 3}, 0),
    ("number_matching", "Final Answer: 901", {"value_to_match": 1000.0}, 1),
    ("number_matching", "Final Answer: 2.74", {"value_to_match": 2.5}, 1),
    ("choices_matching", "Final Answer: C, A", {"label": "AC"}, 1),
    ("choices_matching", "Final Answer: C, A, C", {"label": "AC"}, 1),
    ("choices_matching", "Final Answer: A, C", {"label": "A"}, 1),
    ("choices_matching", "Final Answer: (B) Paris", {"label": "B"}, 1),
    ("choices_matching", "Final Answer: B. Paris", {"label": "B"}, 1),
    ("choices_matching", "Final Answer: **B**", {"label": "B"}, 1),
    ("choices_matching", "Final Answer: B.", {"label": "B"}, 1),
    ("choices_matching", "Final Answer: The answer is B", {"label": "B"}, 1),
    ("choices_matching", "Final Answer: \\boxed{C}", {"label": "C"}, 1),
    ("choices_matching", "Final Answer: E. If both", {"label": "E"}, 1),
    ("choices_matching", "Final Answer: D", {"label": "d"}, 1),
    ("choices_matching", "最终答案：B", {"label": "B"}, 1),
    ("ordered_list_matching", "Final Answer: C, D, A, B", {"order": ["C", "D", "A", "B"]}, 1),
    ("ordered_list_matching", "Final Answer: C,D,A,B", {"order": ["C", "D", "A", "B"]}, 1),
    ("ordered_list_matching", "Final Answer: c, d, a, b", {"order": "C, D, A, B"}, 1),
    ("ordered_list_matching", "Final Answer: C, D, B, A", {"order": ["C", "D", "A", "B"]}, 0),
    ("ordered_list_matching", "Final Answer: C; D; A; B", {"order": ["C", "D", "A", "B"]}, 0),
    ("ordered_list_matching", "Final Answer: Paris, New York", {"order": ["Paris", "New York"]}, 1),
    (
        "key_items_matching",
        "Final Answer: monterrey, seattlesounders",
        {"key_items": [["Monterrey"], ["Seattle Sounders"]], "remove_space": True},
        1,
    ),
    (
        "key_items_matching",
        "Final Answer: monterrey, seattlesounders",
        {"key_items": [["Monterrey"], ["Seattle Sounders"]]},
        0,
    ),
    ("key_items_matching", "Final Answer: Monterrey", {"key_items": ["Monterrey", "Seattle"]}, 1),
    (
        "key_items_matching",
        "Final Answer: Monterrey",
        {"key_items": [["Monterrey"], ["Seattle Sounders"]]},
        0,
    ),
    ("key_items_matching", "Final Answer: 13", {"key_items": [["3"]]}, 1),
    (
        "key_items_matching",
        "Final Answer: CF Monterrey & Sounders FC",
        {"key_items": [["Monterrey"], ["Seattle Sounders", "Sounders"]]},
        1,
    ),
    (
        "location_matching",
        "Final Answer: Tokyo DisneySea, Japan",
        {"location_fine_grained": ["Tokyo Disney"], "location_coarse_grained": ["Tokyo"]},
        1.0,
    ),
    (
        "location_matching",
        "Final Answer: Tokyo, Japan",
        {"location_fine_grained": ["Tokyo Disney"], "location_coarse_grained": ["Tokyo"]},
        0.5,
    ),
    (
        "location_matching",
        "Final Answer: Osaka",
        {"location_fine_grained": ["Tokyo Disney"], "location_coarse_grained": ["Tokyo"]},
        0,
    ),
    (
        "location_matching",
        "Final Answer: somewhere in Tokyo",
        {
            "location_fine_grained": ["Tokyo Disney"],
            "location_coarse_grained": ["Tokyo"],
            "coarse_grained_score": 0.25,
        },
        0.25,
    ),
    (
        "location_matching",
        "I believe the answer is Paris",
        {"location_fine_grained": ["Paris"]},
        1.0,
    ),  # noqa: E501
    ("location_matching", "答案：巴黎", {"location_fine_grained": ["巴黎"]}, 1.0),
    (
        "interval_matching",
        "Final Answer: 0:45 minutes",
        {"interval": ["0:30", "1:00"], "units": ["minutes"]},
        1,
    ),
    (
        "interval_matching",
        "Final Answer: about 15",
        {"interval": [10, 20], "units": []},
        1,
    ),
    ("interval_matching", "Final Answer: 25 kg", {"interval": [10, 20], "units": ["kg"]}, 0),
    ("interval_matching", "Final Answer: 15 lb", {"interval": [10, 20], "units": ["kg"]}, 0),
    (
        "multi_interval_matching",
        "Final Answer: 150 cm",
        {"intervals": [[1, 2], [140, 160]], "units": [["m"], ["cm"]]},
        1,
    ),
]


@pytest.mark.parametrize("mode", ["upstream", "fixed"])
@pytest.mark.parametrize(("evaluator", "answer", "kwargs", "expected"), SAME)
def test_reference_examples(evaluator, answer, kwargs, expected, mode):
    value = score(evaluator, answer, mode, **kwargs)
    assert value == expected and type(value) is type(expected)


# (evaluator, raw answer, kwargs, upstream score, fixed score): the quirks the fixed mode fixes
DIFFER = [
    ("number_matching", "There are 4 cats. \\boxed{5} and \\boxed{6}", {"value_to_match": 5}, 1, 0),
    ("choices_matching", "Final Answer: I", {"label": "I"}, 0, 1),
    ("choices_matching", "Final Answer: A, T", {"label": "AT"}, 0, 1),
    ("key_items_matching", "\\boxed{\\frac{1}{2}}", {"key_items": [["\\frac{1}{2}"]]}, 0, 1),
    ("number_matching", "Final Answer: 1,000", {"value_to_match": 1000}, 0, 1),
    ("number_matching", "Final Answer: 0", {"value_to_match": 0.0}, 0, 1),
    ("number_matching", "Final Answer: 2.75", {"value_to_match": 2.5}, 0, 1),
    ("number_matching", "Final Answer: 1e3", {"value_to_match": 1000}, 0, 1),
    (
        "location_matching",
        "Paris, where I Answered the call",
        {"location_fine_grained": ["Paris"]},
        0,
        1.0,
    ),
]


@pytest.mark.parametrize(("evaluator", "answer", "kwargs", "upstream", "fixed"), DIFFER)
def test_fixed_mode_corrects_the_quirks(evaluator, answer, kwargs, upstream, fixed):
    assert score(evaluator, answer, "upstream", **kwargs) == upstream
    assert score(evaluator, answer, "fixed", **kwargs) == fixed


def test_choice_answers_are_rewritten_to_letters_and_intervals_note_what_matched():
    choices = score_annotation(
        item("choices_matching", label="B"), "Final Answer: (B) Paris", "upstream"
    )
    assert (choices.answer, choices.value) == ("B", 1)
    multi = score_annotation(
        item("choices_matching", label="AC"), "Final Answer: C, A, C", "upstream"
    )
    assert multi.answer == "AC"
    interval = score_annotation(
        item("interval_matching", interval=["0:30", "1:00"], units=["minutes"]),
        "Final Answer: 0:45 minutes",
        "upstream",
    )
    assert interval.extra == {"number_correct": 1, "unit_correct": 1}


def test_judge_prompt_is_upstreams_byte_for_byte():
    data = PROMPT.encode("utf-8")
    assert len(PROMPT) == 4528
    assert hashlib.sha256(data).hexdigest() == PROMPT_SHA256
    assert PROMPT_SHA256 == "2ff1eab0483ced07b1da036617798030f62bdb3e549bde611235104c7ae3cebd"
    assert PROMPT[1373] == "\f" and PROMPT[1374:1381] == "rac{{18"
    filled = grader_prompt("Which? {{answer}}", "D", "Final Answer: A")
    # str.replace in upstream's order: a placeholder in the question is filled too
    assert filled.endswith(
        "[Question]: Which? D\n[Ground Truth]: D\n[Model Response] : Final Answer: A\n"
    )


@pytest.mark.parametrize(
    ("reply", "upstream", "robust"),
    [
        ("Reasoning: same.\n\nJudgement: 1", 1, 1),
        ("Reasoning: differs.\n\nJudgement: 0", 0, 0),
        ("1. Reasoning: the value is 0 here.\nJudgement: 0", 1, 0),  # upstream: first number
        ("Judgement: 1\n\nOn reflection the answer is 0 apples.", 0, 1),
        ("I cannot decide.", 0, None),
        ("Reasoning: ok.\n\nJudgement: 0.9", 1, None),
    ],
)
def test_verdict_parses(reply, upstream, robust):
    assert parse_upstream(reply) == upstream
    assert parse_robust(reply) == robust


def test_load_checks_evaluators_and_their_arguments(tmp_path, caplog):
    def load(items):
        path = tmp_path / "test.json"
        path.write_text(json.dumps(items))
        return rome_data.load(tmp_path, "test.json", None, None)

    with pytest.raises(DatasetError, match="^ROME question 'q': unknown evaluator 'fuzzy'"):
        load([item("fuzzy")])
    with pytest.raises(
        DatasetError,
        match="^ROME question 'q': evaluator_kwargs.value_to_match must be a number, not '3'$",
    ):
        load([item("number_matching", value_to_match="3")])
    with pytest.raises(
        DatasetError, match="evaluator_kwargs.tolerance is not an argument of number_matching"
    ):
        load([item("number_matching", value_to_match=3, tolerance=1)])
    with pytest.raises(DatasetError, match="evaluator_kwargs.interval must be two numbers"):
        load([item("interval_matching", interval=[1], units=[])])
    with caplog.at_level(logging.WARNING, logger="evalfleet.benchmarks.rome.dataset"):
        samples = load(
            [
                item("choices_matching", label="B"),
                {**item("choices_matching", label="AI"), "question_id": "q2"},
            ]
        )
    assert [s.id for s in samples] == ["q", "q2"]
    assert "label with I, N, S or T" in caplog.text and "q2" in caplog.text


def test_prompts_in_english_and_chinese_with_several_images(tmp_path):
    from PIL import Image

    for name, colour in (("a.png", "red"), ("b.png", "blue")):
        Image.new("RGB", (8, 8), colour).save(tmp_path / name)
    zh = {
        **item("number_matching", value_to_match=3),
        "question": "图中有几只猫？",
        "img_path": ["a.png", "b.png"],
    }
    sample = rome_data.to_sample(zh, tmp_path)
    assert sample.parts[0].text == (
        "<image 1> 图中有几只猫？\n**请以以下格式结束回答：** `最终答案：`, 后跟一个数字。\n"
        "**格式示例：** `最终答案：123`"
    )
    assert [p.kind for p in sample.parts] == ["text", "image", "image"]
    assert [p.data for p in sample.parts[1:]] == [
        (tmp_path / "a.png").read_bytes(),
        (tmp_path / "b.png").read_bytes(),
    ]
    words = {**item("ordered_list_matching", order=["Paris", "Rome"]), "img_path": "a.png"}
    assert rome_data.to_sample(words, tmp_path).parts[0].text == (
        "<image 1> What?\n**Finalize your output with:** `Final Answer:`, followed by a string "
        "representing the correct answer."
    )
    keys = {**item("key_items_matching", key_items=["x"]), "question": "<image 1> Who?"}
    assert rome_data.prompt_text(keys) == "<image 1> Who?"  # no post-prompt, no second prefix


def test_upstream_prompts_are_reproduced():
    annotations = {
        a["question_id"]: a for a in json.loads((EXAMPLE / "annotation.json").read_text())
    }
    for prediction in json.loads((EXAMPLE / "predictions.json").read_text()):
        assert (
            rome_data.prompt_text(annotations[prediction["question_id"]]) == prediction["question"]
        )


def test_score_command_reproduces_upstreams_files(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(
        [
            "score", "rome", "--annotations", str(EXAMPLE / "annotation.json"),
            "--predictions", str(EXAMPLE / "predictions.json"), "--output", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    assert (out / "scores.json").read_bytes() == (EXAMPLE / "scores.json").read_bytes()
    assert (out / "updated_predictions.json").read_bytes() == (
        EXAMPLE / "updated_predictions.json"
    ).read_bytes()
    scores = json.loads((out / "scores.json").read_text())
    assert scores["final_score"] == [2.0, 5] and scores["accuracy"] == 40.0
    answers = [p["answer"] for p in json.loads((out / "updated_predictions.json").read_text())]
    assert answers[1:] == ["A", "A, B, D, C**", "3", "Tokyo DisneySea, Japan"]
    assert "final_score [2.0, 5], accuracy 40.0" in capsys.readouterr().out


def test_predictions_in_every_upstream_shape(tmp_path):
    predictions = json.loads((EXAMPLE / "predictions.json").read_text())
    shapes = {
        "array.json": json.dumps(predictions),
        "lines.jsonl": "\n".join(json.dumps(p) for p in predictions),
        "keyed.json": json.dumps(
            {
                p["question_id"]: {k: v for k, v in p.items() if k != "question_id"}
                for p in predictions
            }
        ),
        # pretty-printed: upstream's sniffing reads it as JSON lines and fails
        "single.json": json.dumps(predictions[3], indent=2),
    }
    for name, text in shapes.items():
        (tmp_path / name).write_text(text)
        got = read_predictions(tmp_path / name)
        expected = predictions[3:4] if name == "single.json" else predictions
        assert [(p["question_id"], p["answer"]) for p in got] == [
            (p["question_id"], p["answer"]) for p in expected
        ]
    shutil.copy(EXAMPLE / "annotation.json", tmp_path / "annotation.json")
    assert (
        main(
            [
                "score",
                "rome",
                "--annotations",
                str(tmp_path / "annotation.json"),
                "--predictions",
                str(tmp_path / "keyed.json"),
            ]
        )
        == 0
    )
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["final_score"] == [2.0, 5]


def test_unknown_prediction_id_is_one_line(tmp_path, capsys):
    (tmp_path / "p.json").write_text(json.dumps([{"question_id": "nope", "answer": "A"}]))
    code = main(
        [
            "score",
            "rome",
            "--annotations",
            str(EXAMPLE / "annotation.json"),
            "--predictions",
            str(tmp_path / "p.json"),
        ]
    )
    assert code == 2
    assert capsys.readouterr().err == (
        "error: prediction question_id nope is not in the annotations: score them against the "
        "annotations they were made for\n"
    )


def test_simulator_answers_are_right_for_every_evaluator():
    for evaluator, _, kwargs, _ in SAME:
        annotation = item(evaluator, **kwargs)
        answer = "Final Answer: " + correct_answer(annotation)
        if evaluator in ("key_items_matching",) and not kwargs.get("remove_space", True):
            continue
        assert score_annotation(annotation, answer, "upstream").value >= 1, (evaluator, kwargs)


def test_rome_is_registered_with_its_options():
    options = ROME.options({"judge_tasks": ["diagrams", "geo"], "tasks": ["geo"]})
    assert options.judge_tasks == ["diagrams", "geo"] and options.annotations == "test.json"
    assert (ROME.protocol, ROME.epochs, ROME.scorings) == ("sampled-k", 4, ("upstream", "fixed"))


def score_rome(tmp_path, predictions: str, annotations: Path | None = None) -> int:
    path = tmp_path / "predictions.json"
    path.write_text(predictions)
    return main(
        ["score", "rome", "--annotations", str(annotations or EXAMPLE / "annotation.json"),
         "--predictions", str(path), "--output", str(tmp_path / "out")]
    )  # fmt: skip


def example_predictions() -> list[dict]:
    return json.loads((EXAMPLE / "predictions.json").read_text())


@pytest.mark.parametrize("shape", ["array", "lines"])
def test_a_second_prediction_for_a_question_is_refused_naming_it(shape, tmp_path, capsys):
    """Counted twice before: final_score [4.0, 10] for the example given twice."""
    predictions = example_predictions()
    twice = predictions + predictions[3:5]
    text = json.dumps(twice) if shape == "array" else "\n".join(json.dumps(p) for p in twice)
    assert score_rome(tmp_path, text) == 2
    at = {
        "array": ("item 4, item 6", "item 5, item 7"),
        "lines": ("line 4, line 6", "line 5, line 7"),
    }
    assert capsys.readouterr().err == (
        f"error: predictions {tmp_path / 'predictions.json'}: more than one prediction for "
        f"question_id question_recognition_18 ({at[shape][0]}); question_geo_20 "
        f"({at[shape][1]}): keep one prediction per question (upstream would count each)\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_question_id_repeated_as_a_key_is_refused(tmp_path, capsys):
    first = example_predictions()[0]
    body = json.dumps({k: v for k, v in first.items() if k != "question_id"})
    qid = first["question_id"]
    assert score_rome(tmp_path, f'{{"{qid}": {body}, "{qid}": {body}}}') == 2
    assert capsys.readouterr().err == (
        f"error: predictions {tmp_path / 'predictions.json'}: question_id {qid} given more than "
        "once: keep one prediction per question (upstream would keep the last)\n"
    )


def test_annotations_without_a_prediction_are_reported_and_left_out_as_upstream_does(
    tmp_path, capsys
):
    predictions = example_predictions()
    assert score_rome(tmp_path, json.dumps([predictions[i] for i in (3, 4, 0)])) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == (
        "2 of 5 annotated questions have no prediction (first: question_academic_42, "
        "question_multi_1): as upstream, the score is over the 3 predictions only; they count "
        "neither as wrong nor in the total"
    )
    scores = json.loads((tmp_path / "out" / "scores.json").read_text())
    # recognition 1 + geo 1.0 + diagrams 0, over the three predictions (upstream's rule)
    assert (scores["final_score"], scores["accuracy"]) == ([2.0, 3], 66.667)


def test_a_malformed_line_is_named_by_its_number(tmp_path, capsys):
    lines = [json.dumps(p) for p in example_predictions()]
    lines[2] = lines[2][:40]  # cut short
    assert score_rome(tmp_path, "\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:])) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"error: {tmp_path / 'predictions.json'} line 4: not valid JSON (Unterminated string "
        "starting at, column "
    )
    assert err.endswith("): each line of a JSON lines file is one whole JSON object\n")
    text = json.dumps(example_predictions(), indent=2).replace('"answer"', "answer", 1)
    assert score_rome(tmp_path, text) == 2
    line = next(n for n, t in enumerate(text.splitlines(), 1) if t.strip().startswith("answer"))
    assert capsys.readouterr().err == (
        f"error: {tmp_path / 'predictions.json'} line {line}, column 5: not valid JSON "
        "(Expecting property name enclosed in double quotes): fix it there, or give JSON lines "
        "(one object per line)\n"
    )


def test_wrong_field_names_are_named_with_the_expected_ones(tmp_path, capsys):
    renamed = [{"id": p["question_id"], "response": p["answer"]} for p in example_predictions()]
    assert score_rome(tmp_path, "\n".join(json.dumps(p) for p in renamed)) == 2
    assert capsys.readouterr().err == (
        f"error: predictions {tmp_path / 'predictions.json'} line 1: no question_id or answer: "
        "a prediction has the fields question_id and answer (this one has id, response)\n"
    )
    annotations = json.loads((EXAMPLE / "annotation.json").read_text())
    annotations[0]["kwargs"] = annotations[0].pop("evaluator_kwargs")
    (tmp_path / "annotation.json").write_text(json.dumps(annotations))
    assert (
        score_rome(tmp_path, json.dumps(example_predictions()), tmp_path / "annotation.json") == 2
    )
    fields = ", ".join(annotations[0])
    assert capsys.readouterr().err == (
        "error: ROME question 'question_diagrams_2' has no evaluator_kwargs: an annotation has "
        "the fields question_id, question, reference, evaluator, evaluator_kwargs (this one "
        f"has {fields}): {rome_data.FIX}\n"
    )
