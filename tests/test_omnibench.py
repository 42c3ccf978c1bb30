"""OmniBench loading, prompt, scoring, answer key and summary on tiny datasets built here."""

from __future__ import annotations

import hashlib
import io
import logging
import wave
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from benchmarks import omnibench
from benchmarks.base import Part, Sample, Score
from benchmarks.omnibench import (
    AUDIO_ALT_PREFIX,
    IMAGE_ALT_PREFIX,
    REVISION,
    TEMPLATE,
    DatasetError,
    Exclusion,
    answer_key_entry,
    dataset_revision,
    load,
    load_rows,
    load_samples,
    prompt_text,
    score,
    summarize,
    to_sample,
    wav_bytes,
)
from benchmarks.omnibench_demo import build_dataset

FIX = "pass a dataset saved with save_to_disk or Parquet files in the upstream schema"


def encode(fmt: str, colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (12, 8), colour).save(out, format=fmt)
    return out.getvalue()


PNG = encode("PNG", (255, 0, 0))
JPEG = encode("JPEG", (0, 0, 255))
WAV = wav_bytes([0.0, 0.5, -0.5, 1.0], 8000)
MP3 = b"ID3\x04\x00\x00\x00\x00\x00\x00" + b"\xff\xfb\x90\x64" + bytes(64)  # ID3 tag + frame


def row(index: int, answer: str, image: bytes, audio: bytes, /, **over: Any) -> dict[str, Any]:
    base = {
        "index": index,
        "task type": ["count and quantity", "text and symbols"][index % 2],
        "audio type": ["speech", "music", "sound event"][index % 3],
        "question": f"Question {index}?",
        "options": ["red", "green", "blue", "grey"],
        "answer": answer,
        "image": {"bytes": image, "path": None},
        "audio": {"bytes": audio, "path": None},
        "image content": f"Caption {index}.",
        "audio content": f"Transcript {index}.",
    }
    return {**base, **over}


ROWS = [
    row(10, "red", PNG, WAV),
    row(11, "grey", JPEG, MP3),
    row(12, "green", PNG, b""),  # empty audio: excluded
    row(13, "blue", PNG, b"not audio at all"),  # unrecognised audio: excluded
    row(14, "blue", PNG, PNG),  # image bytes in the audio column: excluded
]
PROMPT_10 = (
    "Answer the following multiple choice question based on the image and audio content. "
    "The last line of your response should be of the following format: 'ANSWER: [LETTER]' "
    "(without quotes) where [LETTER] is one of A,B,C,D. Think step by step before answering."
    "\n\nQuestion 10?\n\nA) red\nB) green\nC) blue\nD) grey"
)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from datasets import DatasetDict

    path = tmp_path_factory.mktemp("saved") / "omnibench"
    DatasetDict({"train": build_dataset(ROWS)}).save_to_disk(str(path))
    return path


@pytest.fixture(scope="module")
def parquet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("parquet")
    (path / "data").mkdir()
    build_dataset(ROWS).to_parquet(str(path / "data" / "train-00000-of-00001.parquet"))
    return path


# --- template and samples --------------------------------------------------------------------


def test_template_is_evalscope_exactly() -> None:
    assert len(TEMPLATE) == 281
    assert (
        hashlib.sha256(TEMPLATE.encode("utf-8")).hexdigest()
        == "0c37ef03dc533fe98b73ef1ba2d3b1e9ac69c3de59077c079e9e18b382cddc6d"
    )
    assert prompt_text("Question 10?", ["red", "green", "blue", "grey"]) == PROMPT_10


@pytest.mark.parametrize("source", ["saved", "parquet_dir"])
def test_load_from_disk_and_parquet(source: str, request: pytest.FixtureRequest) -> None:
    loaded = load(request.getfixturevalue(source))
    assert [s.id for s in loaded.samples] == ["10", "11"]
    assert [s.target for s in loaded.samples] == ["A", "D"]
    first, second = loaded.samples
    assert first.parts == [
        Part.of_text(PROMPT_10),
        Part(kind="image", data=PNG, media_type="image/png"),
        Part(kind="audio", data=WAV, media_type="audio/wav"),
    ]
    # upstream sends JPEG as data:image/png and every audio as mp3; the bytes decide here
    assert [(p.kind, p.media_type) for p in second.parts] == [
        ("text", None),
        ("image", "image/jpeg"),
        ("audio", "audio/mpeg"),
    ]
    assert second.choices == ["red", "green", "blue", "grey"]
    assert second.group_id is None
    assert first.metadata == {
        "task_type": "count and quantity",
        "audio_type": "music",
        "text_alternatives": [],
        "prompt": "evalscope@fde259d2",
    }
    assert loaded.excluded == [
        Exclusion("12", "audio has no bytes"),
        Exclusion(
            "13",
            "audio: unrecognised media bytes (first bytes 6e 6f 74 20 61 75 64 69): expected "
            "PNG, JPEG, GIF, WebP, BMP, WAV, MP3, FLAC or Ogg",
        ),
        Exclusion("14", "audio bytes are image/png"),
    ]


