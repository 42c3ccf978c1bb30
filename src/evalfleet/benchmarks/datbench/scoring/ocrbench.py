r"""OCRBench v2 (``ocrbench-v2``): the official per-task metrics, routed by metadata ``type``.

Upstream reads the raw output for structured tasks (KIE, parsing, grounding, spotting) and
``extract_final_answer(out)`` for the rest, then scores by task type:

- VQA: an answer of fewer than 5 words counts 1 when it is a substring of the lower-cased
  prediction; longer answers count their ANLS when it is at least 0.5; best answer wins.
  VQA-CS keeps case; CN-VQA also deletes spaces and calls "short" fewer than 4 comma parts.
- multiple choice (``eval == "multiple choice"``): the prediction's letters must equal the only
  answer (``Answer: (B)`` passes, ``B. letter`` does not).
- formula recognition: substring test with spaces removed (cn: ``\text{x}`` unwrapped first).
- text counting: substring test, or for ``eval == "regression"`` ``1 - |n - a|/a`` when above 0.5.
- KIE, document and chart parsing: field F1 between the predicted dict (JSON, Python literal, or
  ``key: value`` pairs) and ``literal_eval(answers[0])``, list values expanding to alternatives.
- table parsing: for questions mentioning HTML, PubTabNet TEDS with cell content; else VQA.
- text grounding, VQA with position: ``0.5 * content + 0.5 * IoU`` (integer box coordinates).
- full-page OCR (and handwritten extraction of 简答 questions): the mean of BLEU, METEOR, the
  token-set F-measure and ``1 - Lev/max(len)``, each failing component counting 0; Chinese text
  is tokenised with jieba. METEOR's synonym stage needs the WordNet corpus, which is never
  downloaded: it always runs against a stand-in that raises ``LookupError``, so METEOR counts 0
  whenever a predicted word has no exact or stem match in the reference (as upstream without
  WordNet), and the score does not depend on whether WordNet happens to be installed.

Upstream imports TEDS from a module that needs the ``distance`` package (not among its
dependencies); when that import fails every HTML table row scores 0. Here TEDS always runs.

Default mode changes:

- O1. Full-page OCR and handwritten-extraction rows read the raw output: upstream passes them
  through ``extract_final_answer``, which keeps only the last line of a transcription.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
import warnings
from typing import Any

from .base import ScoreDetails, ScorerInput, meta, or_none
from .extract import extract_final_answer
from .text import levenshtein

STRUCTURED_TASKS = frozenset({
    "key information extraction en", "key information mapping en",
    "key information extraction cn", "chart parsing en", "document parsing en",
    "document parsing cn", "table parsing en", "table parsing cn", "text grounding en",
    "VQA with position en", "text spotting en",
})  # fmt: skip
RAW_IN_DEFAULT = frozenset({
    "full-page OCR en", "full-page OCR cn", "handwritten answer extraction cn",
})  # fmt: skip
ENGLISH_QA = frozenset({
    "APP agent en", "ASCII art classification en", "reasoning VQA en", "science QA en",
    "text recognition en", "document classification en", "cognition VQA en", "diagram QA en",
    "fine-grained text recognition en",
})  # fmt: skip
CHINESE_QA = frozenset({"cognition VQA cn", "reasoning VQA cn"})
KIE_TASKS = frozenset({
    "key information extraction en", "key information mapping en",
    "key information extraction cn",
})  # fmt: skip
_CHINESE = re.compile(r"[\u4e00-\u9fa5]")
_TEXT_TAG = re.compile(r"\\text\{([^{}]*)\}")
_FENCE = re.compile(r"```(?:python|json)?\n(.*?)\n```", re.DOTALL | re.IGNORECASE)
_KEY_VALUE = re.compile(r"[\"']?([\w\s]+)[\"']?\s*[:=]\s*[\"']?([^\n,\"'{}]+)[\"']?")
_BOX4 = re.compile(r"[\(\[]\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*[\)\]]")


# --------------------------------------------------------------------------- text metrics


def vqa(predict: Any, answers: list, case_sensitive: bool = False, chinese: bool = False) -> float:
    """OCRBench's VQA score (see the module docstring)."""
    predict = str(predict)
    best = 0.0
    for answer in answers:
        if isinstance(answer, (int, float)):
            answer = str(answer)
        if not isinstance(answer, str):
            continue
        gold = answer if case_sensitive else answer.lower()
        pred = predict if case_sensitive else predict.lower()
        gold, pred = gold.strip().replace("\n", " "), pred.strip().replace("\n", " ")
        if chinese:
            gold, pred = gold.replace(" ", ""), pred.replace(" ", "")
        short = len(gold.split(",")) < 4 if chinese else len(gold.split()) < 5
        if short:
            if gold in pred:
                best = 1.0
        else:
            longest = max(len(pred), len(gold))
            value = 1.0 - (levenshtein(pred, gold) / longest if longest else 0.0)
            if value >= 0.5:
                best = max(best, value)
    return best


