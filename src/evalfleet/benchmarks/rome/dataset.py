"""ROME data (BAAI/ROME): JSON annotations under `data/` with the images beside them, read
from a Hub snapshot at the commit `REVISION` resolves to (recorded as its sha), or from a
local copy with the same layout.

Each annotation is checked at load: a known evaluator, and `evaluator_kwargs` of the types the
evaluator takes; a problem is one line naming the question and the field. What departs from
those types but upstream's evaluator still scores (`UPSTREAM_SCORES`: a label such as "A,C",
which its comparison of sorted letters scores 0; units as plain strings where lists of strings
are documented, which it reads letter by letter) is scored as upstream scores it and named in
one warning; only what upstream cannot score is refused. Choice labels with the letters I, N,
S or T are warned about: upstream's letter reading deletes those capitals, so its `upstream`
mode can never score them (the `fixed` mode can).

The prompt is built as FlagEvalMM builds it (reference §2.2): options appended as ``\\nA. …``,
``<image 1> `` put in front when the question has images and does not mention the first, then
the English or Chinese post-prompt of the evaluator; text first, then the images in order.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalfleet.benchmarks import hub
from evalfleet.benchmarks.media import sniff_media_type
from evalfleet.benchmarks.rome.files import read_json_file
from evalfleet.core.types import DatasetError, Part, Sample

log = logging.getLogger(__name__)

HF_PATH = "BAAI/ROME"
# Not pinned: no public commit sha of BAAI/ROME could be confirmed, so the branch "main" is
# read. A Hub snapshot resolves it to the commit sha it reads (`hub.resolve_revision`) and the
# manifest records that sha; a local copy is recorded by its content fingerprint instead.
REVISION = "main"
FIX = "pass a copy of BAAI/ROME: data/<annotations>.json with the images beside it"

EN_BASE = "**Finalize your output with:** `Final Answer:`, "
EN_POST = {
    "choices_matching": "followed by a letter or a comma-separated list of letters which means "
    "the option of correct answer.\n**Format example:** `Final Answer: A`",
    "ordered_list_matching": "followed by a comma-separated list.\n**Format example:** "
    "`Final Answer: A, B, C, D, E`",
    "number_matching": "followed by a number.\n**Format example:** `Final Answer: 123`",
}
EN_OTHER = "followed by a string representing the correct answer."
ZH_BASE = "**请以以下格式结束回答：** `最终答案：`, "
ZH_POST = {
    "choices_matching": "后跟一个或多个用逗号分隔的表示正确答案选项的字母。"
    "\n**格式示例：** `最终答案：A`",
    "ordered_list_matching": "后跟一个用逗号分隔的列表。\n**格式示例：** `最终答案：A, B, C, D, E`",
    "number_matching": "后跟一个数字。\n**格式示例：** `最终答案：123`",
}
ZH_OTHER = "后跟一个表示正确答案的字符串。"

ANNOTATION_FIELDS = ("question_id", "question", "reference", "evaluator", "evaluator_kwargs")
STR_LIST = "a list of strings"
KWARGS: dict[str, dict[str, tuple[str, bool]]] = {
    # evaluator -> argument -> (expected type, required)
    "key_items_matching": {"key_items": ("key_items", True), "remove_space": ("bool", False)},
    "choices_matching": {"label": ("letters", True)},
    "ordered_list_matching": {"order": ("order", True)},
    "number_matching": {"value_to_match": ("number", True)},
    "location_matching": {
        "location_fine_grained": ("str_list", True),
        "location_coarse_grained": ("str_list", False),
        "fine_grained_score": ("number", False),
        "coarse_grained_score": ("number", False),
    },
    "interval_matching": {"interval": ("interval", True), "units": ("str_list", True)},
    "multi_interval_matching": {"intervals": ("intervals", True), "units": ("units_lists", True)},
}
_TYPE_WORDS = {
    "key_items": "a non-empty list of strings, or of lists of strings",
    "bool": "true or false",
    "letters": 'a string of capital letters such as "B" or "AC"',
    "order": "a list of strings or one string",
    "number": "a number",
    "str_list": STR_LIST,
    "interval": 'two numbers, or two times "H:MM[:SS]"',
    "intervals": "a list of intervals (each two numbers or two times)",
    "units_lists": "a list of lists of strings",
}


# (evaluator, argument) -> the looser type upstream's evaluator still scores, and the words
UPSTREAM_SCORES: dict[tuple[str, str], tuple[str, str]] = {
    ("choices_matching", "label"): ("str", "any string (upstream compares its sorted letters)"),
    ("multi_interval_matching", "units"): ("str_list", "a list of strings (read letter by letter)"),
}


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_interval(value: Any) -> bool:
    if not isinstance(value, list) or len(value) != 2:
        return False
    if all(isinstance(v, str) for v in value):
        return all(all(p.isdigit() for p in v.split(":")) and v.count(":") <= 2 for v in value)
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "key_items":
        return (
            isinstance(value, list)
            and bool(value)
            and (_is_str_list(value) or all(_is_str_list(v) for v in value))
        )
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "letters":
        return isinstance(value, str) and value.isascii() and value.isalpha()
    if kind == "order":
        return isinstance(value, str) or _is_str_list(value)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "str_list":
        return _is_str_list(value)
    if kind == "interval":
        return _is_interval(value)
    if kind == "intervals":
        return isinstance(value, list) and all(_is_interval(v) for v in value)
    if kind == "units_lists":
        return isinstance(value, list) and all(_is_str_list(v) for v in value)
    raise AssertionError(kind)


def check_item(item: dict[str, Any]) -> list[str]:
    """One line naming the question and the field for an unusable annotation (DatasetError);
    returned, the arguments upstream scores though they depart from the documented types
    (`UPSTREAM_SCORES`), each as "question (argument value)"."""
    qid = item.get("question_id")
    where = f"ROME question {qid!r}"
    missing = [name for name in ANNOTATION_FIELDS if name not in item]
    if missing:
        who = where if "question_id" not in missing else "a ROME annotation"
        has = ", ".join(map(str, item)) or "no field"
        raise DatasetError(
            f"{who} has no {' or '.join(missing)}: an annotation has the fields "
            f"{', '.join(ANNOTATION_FIELDS)} (this one has {has}): {FIX}"
        )
    if not isinstance(qid, str | int) or qid == "":
        raise DatasetError(f"a ROME annotation has no question_id: {FIX}")
    evaluator = item.get("evaluator")
    if evaluator not in KWARGS:
        raise DatasetError(
            f"{where}: unknown evaluator {evaluator!r}: use one of {', '.join(KWARGS)}"
        )
    kwargs = item.get("evaluator_kwargs")
    if not isinstance(kwargs, dict):
        raise DatasetError(f"{where}: evaluator_kwargs must be an object, not {kwargs!r}")
    spec = KWARGS[evaluator]
    for name in kwargs:
        if name not in spec:
            raise DatasetError(
                f"{where}: evaluator_kwargs.{name} is not an argument of {evaluator} "
                f"(it takes {', '.join(spec)})"
            )
    departs = []
    for name, (kind, required) in spec.items():
        if name not in kwargs:
            if required:
                raise DatasetError(f"{where}: evaluator_kwargs.{name} is missing for {evaluator}")
            continue
        looser = UPSTREAM_SCORES.get((evaluator, name))
        if not _type_ok(kind, kwargs[name]) and looser and _type_ok(looser[0], kwargs[name]):
            departs.append(f"{qid} ({name} {kwargs[name]!r})")
        elif not _type_ok(kind, kwargs[name]):
            raise DatasetError(
                f"{where}: evaluator_kwargs.{name} must be {_TYPE_WORDS[kind]}, "
                f"not {kwargs[name]!r}"
            )
    if not isinstance(item.get("question"), str):
        raise DatasetError(f"{where}: question must be a string")
    if "reference" not in item:
        raise DatasetError(f"{where}: reference is missing")
    if item["reference"] is None:  # json.dumps(None) would grade answers against "null"
        raise DatasetError(f"{where}: reference is null: fill it or drop the question")
    return departs


def is_chinese(text: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in text)


def post_prompt(question: str, evaluator: str, kwargs: dict[str, Any]) -> str:
    if evaluator == "key_items_matching":
        return ""
    if is_chinese(question):
        return ZH_BASE + ZH_POST.get(evaluator, ZH_OTHER)
    if evaluator == "ordered_list_matching" and not all(len(i) == 1 for i in kwargs["order"]):
        return EN_BASE + EN_OTHER
    return EN_BASE + EN_POST.get(evaluator, EN_OTHER)


def image_paths(item: dict[str, Any]) -> list[str]:
    paths = item.get("img_path") or []
    return [paths] if isinstance(paths, str) else list(paths)


def prompt_text(item: dict[str, Any]) -> str:
    """The text part as FlagEvalMM builds it (reproduces ROME's predictions.json)."""
    question = item["question"]
    for i, option in enumerate(item.get("options") or []):
        question += f"\n{chr(ord('A') + i)}. {option}"
    if image_paths(item) and "<image 1>" not in question:
        question = "<image 1> " + question
    post = post_prompt(question, item["evaluator"], item["evaluator_kwargs"])
    return f"{question}\n{post}".strip()


def annotation_items(data: Any, source: str) -> list[dict[str, Any]]:
    if isinstance(data, dict) and "question_id" not in data:
        data = [{"question_id": k, **v} if isinstance(v, dict) else v for k, v in data.items()]
    elif isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(i, dict) for i in data):
        raise DatasetError(f"{source} must hold a list of annotation objects: {FIX}")
    return data