def test_text_alternatives_replace_media_in_place(saved: Path) -> None:
    no_image = load(saved, use_image=False)
    assert no_image.samples[0].parts == [
        Part.of_text(PROMPT_10),
        Part.of_text("[Image Alternative Text]: Caption 10."),
        Part(kind="audio", data=WAV, media_type="audio/wav"),
    ]
    assert no_image.samples[0].metadata["text_alternatives"] == ["image"]

    # without audio nothing is excluded: the rows with broken audio need only their transcript
    no_audio = load(saved, use_audio=False)
    assert no_audio.excluded == []
    assert [s.id for s in no_audio.samples] == ["10", "11", "12", "13", "14"]
    assert [s.target for s in no_audio.samples] == ["A", "D", "B", "C", "C"]
    assert no_audio.samples[2].parts == [
        Part.of_text(PROMPT_10.replace("Question 10?", "Question 12?")),
        Part(kind="image", data=PNG, media_type="image/png"),
        Part.of_text(AUDIO_ALT_PREFIX + "Transcript 12."),
    ]
    assert no_audio.samples[2].metadata["text_alternatives"] == ["audio"]

    text_only = load(saved, use_image=False, use_audio=False).samples[1]
    assert [p.text for p in text_only.parts[1:]] == [
        IMAGE_ALT_PREFIX + "Caption 11.",
        "[Audio Alternative Text]: Transcript 11.",
    ]
    assert text_only.metadata["text_alternatives"] == ["image", "audio"]


def test_limit_counts_rows_before_exclusion(saved: Path) -> None:
    loaded = load(saved, limit=3)
    assert [s.id for s in loaded.samples] == ["10", "11"]
    assert [e.id for e in loaded.excluded] == ["12"]
    assert load(saved, limit=0).samples == []
    with pytest.raises(ValueError, match="limit must be >= 0, got -1"):
        load(saved, limit=-1)


def test_load_samples_logs_exclusions(saved: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="benchmarks.omnibench"):
        samples = load_samples(saved, limit=3)
    assert [s.id for s in samples] == ["10", "11"]
    assert [r.getMessage() for r in caplog.records] == [
        "OmniBench: 1 row(s) excluded: 12: audio has no bytes"
    ]


def test_decoded_media_are_reencoded() -> None:
    decoded = row(
        20,
        "green",
        PNG,
        WAV,
        image=Image.open(io.BytesIO(JPEG)),
        audio={"array": [0.0, 0.25, -2.0], "sampling_rate": 16000, "path": None},
    )
    sample = to_sample(decoded)
    assert sample.parts[1].media_type == "image/jpeg"
    assert Image.open(io.BytesIO(sample.parts[1].data or b"")).size == (12, 8)
    assert sample.parts[2].media_type == "audio/wav"
    with wave.open(io.BytesIO(sample.parts[2].data or b"")) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 16000)
        assert wav.readframes(3) == b"\x00\x00\x00\x20\x01\x80"  # 0, 8192, -32767 (clipped)


def test_media_from_a_local_path(tmp_path: Path) -> None:
    (tmp_path / "a.wav").write_bytes(WAV)
    sample = to_sample(
        row(21, "red", PNG, b"", audio={"bytes": None, "path": str(tmp_path / "a.wav")})
    )
    assert sample.parts[2] == Part(kind="audio", data=WAV, media_type="audio/wav")


# --- errors ----------------------------------------------------------------------------------


def one_line_error(call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(DatasetError) as info:
        call(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    assert one_line_error(load, missing) == f"dataset path {missing} does not exist: {FIX}"
    assert one_line_error(dataset_revision, missing) == (
        f"dataset path {missing} is not a directory: {FIX}"
    )


def test_missing_split_and_columns(tmp_path: Path) -> None:
    from datasets import Dataset, DatasetDict

    DatasetDict({"test": build_dataset(ROWS[:1])}).save_to_disk(str(tmp_path / "other"))
    assert one_line_error(load, tmp_path / "other") == (
        f"dataset path {tmp_path / 'other'} has no split 'train' (found: test): {FIX}"
    )
    Dataset.from_list([{"index": 1, "question": "q"}]).to_parquet(str(tmp_path / "train.parquet"))
    assert one_line_error(load_rows, tmp_path) == (
        f"dataset path {tmp_path} lacks column(s) 'task type', 'audio type', 'options', 'answer', "
        "'image', 'audio', 'image content', 'audio content' (found: index, question): " + FIX
    )


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            {"answer": "purple"},
            "row index 30: answer 'purple' is not one of its options: the answer column must "
            "hold the text of one option",
        ),
        (
            {"options": ["red", "green", "blue"]},
            "row index 30 has 3 options, expected a list of 4 strings: fix the options column",
        ),
        (
            {"options": "A. red B. green C. blue D. grey"},
            "row index 30 has str options, expected a list of 4 strings: fix the options column",
        ),
        ({"index": None}, "a row has no index: fix the index column"),
        (
            {"audio": "clip.mp3"},
            "row index 30 audio is a str: load the dataset without decoding the audio column",
        ),
    ],
)
def test_bad_rows(bad: dict[str, Any], message: str) -> None:
    assert one_line_error(to_sample, row(30, "red", PNG, WAV, **bad)) == message


