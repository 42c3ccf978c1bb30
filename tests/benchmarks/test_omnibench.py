"""OmniBench loading, prompt, scoring, answer key and summary on tiny datasets built here."""

from __future__ import annotations

import hashlib
import io
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from evalfleet.benchmarks.hub import fingerprint
from evalfleet.benchmarks.interface import Exclusion, MetricRow, ScoredItem
from evalfleet.benchmarks.omnibench import OMNIBENCH, OmniBenchOptions, dataset
from evalfleet.benchmarks.omnibench.dataset import (
    AUDIO_ALT_PREFIX,
    FIX,
    IMAGE_ALT_PREFIX,
    REVISION,
    TEMPLATE,
    prompt_text,
    to_sample,
    wav_bytes,
)
from evalfleet.benchmarks.omnibench.demo import build_dataset
from evalfleet.core.types import DatasetError, Part, Sample, Score


@dataclass
class Loaded:
    samples: list[Sample]
    excluded: list[Exclusion]


def load(path: Any = None, limit: int | None = None, **kwargs: Any) -> Loaded:
    samples, excluded, _ = dataset.load(path, limit, **kwargs)
    return Loaded(samples, excluded)


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
        "question": "Question 10?",
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


def test_benchmark_load_reports_exclusions_and_options(saved: Path) -> None:
    data = OMNIBENCH.load(str(saved), OMNIBENCH.options(), 3)
    assert [s.id for s in data.samples] == ["10", "11"]
    assert data.excluded == [Exclusion("12", "audio has no bytes")]
    assert data.revision == fingerprint(saved)
    assert data.source == f"dataset path {saved}"
    options = OMNIBENCH.options({"text_alternatives": ["audio"]})
    assert options == OmniBenchOptions(text_alternatives=["audio"])
    no_audio = OMNIBENCH.load(str(saved), options, 3)
    assert [s.id for s in no_audio.samples] == ["10", "11", "12"] and no_audio.excluded == []
    with pytest.raises(ValueError, match="text_alternatives"):
        OMNIBENCH.options({"text_alternatives": ["video"]})


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
    assert one_line_error(fingerprint, missing) == (
        f"dataset path {missing} does not exist: check --dataset-path (a local copy's folder "
        "or Parquet file)"
    )


def test_missing_split_and_columns(tmp_path: Path) -> None:
    from datasets import Dataset, DatasetDict

    DatasetDict({"test": build_dataset(ROWS[:1])}).save_to_disk(str(tmp_path / "other"))
    assert one_line_error(load, tmp_path / "other") == (
        f"dataset path {tmp_path / 'other'} has no split 'train' (found: test): {FIX}"
    )
    Dataset.from_list([{"index": 1, "question": "q"}]).to_parquet(str(tmp_path / "train.parquet"))
    assert one_line_error(load, tmp_path) == (
        f"dataset path {tmp_path} split 'train' lacks column(s) 'task type', 'audio type', "
        "'options', 'answer', 'image', 'audio', 'image content', 'audio content' "
        "(found: index, question): " + FIX
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
    digest = hashlib.sha256()
    for file in sorted(p for p in saved.rglob("*") if p.is_file()):
        digest.update(f"{file.relative_to(saved).as_posix()}\0{file.stat().st_size}\0".encode())
        digest.update(file.read_bytes())
    assert fingerprint(saved) == f"sha256:{digest.hexdigest()}"
    # datasets' cache files and locks beside the data do not change the fingerprint
    (saved / "train" / "cache-0123.arrow").write_bytes(b"cache")
    try:
        assert fingerprint(saved) == f"sha256:{digest.hexdigest()}"
    finally:
        (saved / "train" / "cache-0123.arrow").unlink()


def test_hub_load_uses_the_pinned_revision(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    calls: list[tuple[Any, ...]] = []

    def fake_load_dataset(path: str, name: str | None, *, split: str, revision: str) -> Any:
        calls.append((path, name, split, revision))
        return build_dataset(ROWS[:2])

    from evalfleet.benchmarks import hub

    sha = "0123456789abcdef0123456789abcdef01234567"  # what the Hub names REVISION now
    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    resolved = {("m-a-p/OmniBench", REVISION): sha}
    monkeypatch.setattr(hub, "resolve_revision", lambda *asked: resolved[asked])
    data = OMNIBENCH.load(None, OMNIBENCH.options(), 1)
    assert [s.id for s in data.samples] == ["10"]
    assert data.revision == sha  # the commit read is recorded, never the branch name
    assert data.source == f"m-a-p/OmniBench@{sha}"
    assert calls == [("m-a-p/OmniBench", None, "train", sha)]


# --- scoring, answer key, summary ------------------------------------------------------------


def sample_with_target(target: str) -> Sample:
    return Sample(
        id="1",
        parts=[Part.of_text(PROMPT_10)],
        target=target,
        choices=["red", "green", "blue", "grey"],
    )


def score(response: str, sample: Sample) -> list[Score]:
    return OMNIBENCH.score(sample, response, OMNIBENCH.options())


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
    assert OMNIBENCH.answer_key(sample, OMNIBENCH.options()) == [
        {
            "prompt_sha256": hashlib.sha256(PROMPT_10.encode("utf-8")).hexdigest(),
            "target": "A",
            "template": "The best matching option is {answer}.\nANSWER: {answer}",
            "choices": ["A", "B", "C", "D"],
        }
    ]


def item(sample_id: str, value: float, epoch: int = 0, score_error: str | None = None):
    return ScoredItem(sample_id, sample_id, epoch, value, value == 1.0, False, False, score_error)


def test_metrics_by_task_and_audio_type() -> None:
    meta = {
        "1": ("speech", "count"),
        "2": ("music", "count"),
        "3": ("speech", "symbols"),
        "4": ("sound event", "count"),
        "5": ("speech", "symbols"),
    }
    samples = {
        sid: Sample(sid, [], "A", metadata={"audio_type": a, "task_type": t})
        for sid, (a, t) in meta.items()
    }
    # sample 5 answered twice (1, 0): it counts once, as 0.5; an unparsable score is left out
    scored = [
        item("1", 1.0),
        item("2", 0.0),
        item("3", 0.0),
        item("4", 1.0),
        item("5", 1.0),
        item("5", 0.0, epoch=1),
        item("3", 0.0, epoch=1, score_error="unparsable"),
    ]
    rows = OMNIBENCH.metrics(scored, samples, "greedy", 1)
    se_all = (sum((v - 0.5) ** 2 for v in (1, 0, 0, 1, 0.5)) / 4) ** 0.5 / 5**0.5
    se_speech = (sum((v - 0.5) ** 2 for v in (1, 0, 0.5)) / 2) ** 0.5 / 3**0.5
    assert all(isinstance(r, MetricRow) and r.metric == "accuracy" for r in rows)
    assert [(r.group, r.value, r.n) for r in rows] == [
        ("", 0.5, 5),
        ("task_type=count", 2 / 3, 3),
        ("task_type=symbols", 0.25, 2),
        ("audio_type=speech", 0.5, 3),
        ("audio_type=music", 0.0, 1),
        ("audio_type=sound event", 1.0, 1),
    ]
    assert rows[0].se == pytest.approx(se_all, abs=1e-12)
    assert rows[3].se == pytest.approx(se_speech, abs=1e-12)
    assert rows[4].se == 0.0  # one sample
