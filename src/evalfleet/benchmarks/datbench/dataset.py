"""DatBench data (DatologyAI/DatBench, or DatBench-Full): nine capability configs, split `test`,
one image per row, from the Hub or a local Parquet / save_to_disk copy (`<path>/<capability>/`).

The prompt is `prompt_format.prefix + question + prompt_format.suffix` with the image, as the
harness sends it; blind mode sends the same text without the image. Every row is checked at
load: the metadata its scorer needs, and, for judge rows, a judge prompt with a slot for the
response (see `judge_template`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalfleet.benchmarks import hub
from evalfleet.benchmarks.datbench import scoring
from evalfleet.benchmarks.datbench.judge_prompt import judge_template
from evalfleet.benchmarks.media import sniff_media_type, stored_bytes
from evalfleet.core.types import DatasetError, Part, Sample

HF_PATHS = {False: "DatologyAI/DatBench", True: "DatologyAI/DatBench-Full"}
# Not pinned: no public commit sha of either repository could be confirmed, so the branch
# "main" is read. A Hub load resolves it to the commit sha it reads (`hub.resolve_revision`)
# and the manifest records that sha; a local copy is recorded by its content fingerprint.
REVISION = "main"
CAPABILITIES = (
    "chart",
    "counting",
    "document",
    "general",
    "grounding",
    "math",
    "scene",
    "spatial",
    "table",
)
REQUIRED = ("id", "image", "question", "answer")
FIX = "pass a copy with one directory of Parquet files (or save_to_disk output) per capability"


def available(dataset_path: str | None) -> list[str]:
    """All nine capabilities on the Hub; the ones a local copy holds (one folder each)."""
    if dataset_path is None:
        return list(CAPABILITIES)
    found = [c for c in CAPABILITIES if (Path(dataset_path) / c).is_dir()]
    if not found:
        raise DatasetError(
            f"dataset path {dataset_path} holds none of the DatBench capabilities "
            f"({', '.join(CAPABILITIES)}): {FIX}"
        )
    return found


def load_capability(
    capability: str,
    dataset_path: str | None,
    full: bool,
    *,
    blind: bool,
    judge_layout: str,
    keep: set[str] | None,
    limit: int | None,
) -> list[Sample]:
    try:
        table, _ = hub.load_table(
            HF_PATHS[full],
            revision=REVISION,
            split="test",
            dataset_path=dataset_path,
            config=capability,
            required=REQUIRED,
            fix=FIX,
        )
    except DatasetError as exc:
        if dataset_path is not None and not (Path(dataset_path) / capability).exists():
            raise DatasetError(
                f"dataset path {dataset_path} has no {capability} capability: add it, or "
                f"choose the capabilities present with --datbench-capabilities"
            ) from exc
        raise
    samples = []
    for row in table.to_pylist():
        if keep is not None and str(row["id"]) not in keep:
            continue
        samples.append(to_sample(row, capability, blind=blind, judge_layout=judge_layout))
        if limit is not None and len(samples) >= limit:
            break
    return samples


def to_sample(row: Mapping[str, Any], capability: str, *, blind: bool, judge_layout: str) -> Sample:
    sample_id = str(row["id"])
    where = f"DatBench {capability} sample {sample_id!r}"
    question = hub.required_text(row, "question", where, "fill it or drop the row")
    answer = hub.required_text(row, "answer", where, "fill it or drop the row")
    fmt = row.get("prompt_format") or {}
    text = f"{fmt.get('prefix') or ''}{question}{fmt.get('suffix') or ''}"
    parts = [Part.of_text(text)]
    if not blind:
        parts.append(image_part(row.get("image"), sample_id))
    source = row.get("source_info") or {}
    eval_mode = row.get("eval_mode") or "direct"
    is_circular = bool(row.get("is_circular") or False)
    metadata = _row_metadata(row.get("metadata"), sample_id)
    inputs = scoring.ScorerInput(
        question_id=sample_id,
        question=question,
        answer=answer,
        all_answers=[str(a) for a in (row.get("all_answers") or [answer]) if a is not None],
        dataset=str(source.get("dataset") or ""),
        metadata=metadata,
    )
    if eval_mode == "direct":
        scoring.check_sample(inputs)
    template = None
    if eval_mode == "judge":
        template = judge_template(str(row.get("judge_prompt") or ""), sample_id, judge_layout)
    original_idx = str(source.get("original_idx") or "")
    return Sample(
        id=sample_id,
        parts=parts,
        target=inputs.answer,
        group_id=f"{inputs.dataset}/{original_idx}" if is_circular else sample_id,
        metadata={
            "capability": capability,
            "dataset": inputs.dataset,
            "original_idx": original_idx,
            "is_circular": is_circular,
            "eval_mode": eval_mode,
            "question": inputs.question,
            "all_answers": inputs.all_answers,
            "row_metadata": metadata,
            "judge_template": template,
            "eval_metrics": dict(row.get("eval_metrics") or {}),
        },
    )


def scorer_input(sample: Sample) -> scoring.ScorerInput:
    """The scorers' view of a sample read back from a run's plan."""
    meta = sample.metadata
    return scoring.ScorerInput(
        question_id=sample.id,
        question=meta["question"],
        answer=sample.target,
        all_answers=list(meta["all_answers"]),
        dataset=meta["dataset"],
        metadata=meta["row_metadata"],
    )


def _row_metadata(raw: Any, sample_id: str) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        raise DatasetError(
            f"DatBench row {sample_id!r}: metadata is not valid JSON: fix the metadata column"
        ) from None
    if not isinstance(value, dict):
        raise DatasetError(f"DatBench row {sample_id!r}: metadata must be a JSON object")
    return value


def image_part(item: Any, sample_id: str) -> Part:
    data = None
    if isinstance(item, Mapping):
        data = stored_bytes(item)
    elif isinstance(item, bytes | bytearray):
        data = bytes(item)
    if not data:
        raise DatasetError(f"DatBench row {sample_id!r} has no image bytes: {FIX}")
    try:
        media_type = sniff_media_type(bytes(data))
    except ValueError as exc:
        raise DatasetError(f"DatBench row {sample_id!r} image: {exc}") from None
    return Part(kind="image", data=bytes(data), media_type=media_type)


def read_subset(path: str) -> set[str]:
    """The ids of a subset file written by `evalfleet datbench select` (or a JSON list)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise DatasetError(f"cannot read the DatBench subset {path}: {exc}") from None
    ids = data.get("ids") if isinstance(data, dict) else data
    if not isinstance(ids, list) or not ids:
        raise DatasetError(f"DatBench subset {path} must hold a non-empty list of ids")
    return {str(i) for i in ids}
