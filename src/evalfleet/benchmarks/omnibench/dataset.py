"""OmniBench (image + audio + text multiple choice) as evalscope HEAD runs it.

Prompt, content order and the default parser follow evalscope (reference §3.2); the original
OmniBench parser is scored alongside as the labelled compat mode "original" (§3.3). Media bytes
are read from the Arrow storage of the HF `Image`/`Audio` features without decoding (decoding
audio needs torchcodec) and sent unchanged, with media types sniffed from the bytes: upstream
labels every image `png` and every audio `mp3`.

A row whose image or audio is sent but has no usable bytes (missing, empty, or not recognised
as that kind of media) is excluded, not an error: `load` returns the exclusions beside the
samples (the run reports them and records them in its manifest). Bytes that look right but
fail to decode later cannot be caught here without decoding.
"""

from __future__ import annotations

import array
import io
import sys
import wave
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from PIL import Image

from evalfleet.benchmarks import hub
from evalfleet.benchmarks.interface import Exclusion
from evalfleet.benchmarks.media import encoded_image, sniff_media_type, stored_bytes
from evalfleet.benchmarks.omnibench.parsing import EVALSCOPE_VERSION, LETTERS
from evalfleet.core.types import DatasetError, Part, PartKind, Sample

HF_PATH = "m-a-p/OmniBench"
SPLIT = "train"
# Not pinned: no public commit sha of m-a-p/OmniBench could be confirmed, so the branch "main"
# is read. A Hub load resolves it to the commit sha it reads (`hub.resolve_revision`) and the
# manifest records that sha, never "main"; two runs on different commits are not paired.
REVISION = "main"
TEMPLATE = (
    "Answer the following multiple choice question based on the image and audio content. "
    "The last line of your response should be of the following format: 'ANSWER: [LETTER]' "
    "(without quotes) where [LETTER] is one of {letters}. Think step by step before answering."
    "\n\n{question}\n\n{choices}"
)
IMAGE_ALT_PREFIX = "[Image Alternative Text]: "
AUDIO_ALT_PREFIX = "[Audio Alternative Text]: "
REQUIRED_COLUMNS = (
    "index",
    "task type",
    "audio type",
    "question",
    "options",
    "answer",
    "image",
    "audio",
    "image content",
    "audio content",
)
FIX = "pass save_to_disk output or Parquet files of split 'train' in the upstream schema"
SOURCE = hub.DatasetSource(HF_PATH, REVISION, REQUIRED_COLUMNS, FIX)


class UnusableMedia(DatasetError):
    """A row's image or audio has no usable bytes; `load` excludes the row instead."""


# --- dataset -------------------------------------------------------------------------------


def load(
    dataset_path: str | Path | None = None,
    limit: int | None = None,
    *,
    use_image: bool = True,
    use_audio: bool = True,
) -> tuple[list[Sample], list[Exclusion], str]:
    """Samples in dataset order, the excluded rows, and the source; `limit` counts rows
    before exclusion."""
    rows, source = SOURCE.rows(SPLIT, dataset_path, limit)
    samples: list[Sample] = []
    excluded: list[Exclusion] = []
    seen: set[str] = set()
    for row in rows:
        try:
            sample = to_sample(row, use_image=use_image, use_audio=use_audio)
        except UnusableMedia as exc:
            excluded.append(Exclusion(id=str(row.get("index")), reason=str(exc)))
            continue
        if sample.id in seen:
            raise DatasetError(f"index {sample.id} appears twice: fix the index column")
        seen.add(sample.id)
        samples.append(sample)
    return samples, excluded, source


# --- samples -------------------------------------------------------------------------------


def prompt_text(question: str, options: list[str]) -> str:
    """The evalscope text part: the template with lettered options."""
    letters = LETTERS[: len(options)]
    return TEMPLATE.format(
        letters=",".join(letters),
        question=question,
        choices="\n".join(f"{x}) {text}" for x, text in zip(letters, options, strict=True)),
    )


