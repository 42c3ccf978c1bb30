"""A small DatBench-format dataset: three capabilities as Hub-layout Parquet shards
(`<capability>/test-00000-of-00001.parquet`), with direct rows scored by four upstream scorers,
judge rows (one prompt in upstream's two-line format, which the #6 rewrite cuts), and a circular
group of four rotations. The drawn images carry no text, so the bytes depend on no font."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

SUFFIX = "\nAnswer briefly. End with a line 'Final Answer: <answer>'."
JUDGE_PROMPT = (
    "You are grading a model's answer to a question about an image.\n"
    "Question: {question}\n"
    "Ground truth: {ground_truth}\n"
    "Model response: {response}\n"
    "Decide whether the final answer of the response means the same as the ground truth.\n"
    "Respond with exactly two lines:\n"
    "reasoning: <one sentence>\n"
    "answer: <true or false>"
)
ROTATION_OPTIONS = ["red", "blue", "green", "black"]


def _dots(colour: tuple[int, int, int], count: int, size: int = 64) -> bytes:
    image = Image.new("RGB", (size, size), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    for i in range(count):
        x, y = 6 + (i % 4) * 14, 6 + (i // 4) * 14
        draw.ellipse((x, y, x + 10, y + 10), fill=colour)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _row(
    row_id: str,
    dataset: str,
    question: str,
    answer: str,
    *,
    dots: int,
    original_idx: str | None = None,
    eval_mode: str = "direct",
    judge_prompt: str = "",
    is_circular: bool = False,
    metadata: dict[str, Any] | None = None,
    is_frontier: bool = False,
    discrimination: float = 0.0,
) -> dict[str, Any]:
    return {
        "id": row_id,
        "image": {"bytes": _dots((40, 40, 200), dots), "path": None},
        "question": question,
        "prompt_format": {"prefix": "", "suffix": SUFFIX},
        "answer": answer,
        "eval_mode": eval_mode,
        "judge_prompt": judge_prompt,
        "is_circular": is_circular,
        "source_info": {"dataset": dataset, "original_idx": original_idx or row_id},
        "eval_metrics": {"discrimination": discrimination, "is_frontier": is_frontier},
        "all_answers": [answer],
        "metadata": json.dumps(metadata or {}),
    }


def _rotations() -> list[dict[str, Any]]:
    """MMBench-style circular rows: the same question with its options rotated four times."""
    rows = []
    for turn in range(4):
        options = ROTATION_OPTIONS[turn:] + ROTATION_OPTIONS[:turn]
        letters = "ABCD"
        listed = "\n".join(f"{letters[i]}. {text}" for i, text in enumerate(options))
        rows.append(
            _row(
                f"general-circ-{turn}",
                "mmbench",
                f"What colour are the dots?\n{listed}",
                letters[options.index("blue")],
                dots=3,
                original_idx="41",
                is_circular=True,
                metadata={
                    "all_choices": list(letters),
                    "index2ans": dict(zip(letters, options, strict=True)),
                },
            )
        )
    return rows


def demo_rows() -> dict[str, list[dict[str, Any]]]:
    return {
        "chart": [
            _row("chart-1", "chartqa", "What is the height of the tallest bar?", "12", dots=2,
                 discrimination=0.4),
            _row("chart-2", "chartqa", "What share of the chart is blue, in percent?", "37.5",
                 dots=3, discrimination=0.2),
            _row("chart-3", "charxiv_reasoning", "Which way does the trend line go?",
                 "increasing", dots=4, eval_mode="judge", judge_prompt=JUDGE_PROMPT,
                 is_frontier=True),
        ],
        "counting": [
            _row("count-1", "countbench", "How many dots are in the picture?", "5", dots=5),
            _row("count-2", "countbench", "Count the dots.", "7", dots=7),
            _row("count-3", "tallyqa", "How many blue dots are there?", "2", dots=2,
                 metadata={"is_simple": True}),
        ],
        "general": [
            *_rotations(),
            _row("general-judge", "vqa-generic", "What shape are the marks?", "circles",
                 dots=6, eval_mode="judge", judge_prompt=JUDGE_PROMPT),
            _row("general-exact", "generic-qa", "What colour is the background?", "white",
                 dots=1),
        ],
    }  # fmt: skip


def write_datbench_demo(path: str | Path) -> Path:
    """Write the dataset at `path` (replacing a demo written there before)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = Path(path)
    if root.exists():
        if not (root / "chart").is_dir():
            raise FileExistsError(f"{root} exists and is not a DatBench demo dataset")
        shutil.rmtree(root)
    for capability, rows in demo_rows().items():
        folder = root / capability
        folder.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows), folder / "test-00000-of-00001.parquet")
    return root