def _squash(text: str) -> str:
    return text.strip().replace("\n", " ").replace(" ", "")


def math_expression(predict: str, answers: list, chinese: bool) -> float:
    answers = [str(answer) for answer in answers]
    if chinese:
        if len(answers) == 1:
            answers = [_TEXT_TAG.sub(r"\1", answers[0])]
        predict = _TEXT_TAG.sub(r"\1", predict)
    return 1.0 if any(_squash(answer) in _squash(predict) for answer in answers) else 0.0


def counting(predict: str, answers: list, method: str) -> float:
    best = 0.0
    for answer in answers:
        if method == "regression":
            numbers = re.findall(r"\d+", predict)
            value = 0.0
            if numbers:
                try:
                    n, a = int(numbers[0]), int(answer)
                    if 0 < n < 2 * a:
                        closeness = 1 - abs(n - a) / a
                        value = closeness if closeness > 0.5 else 0.0
                except (TypeError, ValueError):
                    value = 0.0
        else:
            gold = str(answer).lower().strip().replace("\n", " ")
            value = 1.0 if gold in predict.lower().strip().replace("\n", " ") else 0.0
        best = max(best, value)
    return best


# --------------------------------------------------------------------------- KIE


def _dict_from_text(text: str) -> dict:
    match = _FENCE.search(text)
    content = match.group(1) if match else text.strip()
    for parse in (json.loads, ast.literal_eval):
        try:
            data = parse(content)
        except Exception:  # both parsers raise many types on model text
            continue
        if isinstance(data, dict):
            return data
    return {key.strip(): value.strip() for key, value in _KEY_VALUE.findall(content)}


def _kie_value(value: Any) -> Any:
    if value:
        return str(value).lower().strip().replace("\n", " ").replace(" ", "")
    return value


def _field_f1(pred: dict, gold: dict) -> float:
    tp = fp = fn = 0
    for key in set(pred) | set(gold):
        p, g = _kie_value(pred.get(key)), _kie_value(gold.get(key))
        if p is None and g is None:
            continue
        if p is None:
            fn += 1
        elif g is None:
            fp += 1
        elif p == g:
            tp += 1
        else:
            fp += 1
            fn += 1
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def kie_f1(predict: str, answers: list) -> float:
    if not answers:
        return 0.0
    pred = _dict_from_text(predict)
    try:
        gold = ast.literal_eval(answers[0]) if isinstance(answers[0], str) else answers[0]
        if not isinstance(gold, dict):
            return 0.0
        keys = list(gold)
        values = [gold[k] if isinstance(gold[k], list) else [gold[k]] for k in keys]
        combos = [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]
    except Exception:  # upstream scores any unreadable gold 0
        return 0.0
    return max((_field_f1(pred, combo) for combo in combos or [{}]), default=0.0)


# --------------------------------------------------------------------------- tables (TEDS)


class _Cell:
    """A node of the table tree APTED compares (tag, spans, cell tokens, children)."""

    def __init__(self, tag: str, colspan: int | None, rowspan: int | None, content: Any):
        self.tag, self.colspan, self.rowspan, self.content = tag, colspan, rowspan, content
        self.children: list[_Cell] = []


def _cell_tokens(node: Any, tokens: list[str]) -> None:
    tokens.append(f"<{node.tag}>")
    if node.text is not None:
        tokens.extend(node.text)
    for child in node.getchildren():
        _cell_tokens(child, tokens)
    if node.tag != "unk":
        tokens.append(f"</{node.tag}>")
    if node.tag != "td" and node.tail is not None:
        tokens.extend(node.tail)


def _table_tree(node: Any) -> _Cell:
    if node.tag == "td":
        tokens: list[str] = []
        _cell_tokens(node, tokens)
        colspan = int(node.attrib.get("colspan", "1"))
        rowspan = int(node.attrib.get("rowspan", "1"))
        return _Cell("td", colspan, rowspan, tokens[1:-1])
    cell = _Cell(node.tag, None, None, None)
    cell.children = [_table_tree(child) for child in node.getchildren()]
    return cell


