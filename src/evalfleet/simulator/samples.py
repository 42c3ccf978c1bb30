"""Helpers for tests and demos: answer keys and tiny real media files (PNG, JPEG, WAV)."""

from __future__ import annotations

import io
import json
import struct
import wave
import zlib
from collections.abc import Iterable
from pathlib import Path

from evalfleet.simulator.answering import prompt_sha256

BRACES = "So the final answer is {{answer}}"


def answer_key_line(
    prompt: str, target: str, template: str = BRACES, choices: list[str] | None = None
) -> str:
    record: dict[str, object] = {
        "prompt_sha256": prompt_sha256(prompt),
        "target": target,
        "template": template,
    }
    if choices is not None:
        record["choices"] = choices
    return json.dumps(record)


def write_answer_key(
    path: str | Path, items: Iterable[tuple[str, str] | tuple[str, str, str, list[str] | None]]
) -> Path:
    """Write (prompt, target[, template, choices]) items as an answer-key JSONL file."""
    path = Path(path)
    lines = [answer_key_line(*item) for item in items]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def tiny_png(width: int = 2, height: int = 2) -> bytes:
    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    rows = b"".join(b"\x00" + b"\xff\x80\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def tiny_jpeg(width: int = 4, height: int = 4) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (30, 120, 200)).save(buffer, format="JPEG")
    return buffer.getvalue()


def tiny_wav(seconds: float = 0.05, rate: int = 8000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\x00\x00" * int(seconds * rate))
    return buffer.getvalue()
