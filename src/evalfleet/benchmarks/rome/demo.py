"""A small ROME-layout dataset: `data/test.json` with drawn images beside it, covering every
evaluator, a multi-image question and a Chinese one. The answers follow from the drawings; no
text is rendered, so the bytes depend on no font and are identical on every call."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

COLOURS = {"red": (220, 30, 30), "blue": (30, 80, 220), "green": (30, 160, 60)}


def _dots(colour: str, count: int, size: int = 96) -> bytes:
    image = Image.new("RGB", (size, size), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    for i in range(count):
        x = 12 + (i % 4) * 22
        y = 12 + (i // 4) * 22
        draw.ellipse((x, y, x + 14, y + 14), fill=COLOURS[colour])
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _item(qid: str, task: str, question: str, evaluator: str, kwargs: dict, reference: Any,
          images: list[str]) -> dict[str, Any]:  # fmt: skip
    return {
        "question_id": qid,
        "question": question,
        "img_path": images[0] if len(images) == 1 else images,
        "image_type": task,
        "image_subtype": task,
        "reference": reference,
        "question_type": "open",
        "reasoning_type": "VL",
        "meta_info": {"source": "drawn by evalfleet evalfleet.benchmarks.rome.demo"},
        "evaluator": evaluator,
        "evaluator_kwargs": kwargs,
        "task": task,
    }


def demo_items() -> list[dict[str, Any]]:
    return [
        _item("diagrams_1", "diagrams", "Which colours appear in the picture?",
              "key_items_matching", {"key_items": [["red"], ["blue"]]}, "red and blue",
              ["diagrams/1.png"]),
        _item("diagrams_2", "diagrams", "Name the colour of the dots.",
              "key_items_matching", {"key_items": ["green"]}, "green", ["diagrams/2.png"]),
        _item("academic_1", "academic",
              "How many dots are there? A. 2 B. 3 C. 5 D. 7", "choices_matching",
              {"label": "C"}, "C", ["academic/1.png"]),
        _item("academic_2", "academic",
              "Which counts are odd? A. 3 B. 4 C. 5 D. 6", "choices_matching",
              {"label": "AC"}, "AC", ["academic/2.png"]),
        _item("multi_1", "multi-image",
              "<image 1> <image 2> Order the colours by dot count, fewest first.",
              "ordered_list_matching", {"order": ["red", "blue"]}, "red, blue",
              ["multi/1a.png", "multi/1b.png"]),
        _item("recognition_1", "recognition", "How many dots are there?", "number_matching",
              {"value_to_match": 6}, "6", ["recognition/1.png"]),
        _item("recognition_2", "recognition", "图中有几个点？", "number_matching",
              {"value_to_match": 4}, "4", ["recognition/2.png"]),
        _item("geo_1", "geo", "Where was this drawn?", "location_matching",
              {"location_fine_grained": ["Tokyo Disney"], "location_coarse_grained": ["Tokyo"]},
              "Tokyo DisneySea", ["geo/1.png"]),
        _item("spatial_1", "spatial", "How long does the drawing take, in minutes?",
              "interval_matching", {"interval": [10, 20], "units": ["minutes"]}, "15 minutes",
              ["spatial/1.png"]),
        _item("spatial_2", "spatial", "How tall is the stack?", "multi_interval_matching",
              {"intervals": [[1, 2], [100, 200]], "units": [["m"], ["cm"]]}, "150 cm",
              ["spatial/2.png"]),
    ]  # fmt: skip


IMAGES = {
    "diagrams/1.png": ("red", 3),
    "diagrams/2.png": ("green", 2),
    "academic/1.png": ("blue", 5),
    "academic/2.png": ("red", 5),
    "multi/1a.png": ("red", 2),
    "multi/1b.png": ("blue", 4),
    "recognition/1.png": ("green", 6),
    "recognition/2.png": ("red", 4),
    "geo/1.png": ("blue", 1),
    "spatial/1.png": ("green", 3),
    "spatial/2.png": ("red", 7),
}


def write_rome_demo(path: str | Path) -> Path:
    """Write the dataset at `path` (replacing a demo written there before)."""
    root = Path(path)
    if root.exists():
        if not (root / "data" / "test.json").is_file():
            raise FileExistsError(f"{root} exists and is not a ROME demo dataset")
        shutil.rmtree(root)
    data = root / "data"
    for relative, (colour, count) in IMAGES.items():
        (data / relative).parent.mkdir(parents=True, exist_ok=True)
        (data / relative).write_bytes(_dots(colour, count))
    (data / "test.json").write_text(json.dumps(demo_items(), ensure_ascii=False, indent=1))
    return root
