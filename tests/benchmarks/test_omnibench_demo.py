"""The synthetic OmniBench demo dataset: real PNG and WAV bytes, consistent answers, stable."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import pytest
from PIL import Image

from evalfleet.benchmarks.hub import fingerprint as dataset_revision
from evalfleet.benchmarks.omnibench.dataset import load as load_omnibench
from evalfleet.benchmarks.omnibench.demo import ROWS, demo_rows, write_omnibench_demo


class Loaded:
    def __init__(self, path: Path) -> None:
        self.samples, self.excluded, _ = load_omnibench(path)


load = Loaded


def test_demo_round_trip(tmp_path: Path) -> None:
    loaded = load(write_omnibench_demo(tmp_path / "omnibench"))
    assert loaded.excluded == []
    samples = loaded.samples
    assert [s.id for s in samples] == ["0", "1", "2", "3", "4", "5"]
    assert [s.target for s in samples] == ["A", "C", "D", "B", "D", "B"]
    assert [s.metadata["audio_type"] for s in samples] == [
        "speech",
        "sound event",
        "music",
        "speech",
        "sound event",
        "music",
    ]
    for sample, spec in zip(samples, ROWS, strict=True):
        assert [(p.kind, p.media_type) for p in sample.parts] == [
            ("text", None),
            ("image", "image/png"),
            ("audio", "audio/wav"),
        ]
        assert sample.choices == list(spec.options)
        assert sample.choices[ord(sample.target) - ord("A")] == spec.answer
        with Image.open(io.BytesIO(sample.parts[1].data or b"")) as img:
            assert (img.format, img.size) == ("PNG", (40 + 50 * spec.count, 80))
        with wave.open(io.BytesIO(sample.parts[2].data or b"")) as wav:
            assert (wav.getnchannels(), wav.getsampwidth()) == (1, 2)
            assert (wav.getframerate(), wav.getnframes()) == (8000, 1600)


def test_demo_captions_and_distinct_media() -> None:
    rows = demo_rows()
    assert [r["image content"] for r in rows[:2]] == [
        "3 red circles in a row on a white background.",
        "One green triangle in a row on a white background.",
    ]
    assert len({r["audio"]["bytes"] for r in rows}) == 6
    assert len({r["image"]["bytes"] for r in rows}) == 6
    assert {r["audio type"] for r in rows} == {"speech", "sound event", "music"}


def test_demo_is_deterministic_and_replaces_only_datasets(tmp_path: Path) -> None:
    first = dataset_revision(write_omnibench_demo(tmp_path / "a"))
    assert dataset_revision(write_omnibench_demo(tmp_path / "b")) == first
    assert dataset_revision(write_omnibench_demo(tmp_path / "a")) == first  # overwrite
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="exists and is not a saved dataset"):
        write_omnibench_demo(tmp_path / "c")
    assert (tmp_path / "c" / "keep.txt").read_text() == "mine"