def annotations_file(root: Path, name: str) -> Path:
    """`<root>/data/<name>`, `<root>/<name>`, or the root itself when it is the file."""
    if root.is_file():
        return root
    for candidate in (root / "data" / name, root / name):
        if candidate.is_file():
            return candidate
    raise DatasetError(f"no {name} under {root} (looked in data/ and the top): {FIX}")


def load(root: Path, annotations: str, limit: int | None, tasks: list[str] | None) -> list[Sample]:
    path = annotations_file(root, annotations)
    items = annotation_items(read_json_file(path), str(path))
    if tasks:
        items = [i for i in items if i.get("task") in tasks]
    if limit is not None:
        items = items[:limit]
    samples: list[Sample] = []
    seen: set[str] = set()
    unscorable: list[str] = []
    departing: list[str] = []
    for item in items:
        departing += check_item(item)
        sample = to_sample(item, path.parent)
        if sample.id in seen:
            raise DatasetError(f"ROME question {sample.id!r} appears twice in {path}")
        seen.add(sample.id)
        label = item["evaluator_kwargs"].get("label", "")
        if item["evaluator"] == "choices_matching" and set(str(label).upper()) & set("INST"):
            unscorable.append(sample.id)
        samples.append(sample)
    if departing:
        log.warning(
            "ROME: %d annotation argument(s) depart from the evaluator's documented types; "
            'they are scored as upstream scores them (a label such as "A,C" never matches; '
            "units given as strings are read letter by letter): %s",
            len(departing),
            ", ".join(departing),
        )
    if unscorable:
        log.warning(
            "ROME: %d choice question(s) have a label with I, N, S or T, which upstream's "
            "letter reading deletes (its `upstream` mode never scores them; `fixed` does): %s",
            len(unscorable),
            ", ".join(unscorable),
        )
    return samples


