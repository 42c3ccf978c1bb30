"""ZeroBench data: rows of `jonathan-roberts1/zerobench` as samples, in dataset order.

Upstream shuffles without a seed; we keep dataset order so `--limit N` always takes the same
N questions. Image bytes are read from the Arrow storage of the HF `Image` feature without
decoding and sent unchanged (media types sniffed from the bytes).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from PIL import Image

from evalfleet.benchmarks import hub
from evalfleet.benchmarks.media import encoded_image, sniff_media_type, stored_bytes
from evalfleet.core.types import DatasetError, Part, Sample

HF_PATH = "jonathan-roberts1/zerobench"
REVISION = "13c35e521f939be69e6bbfbfeb6fb8a80d1179e5"
SPLITS = ("zerobench", "zerobench_subquestions")
INSTRUCTION = (
    "\n\n\nLet's think step by step and give the final answer in curly braces, "
    "like this: {final answer}"
)
REQUIRED_COLUMNS = (
    "question_id",
    "question_text",
    "question_images_decoded",
    "question_images",
    "question_answer",
)
FIX = "pass a dataset saved with save_to_disk or Parquet files in the upstream schema"
SOURCE = hub.DatasetSource(HF_PATH, REVISION, REQUIRED_COLUMNS, FIX)


def upstream_features() -> Any:
    """The upstream splits' schema as `datasets.Features`, for a dataset written in it (the
    demo's, the tests', the perf scripts'): the required columns and `image_attribution`."""
    from datasets import Features, Image, List, Value

    return Features(
        {
            "question_id": Value("string"),
            "question_text": Value("string"),
            "question_images_decoded": List(Image()),
            "question_images": List(Value("string")),
            "question_answer": Value("string"),
            "image_attribution": Value("string"),
        }
    )


def load_rows(
    split: str, dataset_path: str | Path | None = None, limit: int | None = None
) -> tuple[list[dict[str, Any]], str]:
    """Rows of one split as dicts (images undecoded `{bytes, path}`) and their source."""
    if split not in SPLITS:
        raise DatasetError(f"unknown ZeroBench split {split!r}: use one of {', '.join(SPLITS)}")
    return SOURCE.rows(split, dataset_path, limit)


def group_id_for(question_id: str, split: str) -> str:
    """The main question id: the id itself on the main split, the part before "_" otherwise."""
    if split == "zerobench":
        return question_id
    main, sep, sub = question_id.partition("_")
    if not sep or not main or not sub:
        raise DatasetError(
            f"subquestion id {question_id!r} is not '<main>_<sub>': "
            "fix the question_id column of the zerobench_subquestions split"
        )
    return main


def to_sample(row: Mapping[str, Any], *, split: str = "zerobench") -> Sample:
    """One row as a Sample: parts [question_text + INSTRUCTION, image_0, image_1, ...]."""
    question_id = str(row.get("question_id") or "")
    if not question_id:
        raise DatasetError(f"a {split} row has an empty question_id: fix the dataset")
    group_id = group_id_for(question_id, split)
    names = list(row.get("question_images") or [])
    images = list(row.get("question_images_decoded") or [])
    if len(names) != len(images):
        raise DatasetError(
            f"question {question_id!r} lists {len(names)} question_images but has "
            f"{len(images)} question_images_decoded: fix the dataset so both lists match"
        )
    where = f"question {question_id!r}"
    question = hub.required_text(row, "question_text", where, "fill it or drop the row")
    answer = hub.required_text(row, "question_answer", where, "fill it or drop the row")
    parts = [Part.of_text(question + INSTRUCTION)]
    for index, item in enumerate(images):
        data = image_bytes(item, question_id, index)
        try:
            media_type = sniff_media_type(data)
        except ValueError as exc:
            raise DatasetError(f"question {question_id!r} image {index}: {exc}") from exc
        parts.append(Part(kind="image", data=data, media_type=media_type))
    return Sample(
        id=question_id,
        parts=parts,
        target=answer,
        group_id=group_id,
        metadata={
            "question": question,
            "question_images": names,
            "image_attribution": row.get("image_attribution"),
        },
    )


def image_bytes(item: Any, question_id: str, index: int) -> bytes:
    """Bytes of one `question_images_decoded` item: `{bytes, path}`, raw bytes, or a PIL image.

    A decoded PIL image is re-encoded in its own format (PNG if unknown), so pass undecoded
    items to keep the original bytes.
    """
    if isinstance(item, Mapping):
        data = stored_bytes(item)
        if data is not None:
            return data
    elif isinstance(item, bytes | bytearray | memoryview):
        return bytes(item)
    elif isinstance(item, Image.Image):
        return encoded_image(item)
    raise DatasetError(
        f"question {question_id!r} image {index} has no bytes ({type(item).__name__}): "
        "store the image bytes in question_images_decoded"
    )


def load_samples(
    split: str, dataset_path: str | Path | None = None, limit: int | None = None
) -> tuple[list[Sample], str]:
    """Samples of one split in dataset order, and their source.

    `limit` keeps the first N rows: the first N main questions, or the first N subquestion
    rows (which may cut the last main question's group short).
    """
    rows, source = load_rows(split, dataset_path, limit=limit)
    samples = [to_sample(row, split=split) for row in rows]
    seen: set[str] = set()
    for sample in samples:
        if sample.id in seen:
            raise DatasetError(f"question_id {sample.id!r} appears twice in split {split!r}")
        seen.add(sample.id)
    return samples, source
