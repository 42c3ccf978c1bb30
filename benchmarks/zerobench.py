"""ZeroBench: dataset loading, prompt building and scoring, kept apart as in inspect_evals.

Rows keep dataset order (upstream shuffles without a seed). Images are read from the Arrow
storage of the HF `Image` feature, i.e. the `{"bytes", "path"}` items that `Image(decode=False)`
yields, without decoding; this also avoids `cast_column`, which would write cache files into a
local dataset directory.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from benchmarks.base import Part, Sample, Score
from benchmarks.media import downscale_image, sniff_media_type
from benchmarks.zerobench_scoring import SCORERS

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


class DatasetError(ValueError):
    """The dataset cannot be used as ZeroBench; the message is one line naming the fix."""


# --- dataset -----------------------------------------------------------------------------


def load_rows(
    split: str,
    dataset_path: str | Path | None = None,
    revision: str = REVISION,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Rows of one split as dicts, in dataset order; images stay undecoded `{bytes, path}`.

    Without `dataset_path` the split comes from the Hugging Face hub at `revision`. A local
    `dataset_path` may hold a `DatasetDict.save_to_disk` directory, a `Dataset.save_to_disk`
    directory (itself or at `<path>/<split>`), or Parquet files at `<path>/<split>.parquet`,
    `<path>/<split>/*.parquet` or `<path>/data/<split>-*.parquet` (the hub layout).
    """
    if split not in SPLITS:
        raise DatasetError(f"unknown ZeroBench split {split!r}: use one of {', '.join(SPLITS)}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if dataset_path is None:
        table, source = _hub_table(split, revision), f"{HF_PATH}@{revision}"
    else:
        table, source = _local_table(split, Path(dataset_path)), f"dataset path {dataset_path}"
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise DatasetError(
            f"{source} split {split!r} lacks column(s) {', '.join(missing)} "
            f"(found: {', '.join(table.column_names)}): {FIX}"
        )
    if limit is not None:
        table = table.slice(0, limit)
    return table.to_pylist()


def _hub_table(split: str, revision: str) -> pa.Table:
    import datasets  # deferred: importing datasets is slow and local loads may not need it

    ds = datasets.load_dataset(HF_PATH, split=split, revision=revision)
    return ds.with_format("arrow")[:]


def _local_table(split: str, path: Path) -> pa.Table:
    if not path.exists():
        raise DatasetError(f"dataset path {path} does not exist: {FIX}")
    if not path.is_dir():
        raise DatasetError(f"dataset path {path} is not a directory: {FIX}")
    try:
        if (path / "dataset_dict.json").is_file():
            found = json.loads((path / "dataset_dict.json").read_text())["splits"]
            if split not in found:
                raise _no_split(path, split, found)
            return _saved_table(path / split)
        if (path / "state.json").is_file():
            return _saved_table(path, expected_split=split)
        if (path / split / "state.json").is_file():
            return _saved_table(path / split)
        files = _parquet_files(path, split)
        if not files:
            raise _no_split(path, split, _local_split_names(path))
        return pa.concat_tables([pq.read_table(f) for f in files])
    except DatasetError:
        raise
    except (OSError, ValueError, TypeError, KeyError, pa.ArrowException) as exc:
        first_line = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise DatasetError(
            f"dataset path {path} split {split!r} cannot be read ({first_line}): {FIX}"
        ) from exc


def _saved_table(directory: Path, expected_split: str | None = None) -> pa.Table:
    from datasets import Dataset

    ds = Dataset.load_from_disk(str(directory))
    if expected_split is not None and ds.split is not None and str(ds.split) != expected_split:
        raise DatasetError(
            f"dataset path {directory} holds split {str(ds.split)!r}, not {expected_split!r}: {FIX}"
        )
    return ds.with_format("arrow")[:]


def _parquet_files(path: Path, split: str) -> list[Path]:
    single = path / f"{split}.parquet"
    if single.is_file():
        return [single]
    if (path / split).is_dir():
        return sorted((path / split).glob("*.parquet"))
    return sorted(
        f
        for f in (path / "data").glob(f"{split}-*.parquet")
        if f.name[len(split) + 1 : -len(".parquet")].replace("-of-", "").isdigit()
    )


def _local_split_names(path: Path) -> list[str]:
    names = {f.stem for f in path.glob("*.parquet")}
    names |= {
        d.name
        for d in path.iterdir()
        if d.is_dir() and d.name != "data" and any(d.glob("*.parquet"))
    }
    names |= {f.name.split("-", 1)[0] for f in (path / "data").glob("*-*.parquet")}
    return sorted(names)


def _no_split(path: Path, split: str, found: list[str]) -> DatasetError:
    listed = ", ".join(found) if found else "none"
    return DatasetError(f"dataset path {path} has no split {split!r} (found: {listed}): {FIX}")


# --- samples -----------------------------------------------------------------------------


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


def to_sample(
    row: Mapping[str, Any], max_side: int | None = None, *, split: str = "zerobench"
) -> Sample:
    """One row as a Sample: parts [question_text + INSTRUCTION, image_0, image_1, ...].

    Image bytes are passed through unchanged unless `max_side` is set, which downscales them
    exactly as upstream (`thumbnail(1024)` with max_side=1024). Media types are sniffed from
    the bytes that are sent.
    """
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
    parts = [Part.of_text(str(row["question_text"]) + INSTRUCTION)]
    for index, item in enumerate(images):
        data = _image_bytes(item, question_id, index)
        if max_side is not None:
            data = downscale_image(data, max_side)
        try:
            media_type = sniff_media_type(data)
        except ValueError as exc:
            raise DatasetError(f"question {question_id!r} image {index}: {exc}") from exc
        parts.append(Part(kind="image", data=data, media_type=media_type))
    return Sample(
        id=question_id,
        parts=parts,
        target=str(row["question_answer"]),
        group_id=group_id,
        metadata={
            "split": split,
            "question_images": names,
            "image_attribution": row.get("image_attribution"),
            "image_transform": "original" if max_side is None else f"pil_thumbnail:{max_side}",
        },
    )


def _image_bytes(item: Any, question_id: str, index: int) -> bytes:
    """Bytes of one `question_images_decoded` item: `{bytes, path}`, raw bytes, or a PIL image.

    A decoded PIL image is re-encoded in its own format (PNG if unknown), so pass undecoded
    items to keep the original bytes.
    """
    if isinstance(item, Mapping):
        if item.get("bytes"):
            return bytes(item["bytes"])
        path = item.get("path")
        if path and Path(path).is_file():
            return Path(path).read_bytes()
    elif isinstance(item, bytes | bytearray | memoryview):
        return bytes(item)
    elif isinstance(item, Image.Image):
        out = io.BytesIO()
        item.save(out, format=item.format or "PNG")
        return out.getvalue()
    raise DatasetError(
        f"question {question_id!r} image {index} has no bytes ({type(item).__name__}): "
        "store the image bytes in question_images_decoded"
    )


def load_samples(
    split: str,
    dataset_path: str | Path | None = None,
    limit: int | None = None,
    max_side: int | None = None,
) -> list[Sample]:
    """Samples of one split in dataset order.

    `limit` keeps the first N rows: the first N main questions, or the first N subquestion
    rows (which may cut the last main question's group short).
    """
    samples = [
        to_sample(row, max_side, split=split) for row in load_rows(split, dataset_path, limit=limit)
    ]
    seen: set[str] = set()
    for sample in samples:
        if sample.id in seen:
            raise DatasetError(f"question_id {sample.id!r} appears twice in split {split!r}")
        seen.add(sample.id)
    return samples


def dataset_revision(dataset_path: str | Path | None = None) -> str:
    """What the manifest records as the dataset version.

    The pinned hub commit for hub loads; for a local copy, "sha256:<hex>" over every file's
    relative path, size and content, streamed in sorted path order.
    """
    if dataset_path is None:
        return REVISION
    root = Path(dataset_path)
    if not root.is_dir():
        raise DatasetError(f"dataset path {root} is not a directory: {FIX}")
    digest = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(f"{file.relative_to(root).as_posix()}\0{file.stat().st_size}\0".encode())
        with file.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


# --- scoring -----------------------------------------------------------------------------


def score(response_text: str, target: str) -> list[Score]:
    """Both scoring modes: upstream first (the official number), then robust."""
    return [scorer(response_text, target) for scorer in SCORERS.values()]


def prompt_text(sample: Sample) -> str:
    """The sample's text part."""
    for part in sample.parts:
        if part.kind == "text" and part.text is not None:
            return part.text
    raise ValueError(f"sample {sample.id!r} has no text part")


def answer_key_entry(sample: Sample) -> dict[str, str]:
    """What the provider simulator needs to answer this prompt correctly, keyed by prompt hash."""
    return {
        "prompt_sha256": hashlib.sha256(prompt_text(sample).encode("utf-8")).hexdigest(),
        "target": sample.target,
        "format": "braces",
    }
