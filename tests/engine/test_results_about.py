"""What scored a results version (`engine.store.about.ResultsAbout`, its `version.json`): it
round-trips, reads what older code wrote (a field it lacks reads as its default), and refuses
every kind of damage with one message naming the file; the store names it with its repair."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalfleet.core.types import Decoding
from evalfleet.engine.run.identity import BenchmarkIdentity, DataIdentity, Identity
from evalfleet.engine.store.about import ResultsAbout, UnreadableAbout
from evalfleet.engine.store.damage import DamagedFile
from evalfleet.engine.store.results import check_results, results_about
from evalfleet.storage import LocalStore, layout

VERSION = "v-0123456789ab"
SOURCE = f"r1/results/{VERSION}/version.json"
IDENTITY = Identity(
    models=("a/m1",),
    benchmarks={
        "zerobench": BenchmarkIdentity(
            DataIdentity("sha256:00", 3, "cd" * 32), "zerobench-paper", (Decoding(seed=1),), {}
        )
    },
)
# what the code before this type wrote (`engine.scoring.tables.write_results`)
OLDER = {
    "version": VERSION,
    "written_at": "2026-11-26T12:58:00+00:00",
    "records_scored_sha256": "11" * 32,
    "scorer_sha256": "22" * 32,
    "code_version": "01868a3c737b",
    "files": ["metrics.parquet", "samples.parquet", "version.json"],
    "identity": IDENTITY.to_dict(),
}


def refusal(data: bytes) -> str:
    with pytest.raises(UnreadableAbout) as caught:
        ResultsAbout.from_bytes(data, SOURCE)
    return str(caught.value)


def test_an_about_round_trips():
    about = ResultsAbout(
        VERSION, "2026-01-01T00:00:00+00:00", "11" * 32, "22" * 32, "abc", ("x.parquet",), IDENTITY
    )
    blob = about.to_bytes()
    assert ResultsAbout.from_bytes(blob) == about
    assert ResultsAbout.from_bytes(blob).to_bytes() == blob
    assert json.loads(blob)["about_version"] == 1


def test_what_older_code_wrote_reads_with_the_same_meaning():
    about = ResultsAbout.from_bytes(json.dumps(OLDER, indent=2).encode())
    assert about == ResultsAbout(
        VERSION,
        "2026-11-26T12:58:00+00:00",
        "11" * 32,
        "22" * 32,
        "01868a3c737b",
        ("metrics.parquet", "samples.parquet", "version.json"),
        IDENTITY,
        about_version=1,
    )
    assert {k: v for k, v in about.to_dict().items() if k != "about_version"} == OLDER


def test_an_about_that_says_only_its_version_reads_with_defaults():
    about = ResultsAbout.from_bytes(json.dumps({"version": VERSION}).encode())
    assert about == ResultsAbout(VERSION)
    assert (about.files, about.identity, about.written_at) == ((), None, None)


@pytest.mark.parametrize(
    ("blob", "problem"),
    [
        (json.dumps(OLDER).encode()[:40], "not JSON: Unterminated string starting at: line 1"),
        (b"#!garbage", "not JSON: Expecting value: line 1 column 1 (char 0)"),
        (b"", "not JSON: Expecting value: line 1 column 1 (char 0)"),
        (b"[]", "no results version named in it"),
        (json.dumps({**OLDER, "version": "latest"}).encode(), "no results version named in it"),
        (json.dumps({**OLDER, "files": "x"}).encode(), "files is text, not a list"),
        (json.dumps({**OLDER, "written_at": 5}).encode(), "written_at is a number, not text"),
        (
            json.dumps({**OLDER, "identity": {**OLDER["identity"], "models": [1]}}).encode(),
            "identity.models[0] is a number, not text",
        ),
        (
            json.dumps({**OLDER, "about_version": 2}).encode(),
            "about_version 2: written by a newer evalfleet",
        ),
        (
            json.dumps({**OLDER, "about_version": "1"}).encode(),
            "about_version is text, not an integer",
        ),
    ],
    ids=["truncated", "garbage", "emptied", "list", "no-version", "files", "time", "identity",
         "future", "version-type"],
)  # fmt: skip
def test_damage_is_refused_naming_the_file(blob, problem):
    message = refusal(blob)
    assert message.startswith(f"{SOURCE} is not a results version's about ({problem}")
    assert message.endswith(")")


def results_store(tmp_path: Path, about: dict) -> LocalStore:
    store = LocalStore(tmp_path)
    blob = json.dumps(about).encode()
    store.put(layout.results_key("r1", VERSION, "version.json"), blob)
    store.put(layout.results_key("r1", VERSION, "samples.parquet"), b"PAR1")
    store.put(layout.latest_results_key("r1"), blob)
    return store


def test_the_store_reads_the_latest_about(tmp_path):
    store = results_store(tmp_path, OLDER)
    assert results_about(store, "r1").identity == IDENTITY
    assert results_about(store, "r1", VERSION).files == tuple(OLDER["files"])


def test_the_store_names_a_damaged_about_with_its_repair(tmp_path):
    store = results_store(tmp_path, {**OLDER, "files": [3]})
    with pytest.raises(DamagedFile) as caught:
        check_results(store, "r1")
    assert str(caught.value) == (
        f"{tmp_path}/r1/results/latest.json is damaged (files[0] is a number, not text): "
        "`evalfleet aggregate r1` rebuilds the results from the run's records"
    )


@pytest.mark.parametrize(
    ("blob", "problem"),
    [
        (b"", "not JSON: Expecting value: line 1 column 1 (char 0)"),
        (None, "missing from its results version"),
    ],
)
def test_a_damaged_version_json_is_named_though_latest_reads(tmp_path, blob, problem):
    """latest.json is its copy, so `status` took the results for whole: `report` then failed
    on the version's own file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    store = results_store(tmp_path, {**OLDER, "files": ["samples.parquet", "version.json"]})
    table = tmp_path / "r1" / "results" / VERSION / "samples.parquet"
    pq.write_table(pa.table({"a": [1]}), table)  # whole: only version.json is damaged
    own = tmp_path / "r1" / "results" / VERSION / "version.json"
    if blob is None:
        own.unlink()
    else:
        own.write_bytes(blob)
    with pytest.raises(DamagedFile) as caught:
        check_results(store, "r1")
    assert str(caught.value) == (
        f"{own} is damaged ({problem}): `evalfleet aggregate r1` rebuilds the results from the "
        "run's records"
    )