def teds(pred_html: str, gold_html: str) -> float:
    """PubTabNet TEDS (structure and cell content) of two ``<html><body><table>`` strings."""
    from apted import APTED, Config
    from lxml import html

    class _Costs(Config):
        def rename(self, first: _Cell, second: _Cell) -> float:
            if (first.tag, first.colspan, first.rowspan) != (
                second.tag,
                second.colspan,
                second.rowspan,
            ):
                return 1.0
            if first.tag == "td" and (first.content or second.content):
                longest = max(len(first.content), len(second.content))
                return levenshtein(first.content, second.content) / longest
            return 0.0

    if not pred_html or not gold_html:
        return 0.0
    parser = html.HTMLParser(remove_comments=True, encoding="utf-8")
    pred = html.fromstring(pred_html, parser=parser)
    gold = html.fromstring(gold_html, parser=parser)
    if not (pred.xpath("body/table") and gold.xpath("body/table")):
        return 0.0
    pred, gold = pred.xpath("body/table")[0], gold.xpath("body/table")[0]
    nodes = max(len(pred.xpath(".//*")), len(gold.xpath(".//*")))
    distance = APTED(_table_tree(pred), _table_tree(gold), _Costs()).compute_edit_distance()
    return 1.0 - float(distance) / nodes


def _wrap_table(table: str) -> str:
    table = table.replace("\n", "")
    if "<table" in table and "</table>" not in table:
        table += "</table>"
    elif "<table" not in table and "</table>" in table:
        table = "<table>" + table
    elif "<table" not in table and "</table>" not in table:
        table = "<table>" + table + "</table>"
    if "<body>" not in table:
        table = "<body>" + table + "</body>"
    if "<html>" not in table:
        table = "<html>" + table + "</html>"
    return table


def table_parsing(predict: str, answers: list, question: str) -> float:
    if not answers or not isinstance(predict, str):
        return 0.0
    if "html" not in question.lower():
        return vqa(predict, answers)
    flat = predict.replace("\n", "")
    for marker in ("<body", "<table"):
        if marker in flat:
            flat = re.findall(f"{marker}.*", flat)[0]
            break
    else:
        return 0.0
    try:
        return max(0.0, min(1.0, teds(_wrap_table(flat), _wrap_table(str(answers[0])))))
    except Exception:  # upstream scores any TEDS failure 0
        return 0.0


# --------------------------------------------------------------------------- position tasks


def _box_iou(first: Any, second: Any) -> float:
    try:
        a = [int(v) for v in first]
        b = [int(v) for v in second]
        inter_w = max(0, min(a[2], b[2]) - max(a[0], b[0]))
        inter = inter_w * max(0, min(a[3], b[3]) - max(a[1], b[1]))
        union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    except (TypeError, ValueError, IndexError):
        return 0.0
    return inter / union if union != 0 else 0.0


def _last_distinct_box(text: str) -> list[int] | None:
    boxes: list[tuple[int, ...]] = []
    for match in _BOX4.finditer(text):
        box = tuple(int(v) for v in match.groups())
        if all(0 <= v <= 1000 for v in box) and box not in boxes:
            boxes.append(box)
    return list(boxes[-1]) if boxes else None


def _as_literal(text: str) -> Any:
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except Exception:  # model text; try the next parser
            continue
    return None


def vqa_with_position(predict: str, answers: list, bbox: Any) -> float:
    content = box = 0.0
    parsed = _as_literal(predict)
    if isinstance(parsed, dict) and "answer" in parsed:
        content = vqa(parsed["answer"], answers)
        if "bbox" in parsed and bbox:
            try:
                box = _box_iou(ast.literal_eval(str(parsed["bbox"])), bbox)
            except Exception:  # upstream scores an unreadable box 0
                box = 0.0
    else:
        coords = _last_distinct_box(predict)
        if coords and bbox:
            box = _box_iou(coords, bbox)
        content = vqa(predict, answers)
    return 0.5 * content + 0.5 * box


# --------------------------------------------------------------------------- full-page OCR


def full_page_ocr(predict: str, answers: list) -> float:
    if not answers:
        return 0.0
    gold = str(answers[0]).strip()
    pred = predict.strip()
    try:
        if _CHINESE.search(gold) or _CHINESE.search(pred):
            reference, hypothesis = _jieba_tokens(gold), _jieba_tokens(pred)
        else:
            reference, hypothesis = gold.split(), pred.split()
        bleu, meteor, f_measure = _nltk_scores(reference, hypothesis)
        longest = max(len(pred), len(gold))
        edit = levenshtein(pred, gold) / longest if longest else 0.0
        return max(0.0, min(1.0, (bleu + meteor + f_measure + 1.0 - edit) / 4.0))
    except Exception:  # upstream falls back to thresholded ANLS on any failure
        longest = max(len(pred), len(gold))
        if longest == 0:
            return 1.0
        value = 1.0 - levenshtein(pred, gold) / longest
        return value if value >= 0.5 else 0.0