def to_sample(row: Mapping[str, Any], *, use_image: bool = True, use_audio: bool = True) -> Sample:
    """One row as a Sample with parts [text, image, audio].

    `use_image=False` / `use_audio=False` put the textual alternative in that medium's place.
    Raises UnusableMedia for media without usable bytes, DatasetError for other bad rows.
    """
    if row.get("index") is None:
        raise DatasetError("a row has no index: fix the index column")
    sample_id = str(row["index"])
    options = row.get("options")
    if not isinstance(options, list) or len(options) != len(LETTERS):
        count = len(options) if isinstance(options, list) else type(options).__name__
        raise DatasetError(
            f"row index {sample_id} has {count} options, expected a list of {len(LETTERS)} "
            "strings: fix the options column"
        )
    answer = row.get("answer")
    if answer not in options:
        raise DatasetError(
            f"row index {sample_id}: answer {answer!r} is not one of its options: "
            "the answer column must hold the text of one option"
        )
    question = hub.required_text(
        row, "question", f"row index {sample_id}", "fill it or drop the row"
    )
    if any(option is None for option in options):
        raise DatasetError(f"row index {sample_id} has a null option: fill the options column")
    parts = [Part.of_text(prompt_text(question, [str(o) for o in options]))]
    alternatives: list[str] = []
    if use_image:
        parts.append(_media_part("image", row.get("image"), sample_id))
    else:
        parts.append(Part.of_text(IMAGE_ALT_PREFIX + _caption(row, "image content", sample_id)))
        alternatives.append("image")
    if use_audio:
        parts.append(_media_part("audio", row.get("audio"), sample_id))
    else:
        parts.append(Part.of_text(AUDIO_ALT_PREFIX + _caption(row, "audio content", sample_id)))
        alternatives.append("audio")
    return Sample(
        id=sample_id,
        parts=parts,
        target=LETTERS[options.index(answer)],
        choices=[str(o) for o in options],
        metadata={
            "question": question,
            "task_type": row.get("task type"),
            "audio_type": row.get("audio type"),
            "text_alternatives": alternatives,
            "prompt": EVALSCOPE_VERSION,
        },
    )


def _caption(row: Mapping[str, Any], column: str, sample_id: str) -> str:
    text = row.get(column)
    if not isinstance(text, str):
        raise DatasetError(
            f"row index {sample_id} has no {column!r} text for the textual alternative: "
            f"fill the {column!r} column or send the medium itself"
        )
    return text


def _media_part(kind: PartKind, item: Any, sample_id: str) -> Part:
    data = _media_bytes(kind, item, sample_id)
    if not data:
        raise UnusableMedia(f"{kind} has no bytes")
    try:
        media_type = sniff_media_type(data)
    except ValueError as exc:
        raise UnusableMedia(f"{kind}: {exc}") from exc
    if not media_type.startswith(f"{kind}/"):
        raise UnusableMedia(f"{kind} bytes are {media_type}")
    return Part(kind=kind, data=data, media_type=media_type)


def _media_bytes(kind: PartKind, item: Any, sample_id: str) -> bytes | None:
    """Bytes of an undecoded `{bytes, path}` item or raw bytes; decoded items are re-encoded
    (a PIL image in its own format, PNG if unknown; an `{array, sampling_rate}` as 16-bit WAV).
    None if the item holds no bytes."""
    if item is None:
        return None
    if isinstance(item, bytes | bytearray | memoryview):
        return bytes(item)
    if isinstance(item, Mapping):
        data = stored_bytes(item)
        rate = item.get("sampling_rate")
        if data is None and kind == "audio" and item.get("array") is not None and rate:
            return wav_bytes(item["array"], int(rate))
        return data
    if kind == "image" and isinstance(item, Image.Image):
        return encoded_image(item)
    raise DatasetError(
        f"row index {sample_id} {kind} is a {type(item).__name__}: load the dataset without "
        f"decoding the {kind} column"
    )


def wav_bytes(samples: Iterable[float], rate: int) -> bytes:
    """Mono float samples in [-1, 1] as a 16-bit PCM WAV file (values outside are clipped)."""
    try:
        pcm = array.array("h", (round(max(-1.0, min(1.0, float(s))) * 32767) for s in samples))
    except TypeError as exc:
        raise DatasetError(f"audio array is not mono ({exc}): pass undecoded audio") from exc
    if sys.byteorder == "big":
        pcm.byteswap()
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(pcm.tobytes())
    return out.getvalue()
