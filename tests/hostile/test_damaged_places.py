"""Damaged places and local state (`tests/support/hostile_places.py`): a folder or a looping
link where a record belongs, a file where a folder belongs, a folder that takes no new file,
the temporary Prefect server's damaged history, datasets with a null answer or question or no
rows. Set aside and asked once, or refused in one line naming the path; never a traceback,
never an item paid for twice, nothing paid that is not stored."""

from __future__ import annotations

import hashlib
import shutil

import pytest

from tests.support.hostile import BASE_RUN, run_case
from tests.support.hostile_places import places_cases, release

pytestmark = pytest.mark.slow  # starts Ray and a Prefect server

CASES = places_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_damaged_place_is_set_aside_or_named(
    case, hostile_store, session_services, tmp_path, demo_dataset
):
    base, sim, sim_log = hostile_store
    before = len(sim_log.read_text().splitlines()) if sim_log.exists() else 0
    try:
        outcome = run_case(case, base, tmp_path, sim, sim_log, demo_dataset)
    finally:
        release(tmp_path)
    assert outcome.problems() == [], (outcome.out[-2000:], outcome.err[-2000:])
    sim.flush_log()
    asked = len(sim_log.read_text().splitlines()) - before if sim_log.exists() else 0
    if outcome.code == 2:
        lines = [line for line in outcome.err.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("error: ")]
        assert len(errors) == 1, outcome.err
        assert asked == 0  # refused before the first request
    if case.name.startswith("run resumed | record a"):
        assert asked == 1  # the one item whose place was damaged, asked once
    assert "Traceback" not in outcome.out + outcome.err


def _refusal(case_name: str, hostile_store, tmp_path, demo_dataset) -> str:
    base, sim, sim_log = hostile_store
    case = next(c for c in CASES if c.name == case_name)
    try:
        outcome = run_case(case, base, tmp_path, sim, sim_log, demo_dataset)
    finally:
        release(tmp_path)
    assert outcome.code == 2, outcome.err
    return outcome.err.strip()


def test_a_file_in_place_of_a_model_folder_is_named_with_its_fix(
    hostile_store, session_services, tmp_path, demo_dataset
):
    name = "run resumed | completions/<model> a file"
    err = _refusal(name, hostile_store, tmp_path, demo_dataset)
    store = tmp_path / hashlib.sha256(name.encode()).hexdigest()[:12]  # as run_case names it
    path = f"{store}/{BASE_RUN}/completions/openai%2Fsim-0.3"
    assert err == (
        f"error: {path} is a file where the store keeps a folder: move it aside (`mv {path} "
        f"{path}.moved`) and run again"
    )


def test_a_read_only_model_folder_is_named_before_any_request(
    hostile_store, session_services, tmp_path, demo_dataset
):
    err = _refusal(
        "run resumed | completions/<model> read-only", hostile_store, tmp_path, demo_dataset
    )
    assert err.startswith("error: cannot write into ")
    assert f"/{BASE_RUN}/completions/openai%2Fsim-0.3/zerobench (" in err
    assert err.endswith("and run again")


def test_a_null_answer_is_refused_with_its_question_id(
    hostile_store, session_services, tmp_path, demo_dataset
):
    err = _refusal("run | dataset null answer", hostile_store, tmp_path, demo_dataset)
    assert err == "error: question '2' has no question_answer (null): fill it or drop the row"


def test_an_empty_dataset_is_named(hostile_store, session_services, tmp_path, demo_dataset):
    err = _refusal("run | dataset no rows", hostile_store, tmp_path, demo_dataset)
    assert err.startswith("error: dataset path ")
    assert ".data split 'zerobench' has no rows: " in err
    assert "Must pass at least one table" not in err


def test_the_damaged_history_is_kept_aside(hostile_store, session_services, tmp_path, demo_dataset):
    """The old file is kept, renamed; the new history is a working Prefect database."""
    base, sim, sim_log = hostile_store
    case = next(c for c in CASES if c.name == "run resumed | prefect-runs.db garbage")
    outcome = run_case(case, base, tmp_path, sim, sim_log, demo_dataset)
    assert outcome.problems() == [], outcome.err[-2000:]
    homes = [p for p in tmp_path.iterdir() if p.name.endswith(".home")]
    assert len(homes) == 1
    names = sorted(p.name for p in homes[0].iterdir() if p.name.startswith("prefect-runs.db"))
    assert names[0] == "prefect-runs.db"
    assert any(n.startswith("prefect-runs.db.damaged-") for n in names)
    from evalfleet.stack import prefect_history

    assert prefect_history.damage(homes[0] / "prefect-runs.db") is None
    assert prefect_history.has_tables(homes[0] / "prefect-runs.db")
    shutil.rmtree(homes[0])


def test_every_case_is_told_apart():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    assert len(names) >= 30