def _jieba_tokens(text: str) -> list[str]:
    try:
        import logging

        import jieba

        jieba.setLogLevel(logging.WARNING)
        return jieba.lcut(text)
    except Exception:  # upstream falls back to characters
        return list(text)


class _NoWordNet:
    """Stands in for the WordNet corpus, which is not installed: METEOR's synonym stage fails."""

    def synsets(self, *args: Any, **kwargs: Any) -> Any:
        raise LookupError("WordNet is not available")


def _nltk_scores(reference: list[str], hypothesis: list[str]) -> tuple[float, float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from nltk.translate.bleu_score import sentence_bleu

            bleu = float(sentence_bleu([reference], hypothesis))
        except Exception:  # a failing component counts 0
            bleu = 0.0
        try:
            from nltk.translate.meteor_score import meteor_score

            meteor = float(meteor_score([reference], hypothesis, wordnet=_NoWordNet()))
        except Exception:  # the synonym stage needs WordNet; a failing component counts 0
            meteor = 0.0
        try:
            from nltk.metrics import f_measure

            ref_set, hyp_set = set(reference), set(hypothesis)
            value = f_measure(ref_set, hyp_set) if ref_set or hyp_set else 0.0
            f_score = float(value) if value is not None else 0.0
        except Exception:  # a failing component counts 0
            f_score = 0.0
    return bleu, meteor, f_score


# --------------------------------------------------------------------------- routing


def _multiple_choice(predict: Any, answers: list) -> float:
    if not isinstance(predict, str):
        return 0.0
    letters = "".join(char for char in predict if char.isalpha())
    return 1.0 if len(answers) == 1 and letters == answers[0] else 0.0


def _route(task: str, method: Any, pred: str, answers: list, sample: ScorerInput) -> tuple:
    question = sample.question or ""
    if task in ENGLISH_QA or task in CHINESE_QA:
        if method == "multiple choice":
            return _multiple_choice(pred, answers), "multiple_choice"
        if method == "case sensitive":
            return vqa(pred, answers, case_sensitive=True), "vqa_case_sensitive"
        if task in CHINESE_QA:
            return vqa(pred, answers, chinese=True), "cn_vqa"
        return vqa(pred, answers), "vqa"
    if task == "formula recognition en":
        return math_expression(pred, answers, chinese=False), "math_expression"
    if task == "formula recognition cn":
        return math_expression(pred, answers, chinese=True), "cn_math_expression"
    if task == "math QA en":
        if method == "multiple choice":
            return _multiple_choice(pred, answers), "multiple_choice"
        return vqa(pred, answers), "vqa"
    if task == "text counting en":
        return counting(pred, answers, method or "exact match"), "counting"
    if task in KIE_TASKS:
        return kie_f1(pred, answers), "kie_f1"
    if task in ("table parsing en", "table parsing cn"):
        return table_parsing(pred, answers, question), "teds"
    if task in ("document parsing en", "document parsing cn"):
        return kie_f1(pred, answers), "doc_parsing_f1"
    if task == "chart parsing en":
        return kie_f1(pred, answers), "chart_parsing_f1"
    if task in ("text grounding en", "VQA with position en"):
        return vqa_with_position(pred, answers, meta(sample, "bbox")), "vqa_with_position"
    if task == "text spotting en":
        return vqa(pred, answers), "text_spotting"
    if task in ("full-page OCR en", "full-page OCR cn"):
        return full_page_ocr(pred, answers), "full_page_ocr"
    if task == "handwritten answer extraction cn":
        if "简答" in question:
            return full_page_ocr(pred, answers), "handwritten_extraction"
        return vqa(pred, answers, chinese=True), "handwritten_extraction"
    if task == "text translation cn":
        return vqa(pred, answers, chinese=True), "cn_vqa"
    return vqa(pred, answers), "vqa_fallback"


def score_ocrbench(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    task = meta(sample, "type", "") or ""
    method = meta(sample, "eval")
    answers = list(sample.all_answers or [])
    raw = task in STRUCTURED_TASKS or (not compat and task in RAW_IN_DEFAULT)
    pred = out if raw else extract_final_answer(out, compat)
    value, scoring_method = _route(task, method, pred, answers, sample)
    details = {
        "task_type": task,
        "dataset_name": "",
        "scoring_method": scoring_method,
        "ground_truth": answers,
        "pred_answer": pred,
    }
    return ScoreDetails(float(value), or_none(pred), details)