def test_missing_caption_only_matters_when_used() -> None:
    bare = row(31, "red", PNG, WAV, **{"image content": None})
    assert to_sample(bare).parts[1].kind == "image"
    assert one_line_error(to_sample, bare, use_image=False) == (
        "row index 31 has no 'image content' text for the textual alternative: "
        "fill the 'image content' column or send the medium itself"
    )


def test_duplicate_index(tmp_path: Path) -> None:
    build_dataset([ROWS[0], ROWS[0]]).to_parquet(str(tmp_path / "train.parquet"))
    assert one_line_error(load, tmp_path) == "index 10 appears twice: fix the index column"


# --- revision and hub ------------------------------------------------------------------------


def test_dataset_revision(saved: Path) -> None:
    assert dataset_revision() == REVISION
    assert dataset_revision(None) == REVISION
    digest = hashlib.sha256()
    for file in sorted(p for p in saved.rglob("*") if p.is_file()):
        digest.update(f"{file.relative_to(saved).as_posix()}\0{file.stat().st_size}\0".encode())
        digest.update(file.read_bytes())
    assert dataset_revision(saved) == f"sha256:{digest.hexdigest()}"


def test_hub_load_uses_the_pinned_revision(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    calls: list[tuple[Any, ...]] = []

    def fake_load_dataset(path: str, *, split: str, revision: str) -> Any:
        calls.append((path, split, revision))
        return build_dataset(ROWS[:2])

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    assert [s.id for s in load_samples(limit=1)] == ["10"]
    assert calls == [("m-a-p/OmniBench", "train", REVISION)]


# --- scoring, answer key, summary ------------------------------------------------------------


def sample_with_target(target: str) -> Sample:
    return Sample(
        id="1",
        parts=[Part.of_text(PROMPT_10)],
        target=target,
        choices=["red", "green", "blue", "grey"],
    )


def test_score_both_modes() -> None:
    assert score("Thinking.\nANSWER: A", sample_with_target("A")) == [
        Score(scoring="evalscope", answer="A", correct=True, value=1.0),
        Score(scoring="original", answer="A", correct=True, value=1.0),
    ]
    # the original parser takes the capital article "A " for option A
    assert score("ANSWER: D. A dog barks once.", sample_with_target("D")) == [
        Score(scoring="evalscope", answer="D", correct=True, value=1.0),
        Score(scoring="original", answer="A", correct=False, value=0.0),
    ]
    assert score("I cannot tell.", sample_with_target("B")) == [
        Score(scoring="evalscope", answer=None, correct=False, value=0.0),
        Score(scoring="original", answer=None, correct=False, value=0.0),
    ]
    # option text is only read by the original parser
    assert score("I am fairly sure the colour is grey here", sample_with_target("D")) == [
        Score(scoring="evalscope", answer=None, correct=False, value=0.0),
        Score(scoring="original", answer="D", correct=True, value=1.0),
    ]


def test_answer_key_entry(saved: Path) -> None:
    sample = load(saved, use_image=False).samples[0]
    assert answer_key_entry(sample) == {
        "prompt_sha256": hashlib.sha256(PROMPT_10.encode("utf-8")).hexdigest(),
        "target": "A",
        "format": "answer_letter",
        "choices": ["A", "B", "C", "D"],
    }


def test_summarize_exact() -> None:
    rows = [
        ({"audio_type": "speech", "task_type": "count"}, True),
        ({"audio_type": "music", "task_type": "count"}, False),
        ({"audio_type": "speech", "task_type": "symbols"}, False),
        ({"audio_type": "sound event", "task_type": "count"}, True),
        ({"audio_type": "speech", "task_type": "symbols"}, 1.0),
    ]
    assert summarize(rows) == {
        "acc": 0.6,
        "n": 5,
        "by_audio_type": {"speech": 2 / 3, "music": 0.0, "sound event": 1.0},
        "by_task_type": {"count": 2 / 3, "symbols": 0.5},
    }
    empty = summarize([])
    assert empty["n"] == 0 and empty["acc"] != empty["acc"]  # NaN
    assert empty["by_audio_type"] == {} and empty["by_task_type"] == {}


def test_summarize_over_loaded_samples(saved: Path) -> None:
    samples = load(saved, use_audio=False).samples
    rows = [(s.metadata, s.target == "C") for s in samples]
    by_audio_type = omnibench.summarize(rows)["by_audio_type"]
    assert list(by_audio_type.items()) == [("music", 0.5), ("sound event", 0.5), ("speech", 0.0)]
