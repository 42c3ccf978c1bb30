"""ZeroBench loading from tiny datasets in the upstream schema, saved both ways."""

from __future__ import annotations

import hashlib
import io
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datasets import Dataset, DatasetDict
from PIL import Image as PILImage

from evalfleet.benchmarks.hub import fingerprint, revision_of
from evalfleet.benchmarks.zerobench import ZEROBENCH
from evalfleet.benchmarks.zerobench import dataset as zerobench_data
from evalfleet.benchmarks.zerobench.dataset import INSTRUCTION, REVISION, to_sample
from evalfleet.benchmarks.zerobench.demo import write_demo_dataset
from evalfleet.core.types import DatasetError, Part, Sample, Score
from evalfleet.engine.prepare.reading import downscaled


def load_samples(split: str, path: Path | str | None, limit: int | None = None) -> list[Sample]:
    return zerobench_data.load_samples(split, path, limit)[0]


def load_rows(split: str, path: Path | str | None, limit: int | None = None) -> list[dict]:
    return zerobench_data.load_rows(split, path, limit)[0]


FEATURES = zerobench_data.upstream_features()
FIX = "pass a dataset saved with save_to_disk or Parquet files in the upstream schema"


def encode(fmt: str, size: tuple[int, int], colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", size, colour).save(out, format=fmt)
    return out.getvalue()


PNG_A = encode("PNG", (40, 30), (255, 0, 0))
JPEG_B = encode("JPEG", (300, 100), (0, 128, 255))
PNG_C = encode("PNG", (20, 60), (0, 200, 0))


def row(qid: str, text: str, images: list[tuple[str, bytes]], answer: str) -> dict:
    return {
        "question_id": qid,
        "question_text": text,
        "question_images_decoded": [{"bytes": data, "path": name} for name, data in images],
        "question_images": [name for name, _ in images],
        "question_answer": answer,
        "image_attribution": f"attribution {qid}",
    }


MAIN_ROWS = [
    row("1", "How many red squares?", [("images/1_0.png", PNG_A)], "3"),
    row(
        "2",
        "Compare the images.",
        [("images/2_0.jpg", JPEG_B), ("images/2_1.png", PNG_C)],
        "down, right",
    ),
    row("3", "No image here.", [], "11.90"),
]
SUB_ROWS = [
    row("1_1", "Count the squares.", [("images/1_0.png", PNG_A)], "3"),
    row("1_2", "What colour?", [("images/1_0.png", PNG_A)], "Red"),
    row("2_1", "First move?", [("images/2_0.jpg", JPEG_B), ("images/2_1.png", PNG_C)], "down"),
]


def dataset(rows: list[dict]) -> Dataset:
    return Dataset.from_dict({k: [r[k] for r in rows] for k in FEATURES}, features=FEATURES)


def both_splits() -> DatasetDict:
    return DatasetDict(
        {"zerobench": dataset(MAIN_ROWS), "zerobench_subquestions": dataset(SUB_ROWS)}
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("saved") / "zerobench"
    both_splits().save_to_disk(str(path))
    return path


@pytest.fixture(scope="module")
def parquet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("parquet")
    for split, ds in both_splits().items():
        ds.to_parquet(str(path / f"{split}.parquet"))
    return path


def check_main_split(samples: list) -> None:
    assert [s.id for s in samples] == ["1", "2", "3"]
    assert [s.group_id for s in samples] == ["1", "2", "3"]
    assert [s.target for s in samples] == ["3", "down, right", "11.90"]
    first, second, third = samples
    assert first.parts == [
        Part.of_text("How many red squares?" + INSTRUCTION),
        Part(kind="image", data=PNG_A, media_type="image/png"),
    ]
    assert first.parts[0].text == (
        "How many red squares?\n\n\nLet's think step by step and give the final answer in "
        "curly braces, like this: {final answer}"
    )
    assert [p.kind for p in second.parts] == ["text", "image", "image"]
    assert [p.media_type for p in second.parts] == [None, "image/jpeg", "image/png"]
    assert [p.data for p in second.parts[1:]] == [JPEG_B, PNG_C]
    assert third.parts == [Part.of_text("No image here." + INSTRUCTION)]
    assert second.metadata == {
        "question": "Compare the images.",
        "question_images": ["images/2_0.jpg", "images/2_1.png"],
        "image_attribution": "attribution 2",
    }


def check_sub_split(samples: list) -> None:
    assert [s.id for s in samples] == ["1_1", "1_2", "2_1"]
    assert [s.group_id for s in samples] == ["1", "1", "2"]
    assert [s.target for s in samples] == ["3", "Red", "down"]
    assert samples[2].parts[0].text == "First move?" + INSTRUCTION
    assert [p.data for p in samples[2].parts[1:]] == [JPEG_B, PNG_C]


def test_the_schema_datasets_are_written_in_is_upstreams():
    """benchmarks.md: the five required columns, the images a list of HF `Image`."""
    assert {name: repr(f) for name, f in FEATURES.items()} == {
        "question_id": "Value('string')",
        "question_text": "Value('string')",
        "question_images_decoded": "List(Image(mode=None, decode=True))",
        "question_images": "List(Value('string'))",
        "question_answer": "Value('string')",
        "image_attribution": "Value('string')",
    }
    assert set(zerobench_data.REQUIRED_COLUMNS) < set(FEATURES)


def test_instruction_is_exact() -> None:
    assert len(INSTRUCTION) == 96
    assert (
        hashlib.sha256(INSTRUCTION.encode("utf-8")).hexdigest()
        == "e44e99a1e412e0b75e53751bbd4f536f75ffd9e2975918dc8bd45f9f55dd873f"
    )


def test_load_dataset_dict_saved_to_disk(saved: Path) -> None:
    check_main_split(load_samples("zerobench", saved))
    check_sub_split(load_samples("zerobench_subquestions", saved))


def test_load_parquet_per_split_files(parquet_dir: Path) -> None:
    check_main_split(load_samples("zerobench", parquet_dir))
    check_sub_split(load_samples("zerobench_subquestions", parquet_dir))


def test_load_parquet_in_hub_layout(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    for split, ds in both_splits().items():
        ds.to_parquet(str(tmp_path / "data" / f"{split}-00000-of-00001.parquet"))
    check_main_split(load_samples("zerobench", tmp_path))
    check_sub_split(load_samples("zerobench_subquestions", tmp_path))


def test_load_parquet_shards_in_split_directory(tmp_path: Path) -> None:
    (tmp_path / "zerobench").mkdir()
    main = dataset(MAIN_ROWS)
    main.select([0, 1]).to_parquet(str(tmp_path / "zerobench" / "part-0.parquet"))
    main.select([2]).to_parquet(str(tmp_path / "zerobench" / "part-1.parquet"))
    check_main_split(load_samples("zerobench", tmp_path))


def test_load_parquet_without_hf_metadata(tmp_path: Path) -> None:
    table = pa.Table.from_pylist(MAIN_ROWS)
    assert table.schema.metadata is None
    pq.write_table(table, tmp_path / "zerobench.parquet")
    check_main_split(load_samples("zerobench", tmp_path))


def test_load_single_datasets_saved_to_disk(tmp_path: Path) -> None:
    for split, ds in both_splits().items():
        ds.save_to_disk(str(tmp_path / "per_split" / split))
    check_main_split(load_samples("zerobench", tmp_path / "per_split"))
    check_sub_split(load_samples("zerobench_subquestions", tmp_path / "per_split"))
    dataset(SUB_ROWS).save_to_disk(str(tmp_path / "one"))
    check_sub_split(load_samples("zerobench_subquestions", tmp_path / "one"))


def test_single_dataset_with_other_split_is_rejected(tmp_path: Path) -> None:
    ds = Dataset.from_dict(
        {k: [r[k] for r in MAIN_ROWS] for k in FEATURES}, features=FEATURES, split="zerobench"
    )
    ds.save_to_disk(str(tmp_path))
    assert len(load_samples("zerobench", tmp_path)) == 3
    with pytest.raises(DatasetError, match="holds split 'zerobench', not 'zerobench_sub"):
        load_samples("zerobench_subquestions", tmp_path)


def test_images_stay_undecoded_in_rows(saved: Path) -> None:
    rows = load_rows("zerobench", saved, limit=1)
    # the Image feature keeps the file name of the path it was given
    assert rows[0]["question_images_decoded"] == [{"bytes": PNG_A, "path": "1_0.png"}]


def test_decoded_pil_images_are_accepted(saved: Path) -> None:
    decoded = DatasetDict.load_from_disk(str(saved))["zerobench"][0]
    assert isinstance(decoded["question_images_decoded"][0], PILImage.Image)
    sample = to_sample(decoded)
    assert sample.parts[1].media_type == "image/png"
    with PILImage.open(io.BytesIO(sample.parts[1].data)) as img:
        assert img.size == (40, 30)
        assert img.getpixel((0, 0)) == (255, 0, 0)


def test_limit_takes_the_first_rows(saved: Path) -> None:
    assert [s.id for s in load_samples("zerobench", saved, limit=2)] == ["1", "2"]
    assert [s.id for s in load_samples("zerobench_subquestions", saved, limit=2)] == [
        "1_1",
        "1_2",
    ]
    assert load_samples("zerobench", saved, limit=0) == []
    assert len(load_samples("zerobench", saved, limit=50)) == 3
    with pytest.raises(ValueError, match="limit must be >= 0"):
        load_samples("zerobench", saved, limit=-1)


def test_max_image_side_downscales_as_upstream(saved: Path) -> None:
    second = downscaled(load_samples("zerobench", saved)[1], 64)
    assert second.parts[0] == Part.of_text("Compare the images." + INSTRUCTION)
    sizes = []
    for part in second.parts[1:]:
        with PILImage.open(io.BytesIO(part.data)) as img:
            sizes.append((img.size, img.format))
    assert sizes == [((64, 21), "JPEG"), ((20, 60), "PNG")]
    assert [p.media_type for p in second.parts[1:]] == ["image/jpeg", "image/png"]


def test_dataset_revision(saved: Path, tmp_path: Path) -> None:
    assert revision_of(REVISION, None) == REVISION
    revision = revision_of(REVISION, saved)
    assert revision == fingerprint(saved)
    assert revision.startswith("sha256:") and len(revision) == len("sha256:") + 64
    load_samples("zerobench", saved)  # loading must not write into the dataset directory
    assert fingerprint(saved) == revision
    copy = shutil.copytree(saved, tmp_path / "copy")
    assert fingerprint(copy) == revision
    (copy / "extra.txt").write_text("x")
    assert fingerprint(copy) != revision
    assert ZEROBENCH.load(str(saved), ZEROBENCH.options(), None).revision == revision


def test_score_reports_both_modes() -> None:
    sample = Sample("1", [], "11.90")
    assert ZEROBENCH.score(sample, "So {11.9}", ZEROBENCH.options()) == [
        Score("upstream", "11.9", False, 0.0),
        Score("robust", "11.9", True, 1.0),
    ]


def test_answer_key_entry(saved: Path) -> None:
    sample = load_samples("zerobench", saved)[0]
    text = "How many red squares?" + INSTRUCTION
    assert ZEROBENCH.answer_key(sample, ZEROBENCH.options()) == [
        {
            "prompt_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "target": "3",
            "template": "So the final answer is {{answer}}",
        }
    ]


# --- errors: one line naming the path, the problem and the fix ----------------------------


def one_line_error(split: str, path: Path | str) -> str:
    with pytest.raises(DatasetError) as info:
        load_samples(split, path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_missing_directory(tmp_path: Path) -> None:
    path = tmp_path / "nope"
    assert one_line_error("zerobench", path) == f"dataset path {path} does not exist: {FIX}"


def test_path_is_a_file(tmp_path: Path) -> None:
    path = tmp_path / "file.txt"
    path.write_text("x")
    assert one_line_error("zerobench", path) == (
        f"dataset path {path} is a file but not Parquet: {FIX}"
    )


def test_missing_split_in_dataset_dict(tmp_path: Path) -> None:
    DatasetDict({"zerobench": dataset(MAIN_ROWS), "other": dataset(MAIN_ROWS)}).save_to_disk(
        str(tmp_path)
    )
    assert one_line_error("zerobench_subquestions", tmp_path) == (
        f"dataset path {tmp_path} has no split 'zerobench_subquestions' "
        f"(found: zerobench, other): {FIX}"
    )


def test_missing_split_in_parquet_directory(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    dataset(SUB_ROWS).to_parquet(
        str(tmp_path / "data" / "zerobench_subquestions-00000-of-00001.parquet")
    )
    assert one_line_error("zerobench", tmp_path) == (
        f"dataset path {tmp_path} has no split 'zerobench' (found: zerobench_subquestions): {FIX}"
    )


def test_empty_directory(tmp_path: Path) -> None:
    assert one_line_error("zerobench", tmp_path) == (
        f"dataset path {tmp_path} has no split 'zerobench' (found: none): {FIX}"
    )


def test_unknown_split(saved: Path) -> None:
    assert one_line_error("test", saved) == (
        "unknown ZeroBench split 'test': use one of zerobench, zerobench_subquestions"
    )


def test_missing_columns(tmp_path: Path) -> None:
    pq.write_table(
        pa.table({"question_id": ["1"], "question_text": ["q"]}), tmp_path / "zerobench.parquet"
    )
    assert one_line_error("zerobench", tmp_path) == (
        f"dataset path {tmp_path} split 'zerobench' lacks column(s) 'question_images_decoded', "
        f"'question_images', 'question_answer' (found: question_id, question_text): {FIX}"
    )


def test_unreadable_parquet(tmp_path: Path) -> None:
    (tmp_path / "zerobench.parquet").write_bytes(b"not parquet at all")
    message = one_line_error("zerobench", tmp_path)
    assert message.startswith(f"dataset path {tmp_path} split 'zerobench' cannot be read (")
    assert message.endswith(f"): {FIX}")


def test_image_list_length_mismatch(tmp_path: Path) -> None:
    bad = dict(MAIN_ROWS[1], question_images=["images/2_0.jpg"])
    dataset([MAIN_ROWS[0], bad]).to_parquet(str(tmp_path / "zerobench.parquet"))
    assert one_line_error("zerobench", tmp_path) == (
        "question '2' lists 1 question_images but has 2 question_images_decoded: "
        "fix the dataset so both lists match"
    )


def test_subquestion_id_without_underscore(tmp_path: Path) -> None:
    dataset([SUB_ROWS[0], dict(SUB_ROWS[1], question_id="12")]).to_parquet(
        str(tmp_path / "zerobench_subquestions.parquet")
    )
    assert one_line_error("zerobench_subquestions", tmp_path) == (
        "subquestion id '12' is not '<main>_<sub>': "
        "fix the question_id column of the zerobench_subquestions split"
    )


def test_duplicate_question_ids(tmp_path: Path) -> None:
    dataset([MAIN_ROWS[0], MAIN_ROWS[0]]).to_parquet(str(tmp_path / "zerobench.parquet"))
    assert one_line_error("zerobench", tmp_path) == (
        "question_id '1' appears twice in split 'zerobench'"
    )


def test_image_bytes_that_are_not_media(tmp_path: Path) -> None:
    rows = [dict(MAIN_ROWS[0], question_images_decoded=[{"bytes": b"junk", "path": "x"}])]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "zerobench.parquet")
    message = one_line_error("zerobench", tmp_path)
    assert message.startswith("question '1' image 0: unrecognised media bytes (first bytes 6a 75")


def test_image_without_bytes(tmp_path: Path) -> None:
    rows = [dict(MAIN_ROWS[0], question_images_decoded=[{"bytes": None, "path": "missing.png"}])]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "zerobench.parquet")
    assert one_line_error("zerobench", tmp_path) == (
        "question '1' image 0 has no bytes (dict): store the image bytes in question_images_decoded"
    )


# --- the demo dataset --------------------------------------------------------------------


def test_demo_dataset_round_trips(tmp_path: Path) -> None:
    from evalfleet.benchmarks.zerobench.demo import DOTS, draw_dots, draw_maze

    path = write_demo_dataset(tmp_path / "demo")
    assert path == tmp_path / "demo"
    main = load_samples("zerobench", path)
    subs = load_samples("zerobench_subquestions", path)
    assert [(s.id, s.target) for s in main] == [
        ("1", "24"),
        (
            "2",
            "right, down, down, right, right, up, up, right, right, down, down, down, left, "
            "down, down, right",
        ),
        ("3", "12"),
        ("4", "12"),
    ]
    assert [(s.id, s.group_id, s.target) for s in subs] == [
        ("1_1", "1", "3"),
        ("1_2", "1", "2"),
        ("1_3", "1", "4"),
        ("2_1", "2", "13"),
        ("2_2", "2", "16"),
        ("2_3", "2", "right"),
        ("3_1", "3", "9"),
        ("3_2", "3", "green"),
        ("4_1", "4", "5"),
        ("4_2", "4", "7"),
        ("4_3", "4", "second"),
    ]
    assert all(s.parts[0].text.endswith(INSTRUCTION) for s in main + subs)
    assert all(p.media_type == "image/png" for s in main + subs for p in s.parts[1:])
    assert [len(s.parts) for s in main] == [2, 2, 2, 3]
    assert main[1].parts[1].data == draw_maze() == subs[3].parts[1].data
    assert [p.data for p in main[3].parts[1:]] == [draw_dots(DOTS[0]), draw_dots(DOTS[1])]
    assert main[3].metadata["question_images"] == ["images/4_0.png", "images/4_1.png"]


def test_demo_dataset_is_byte_identical_and_rewritable(tmp_path: Path) -> None:
    first = write_demo_dataset(tmp_path / "a")
    second = write_demo_dataset(tmp_path / "b")
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)
    revision = fingerprint(first)
    assert write_demo_dataset(first) == first
    assert fingerprint(first) == revision


def test_demo_dataset_refuses_a_foreign_directory(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="is not a saved dataset"):
        write_demo_dataset(tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_demo_answers_follow_from_the_drawings() -> None:
    from evalfleet.benchmarks.zerobench.demo import (
        BARS,
        MAZE,
        RGB,
        draw_bars,
        draw_maze,
        shortest_path,
    )

    with PILImage.open(io.BytesIO(draw_maze())) as img:
        rgb = img.convert("RGB")
        symbol = {(0, 0, 0): "#", RGB["green"]: "S", RGB["red"]: "G", (255, 255, 255): "."}
        grid = tuple(
            "".join(symbol[rgb.getpixel((c * 40 + 20, r * 40 + 20))] for c in range(6))
            for r in range(6)
        )
    assert grid == MAZE
    assert shortest_path(grid)[:3] == ["right", "down", "down"]
    with PILImage.open(io.BytesIO(draw_bars())) as img:
        rgb = img.convert("RGB")
        heights = []
        for colour, _ in BARS:
            top = min(
                y
                for y in range(rgb.height)
                for x in range(rgb.width)
                if rgb.getpixel((x, y)) == RGB[colour]
            )
            heights.append((colour, (220 - top) // 20))
    assert heights == [("red", 7), ("green", 3), ("blue", 9), ("orange", 5)]