def to_sample(item: dict[str, Any], base: Path) -> Sample:
    qid = str(item["question_id"])
    parts = [Part.of_text(prompt_text(item))]
    for relative in image_paths(item):
        image = base / relative
        if not image.is_file():
            raise DatasetError(f"ROME question {qid!r}: image {relative} not found under {base}")
        data = image.read_bytes()
        try:
            media_type = sniff_media_type(data)
        except ValueError as exc:
            raise DatasetError(f"ROME question {qid!r} image {relative}: {exc}") from None
        parts.append(Part(kind="image", data=data, media_type=media_type))
    reference = item["reference"]
    return Sample(
        id=qid,
        parts=parts,
        target=reference if isinstance(reference, str) else json.dumps(reference),
        group_id=str(item.get("task") or "all"),
        metadata={"annotation": item, "task": item.get("task") or "all"},
    )


def load_rome(
    dataset_path: str | None,
    annotations: str,
    limit: int | None,
    tasks: Sequence[str] | None,
) -> tuple[list[Sample], str, str]:
    """Samples, revision and source of a ROME load."""
    root = hub.snapshot(HF_PATH, REVISION, dataset_path)
    path = annotations_file(root, annotations)
    revision = hub.revision_of(REVISION, dataset_path, HF_PATH)
    source = f"{HF_PATH}@{REVISION}" if dataset_path is None else f"dataset path {dataset_path}"
    chosen = list(tasks) if tasks is not None else None
    return load(root, annotations, limit, chosen), revision, f"{source} ({path.name})"
