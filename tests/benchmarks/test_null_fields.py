"""A null where a benchmark cannot do without a value (a question, an answer, a reference) is
refused at load with its sample id: `str(None)` sent "None" as the question, or graded answers
against it, and was paid for. A dataset with no rows is one line naming its path, not
pyarrow's "Must pass at least one table"."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datasets import Dataset, DatasetDict

from evalfleet.benchmarks.datbench.dataset import to_sample as datbench_sample
from evalfleet.benchmarks.omnibench.dataset import to_sample as omnibench_sample
from evalfleet.benchmarks.rome.dataset import check_item
from evalfleet.benchmarks.zerobench.dataset import load_samples, to_sample, upstream_features
from evalfleet.benchmarks.zerobench.demo import demo_questions
from evalfleet.core.types import DatasetError


def zerobench_row(**over) -> dict:
    row = {
        "question_id": "7",
        "question_text": "How many?",
        "question_images_decoded": [],
        "question_images": [],
        "question_answer": "3",
    }
    return {**row, **over}


@pytest.mark.parametrize("column", ["question_text", "question_answer"])
def test_zerobench_refuses_a_null_question_or_answer(column):
    with pytest.raises(DatasetError) as refused:
        to_sample(zerobench_row(**{column: None}))
    assert str(refused.value) == f"question '7' has no {column} (null): fill it or drop the row"
    assert to_sample(zerobench_row()).target == "3"


def test_omnibench_refuses_a_null_question_or_option():
    row = {"index": 5, "question": None, "options": ["a", "b", "c", "d"], "answer": "b"}
    with pytest.raises(DatasetError) as refused:
        omnibench_sample(row)
    assert str(refused.value) == "row index 5 has no question (null): fill it or drop the row"
    row = {**row, "question": "Which?", "options": ["a", "b", None, "d"]}
    with pytest.raises(DatasetError) as refused:
        omnibench_sample(row)
    assert str(refused.value) == "row index 5 has a null option: fill the options column"


@pytest.mark.parametrize("column", ["question", "answer"])
def test_datbench_refuses_a_null_question_or_answer(column):
    row = {"id": "c-1", "question": "What?", "answer": "4", column: None}
    with pytest.raises(DatasetError) as refused:
        datbench_sample(row, "counting", blind=True, judge_layout="upstream")
    assert str(refused.value) == (
        f"DatBench counting sample 'c-1' has no {column} (null): fill it or drop the row"
    )


def test_rome_refuses_a_null_reference():
    item = {
        "question_id": "q",
        "question": "What?",
        "reference": None,
        "evaluator": "number_matching",
        "evaluator_kwargs": {"value_to_match": 3},
        "task": "t",
    }
    with pytest.raises(DatasetError) as refused:
        check_item(item)
    assert str(refused.value) == (
        "ROME question 'q': reference is null: fill it or drop the question"
    )


def test_a_dataset_with_no_rows_is_named(tmp_path):
    saved = tmp_path / "saved"
    rows, _ = demo_questions()
    whole = Dataset.from_list(rows, features=upstream_features())
    DatasetDict({"zerobench": whole.select([])}).save_to_disk(str(saved))
    with pytest.raises(DatasetError) as refused:
        load_samples("zerobench", saved)
    assert str(refused.value) == (
        f"dataset path {saved}/zerobench has no rows (no data files): pass a dataset saved "
        "with save_to_disk or Parquet files in the upstream schema"
    )
    parquet = tmp_path / "parquet"
    parquet.mkdir()
    schema = upstream_features().arrow_schema
    pq.write_table(pa.Table.from_pylist([], schema=schema), parquet / "zerobench.parquet")
    with pytest.raises(DatasetError) as refused:
        load_samples("zerobench", parquet)
    assert str(refused.value) == (
        f"dataset path {parquet} split 'zerobench' has no rows: pass a dataset saved with "
        "save_to_disk or Parquet files in the upstream schema"
    )
