"""Places of the wrong type in a store: a folder (or a link to nothing) where a record
belongs, a file where a folder belongs, a folder that takes no new file. The store names each
with its fix, lists what a run must set aside, moves it aside whole, and never takes a folder
for a record that exists."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from evalfleet.engine.run.state import list_records, quarantine
from evalfleet.storage import LocalStore, StoreError, open_store
from evalfleet.storage.layout import ItemKey, record_key
from tests.support.hostile_places import make_read_only, release

RUN = "r1"
HASH = "ab" * 32
ITEM = ItemKey.answer("openai/m", "zerobench", "7", 0)
KEY = record_key(RUN, ITEM, HASH)  # r1/completions/openai%2Fm/zerobench/7/0.abab….json


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "runs")


def test_a_folder_where_a_record_belongs_is_named_not_taken_for_the_record(store):
    path = Path(store.root, KEY)
    path.mkdir(parents=True)
    with pytest.raises(StoreError) as refused:
        store.put_if_absent(KEY, b"{}")
    assert str(refused.value) == (
        f"{path} is a folder where the record {KEY!r} belongs: move it aside "
        f"(`mv {path} {path}.moved`) and run again"
    )
    path.rmdir()
    assert store.put_if_absent(KEY, b"{}") is True
    assert store.put_if_absent(KEY, b"[]") is False  # a record there: it exists
    assert store.get(KEY) == b"{}"


def test_a_link_to_nothing_where_a_record_belongs_is_named(store):
    path = Path(store.root, KEY)
    path.parent.mkdir(parents=True)
    path.symlink_to(path.name)  # loops
    assert store.get(KEY) is None  # no bytes to read, as a folder has none
    with pytest.raises(StoreError, match="is a link that leads to nothing where the record"):
        store.put_if_absent(KEY, b"{}")


def test_the_listing_lists_an_empty_folder_with_size_zero_and_list_does_not(store):
    store.put("a/b/x.json", b"1")
    Path(store.root, "a/b/empty").mkdir()
    Path(store.root, "a/c").mkdir()
    pages = [entry for page in store.iter_pages("a") for entry in page]
    assert pages == [("a/b/empty/", 0), ("a/b/x.json", None), ("a/c/", 0)]
    assert store.list("a") == ["a/b/x.json"]


def test_a_folder_at_a_record_key_is_listed_as_that_record_empty(store):
    """Empty or not, it counts as the record, empty: the plan sets it aside and asks once."""
    other = record_key(RUN, ItemKey.answer("openai/m", "zerobench", "8", 0), HASH)
    store.put(KEY.replace("/7/", "/6/"), b"{}")  # a record as it should be
    Path(store.root, KEY).mkdir(parents=True)
    Path(store.root, other).mkdir(parents=True)
    Path(store.root, other, "notes.txt").write_text("x")
    Path(store.root, RUN, "completions/openai%2Fm/zerobench/9").mkdir()  # an empty sample folder
    listing = list_records(store, RUN, ("answer",))
    assert sorted(listing.empty) == sorted([KEY, other])
    assert listing.ok[ITEM] == {HASH[:16]: KEY}
    assert len(listing.ok) == 3


def test_quarantine_moves_a_folder_and_a_link_aside_whole_and_keeps_what_was_there(store):
    folder = Path(store.root, KEY)
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("kept")
    quarantine(store, RUN, [KEY])
    moved = Path(store.root, RUN, "quarantine", KEY[len(RUN) + 1 :])
    assert (moved / "notes.txt").read_text() == "kept"
    assert not folder.exists()
    folder.parent.joinpath(folder.name).symlink_to(folder.name)
    quarantine(store, RUN, [KEY])  # the same key again: beside the first, not over it
    second = Path(f"{moved}.2")
    assert second.is_symlink() and (moved / "notes.txt").read_text() == "kept"
    store.put(KEY, b"bad")
    quarantine(store, RUN, [KEY])
    assert Path(f"{moved}.3").read_bytes() == b"bad"
    assert not os.path.lexists(folder)


def test_a_file_where_a_folder_belongs_is_named_on_write_and_on_check(store):
    results = Path(store.root, RUN, "results")
    results.parent.mkdir(parents=True)
    results.write_text("x")
    with pytest.raises(StoreError) as refused:
        store.put(f"{RUN}/results/v-1/samples.parquet", b"1")
    assert str(refused.value) == (
        f"cannot write '{RUN}/results/v-1/samples.parquet': {results} is a file where the "
        f"store keeps a folder: move it aside (`mv {results} {results}.moved`) and run again"
    )
    with pytest.raises(StoreError) as checked:
        store.check_folders([f"{RUN}/plan/", f"{RUN}/results/"])
    assert str(checked.value) == (
        f"{results} is a file where the store keeps a folder: move it aside "
        f"(`mv {results} {results}.moved`) and run again"
    )
    assert not os.path.exists(Path(store.root, RUN, "plan"))  # a check makes nothing


def test_a_folder_that_takes_no_file_is_named_by_the_check(store, tmp_path):
    folder = Path(store.root, RUN, "completions")
    folder.mkdir(parents=True)
    make_read_only(folder)
    try:
        with pytest.raises(StoreError) as refused:
            store.check_folders([f"{RUN}/completions/openai%2Fm/zerobench/"])
    finally:
        release(tmp_path)
    assert str(refused.value).startswith(f"cannot write into {folder} (")
    assert str(refused.value).endswith(
        f"make it writable (`chmod u+w {folder}`, or `chattr -i` where it is immutable) and "
        "run again"
    )
    store.check_folders([f"{RUN}/completions/openai%2Fm/zerobench/"])  # writable again
    assert sorted(os.listdir(folder)) == []  # the probes are gone


def test_a_new_store_is_checked_at_its_nearest_folder(tmp_path):
    store = LocalStore(tmp_path / "new" / "runs")
    store.check_folders([f"{RUN}/results/"])
    assert not (tmp_path / "new").exists()


def test_what_is_no_folder_in_a_folder_is_listed_by_name(store):
    base = f"{RUN}/completions/openai%2Fm/zerobench/"
    Path(store.root, base, "7").mkdir(parents=True)
    Path(store.root, base, "8").write_text("x")
    Path(store.root, base, "9").symlink_to("7")  # a link to a folder is a folder
    Path(store.root, base, "10").symlink_to("10")  # a link to nothing is not
    assert store.not_folders(base) == ["10", "8"]
    assert store.not_folders(f"{RUN}/nothing/") == []


def test_s3_checks_the_run_prefix_with_one_probe_and_leaves_nothing(moto_server):
    bucket = f"evalfleet-test-{uuid.uuid4().hex[:8]}"
    moto_server.create_bucket(bucket)
    store = open_store(f"s3://{bucket}/team", s3_endpoint_url=moto_server.endpoint)
    store.check_folders([f"{RUN}/results/", f"{RUN}/completions/openai%2Fm/zerobench/"])
    assert store.list("") == []
    assert store.not_folders(RUN) == []


def test_a_run_is_refused_for_a_file_in_place_of_a_planned_sample_folder_only(store):
    from types import SimpleNamespace

    from evalfleet.engine.store.places import check_places

    data = {"zerobench": SimpleNamespace(by_id={"7": None, "a/b": None}, benchmark=None)}
    data["zerobench"].benchmark = SimpleNamespace(judge=None)
    base = Path(store.root, RUN, "completions/openai%2Fm/zerobench")
    base.mkdir(parents=True)
    (base / ".DS_Store").write_text("x")  # no sample's name: not in the way
    (base / "8").write_text("x")  # no planned sample
    check_places(RUN, store, ["openai/m"], [], data)
    (base / "a%2Fb").write_text("x")  # sample "a/b", percent-encoded
    with pytest.raises(StoreError) as refused:
        check_places(RUN, store, ["openai/m"], [], data)
    path = base / "a%2Fb"
    assert str(refused.value) == (
        f"{path} is not a folder, where the run keeps a sample's records: move it aside "
        f"(`mv {path} {path}.moved`) and run again"
    )
