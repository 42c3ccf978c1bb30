"""A small synthetic OmniBench-format dataset: six rows, real PNG images and real WAV audio.

Each image is drawn with Pillow from the row's shape specification; each audio is a 0.2 s sine
tone at 8 kHz with its own pitch, standing in for the recording that `audio content` describes.
The answers follow from the image and the captions, so the text-alternative mode is solvable.
No text is rendered, so the bytes depend on no font; the output is identical on every call.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from evalfleet.benchmarks import hub
from evalfleet.benchmarks.omnibench.dataset import wav_bytes

RATE = 8000
SECONDS = 0.2
RGB = {
    "red": (220, 30, 30),
    "green": (30, 160, 60),
    "blue": (30, 80, 220),
    "orange": (245, 150, 20),
}


@dataclass(frozen=True)
class DemoRow:
    task_type: str
    audio_type: str
    shape: str  # circle, square or triangle
    colour: str
    count: int
    pitch_hz: int
    audio_content: str
    question: str
    options: tuple[str, str, str, str]
    answer: str


ROWS = (
    DemoRow(
        "count and quantity", "speech", "circle", "red", 3, 220,
        "A woman asks: how many red circles are there?",
        "How many of the shapes the speaker asks about are in the image?",
        ("3", "4", "5", "6"), "3",
    ),
    DemoRow(
        "object identification and description", "sound event", "triangle", "green", 1, 330,
        "A doorbell rings twice.",
        "Which shape is shown while the sound plays?",
        ("a circle", "a square", "a triangle", "a star"), "a triangle",
    ),
    DemoRow(
        "contextual and environmental questions", "music", "square", "blue", 2, 440,
        "A slow piano melody in a minor key.",
        "What is the mood of the music that accompanies the blue squares?",
        ("cheerful", "excited", "angry", "sad"), "sad",
    ),
    DemoRow(
        "action and activity", "speech", "circle", "orange", 1, 550,
        "A man says: I am throwing the orange ball.",
        "What is the speaker doing with the object in the image?",
        ("kicking it", "throwing it", "painting it", "hiding it"), "throwing it",
    ),
    DemoRow(
        "count and quantity", "sound event", "square", "green", 4, 660,
        "A dog barks once.",
        "How many more squares are in the image than barks in the audio?",
        ("0", "1", "2", "3"), "3",
    ),
    DemoRow(
        "identity and relationship", "music", "circle", "blue", 2, 880,
        "A violin and a cello play a duet.",
        "Each circle stands for one instrument you hear. How many instruments play?",
        ("one", "two", "three", "four"), "two",
    ),
)  # fmt: skip


def draw_image(row: DemoRow) -> bytes:
    """`count` shapes in a row on white, as PNG."""
    img = Image.new("RGB", (40 + 50 * row.count, 80), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    r = 18
    for i in range(row.count):
        x, y = 45 + 50 * i, 40
        fill = RGB[row.colour]
        if row.shape == "circle":
            draw.ellipse((x - r, y - r, x + r, y + r), fill=fill)
        elif row.shape == "square":
            draw.rectangle((x - r, y - r, x + r, y + r), fill=fill)
        else:
            draw.polygon([(x, y - r), (x + r, y + r), (x - r, y + r)], fill=fill)
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def tone(pitch_hz: int, seconds: float = SECONDS, rate: int = RATE) -> bytes:
    """A sine tone at half amplitude as 16-bit mono WAV."""
    frames = round(seconds * rate)
    return wav_bytes(
        (0.5 * math.sin(2 * math.pi * pitch_hz * n / rate) for n in range(frames)), rate
    )


def image_content(row: DemoRow) -> str:
    noun = row.shape if row.count == 1 else f"{row.shape}s"
    amount = "One" if row.count == 1 else str(row.count)
    return f"{amount} {row.colour} {noun} in a row on a white background."


def demo_rows() -> list[dict[str, Any]]:
    """The rows in the upstream schema, media as `{bytes, path}`."""
    return [
        {
            "index": index,
            "task type": row.task_type,
            "audio type": row.audio_type,
            "question": row.question,
            "options": list(row.options),
            "answer": row.answer,
            "image": {"bytes": draw_image(row), "path": f"{index}.png"},
            "audio": {"bytes": tone(row.pitch_hz), "path": f"{index}.wav"},
            "image content": image_content(row),
            "audio content": row.audio_content,
        }
        for index, row in enumerate(ROWS)
    ]


def build_dataset(rows: list[dict[str, Any]]) -> Any:
    """A `datasets.Dataset` of rows in the upstream schema with HF `Image` and `Audio` features.

    Built from Arrow storage directly: encoding through the `Audio` feature needs torchcodec.
    """
    import pyarrow as pa
    from datasets import Audio, Dataset, DatasetInfo, Features, Image, List, Value

    features = Features(
        {
            "index": Value("int64"),
            "task type": Value("string"),
            "audio type": Value("string"),
            "question": Value("string"),
            "options": List(Value("string")),
            "answer": Value("string"),
            "image": Image(),
            "audio": Audio(),
            "image content": Value("string"),
            "audio content": Value("string"),
        }
    )
    table = pa.Table.from_pylist(rows, schema=features.arrow_schema)
    return Dataset(table, info=DatasetInfo(features=features))


def write_omnibench_demo(path: str | Path) -> Path:
    """Save the rows as split `train` with `DatasetDict.save_to_disk` at `path`; return it.

    An existing saved DatasetDict at `path` is replaced; any other non-empty directory is left
    alone and raises FileExistsError.
    """
    from datasets import DatasetDict

    target = hub.replace_saved(path)
    DatasetDict({"train": build_dataset(demo_rows())}).save_to_disk(str(target))
    return target
