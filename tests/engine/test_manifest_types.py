"""The run's manifest as one type (`engine.store.manifest_types.Manifest`): it round-trips to
the same bytes, reads the manifests older code wrote (a field they lack reads as its
default), and refuses every kind of damage with one message naming the file and the field."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evalfleet.benchmarks.interface import Exclusion
from evalfleet.core.types import Decoding
from evalfleet.engine.run.identity import (
    BenchmarkIdentity,
    DataIdentity,
    Identity,
    RunError,
    check_identity,
    identity_changes,
)
from evalfleet.engine.store import heartbeat
from evalfleet.engine.store.damage import DamagedFile
from evalfleet.engine.store.manifest import ManifestVersionError, read_manifest
from evalfleet.engine.store.manifest_types import (
    Beat,
    DatasetInfo,
    Event,
    Manifest,
    ModelInfo,
    OtherManifestVersion,
    UnreadableManifest,
)
from evalfleet.storage import LocalStore, layout

STORED = Path(__file__).resolve().parents[1] / "data" / "stored_runs" / "store"
ROME = STORED / "stored-rome" / "manifest.json"
SOURCE = "r1/manifest.json"


def rome() -> dict:
    return json.loads(ROME.read_bytes())


def written(raw: dict) -> bytes:
    return json.dumps(raw).encode()


def refusal(raw: dict | bytes) -> str:
    data = raw if isinstance(raw, bytes) else written(raw)
    with pytest.raises(UnreadableManifest) as caught:
        Manifest.from_bytes(data, SOURCE)
    return str(caught.value)


@pytest.mark.parametrize("run", ["stored-rome", "stored-zerobench"])
def test_a_manifest_older_code_wrote_reads_and_writes_back_the_same_bytes(run):
    blob = (STORED / run / "manifest.json").read_bytes()
    assert Manifest.from_bytes(blob).to_bytes() == blob


def test_its_fields_read_as_attributes():
    manifest = Manifest.from_bytes(ROME.read_bytes())
    rome_identity = manifest.identity.benchmarks["rome"]
    assert manifest.run_id == "stored-rome"
    assert manifest.identity.models == ("openai/sim-0.3", "openai/sim-0.7")
    assert manifest.identity.judges == ["anthropic/sim-0.9"]
    assert rome_identity.data == DataIdentity(
        "sha256:551f644261001da868c7960979a87831b8331bd345f75c03c51f6a6fc02b3581",
        10,
        "7d6c9ede8112f31440906d764176c300c324c779408128e96014cc68fd5e1c3c",
    )
    assert rome_identity.protocol == "sampled-k"
    assert rome_identity.decodings[3] == Decoding(0.7, 0.95, 16000, 45, None)
    assert dict(rome_identity.options) == {
        "annotations": "test.json",
        "judge_tasks": ["diagrams"],
        "tasks": [],
    }
    assert manifest.identity.expected_answers == 10 * 4 * 2
    assert manifest.datasets["rome"].samples == 10
    assert manifest.models["openai/sim-0.3"] == ModelInfo(
        "sim-0.3", "openai", "http://127.0.0.1:44101/v1", True
    )
    assert manifest.api_models == {
        "anthropic/sim-0.9": "sim-0.9",
        "openai/sim-0.3": "sim-0.3",
        "openai/sim-0.7": "sim-0.7",
    }
    assert manifest.history == (Event("created", "2026-11-26T12:57:42+00:00", "01868a3c737b"),)
    assert manifest.heartbeat is not None and manifest.heartbeat.pid == 7279
    assert heartbeat.liveness(manifest) == "finished"
    assert manifest.request.models == ["openai/sim-0.3", "openai/sim-0.7"]
    assert manifest.request.judge_model == "anthropic/sim-0.9"
    assert manifest.limit is None


def test_a_new_manifest_round_trips():
    identity = Identity(
        models=("a/m1", "b/m2"),
        benchmarks={
            "zerobench": BenchmarkIdentity(
                DataIdentity("sha256:00", 2, "ab" * 32),
                "zerobench-paper",
                (Decoding(temperature=0.0, seed=1), Decoding(temperature=0.7, seed=2)),
                {"subset": None},
            )
        },
        judge_model="c/j1",
        extra_judges=("c/j2",),
        max_image_side=768,
    )
    manifest = Manifest(
        run_id="r1",
        identity=identity,
        stored_request={"models": ["a/m1", "b/m2"], "limit": 2},
        datasets={"zerobench": DatasetInfo("hub x", "sha256:00", 2, (Exclusion("7", "no image"),))},
        models={"a/m1": ModelInfo("m1", "a", None, False)},
        history=(Event("created", "2026-01-01T00:00:00+00:00", "abc"),),
        created_at="2026-01-01T00:00:00+00:00",
        code_version="abc",
        heartbeat=Beat("running", "2026-01-01T00:00:10+00:00", 5.0, "s", "h", 12, None),
    )
    blob = manifest.to_bytes()
    again = Manifest.from_bytes(blob)
    assert again == manifest
    assert again.to_bytes() == blob
    assert again.limit == 2
    assert json.loads(blob)["identity"]["extra_judges"] == ["c/j2"]


def test_fields_older_manifests_lack_read_as_their_defaults():
    raw = rome()
    for name in ("heartbeat", "history", "created_at", "code_version", "models"):
        del raw[name]
    del raw["run_id"]
    del raw["datasets"]["rome"]["excluded"]
    for name in ("protocol", "options", "decodings"):
        del raw["identity"]["benchmarks"]["rome"][name]
    del raw["identity"]["max_image_side"]
    manifest = Manifest.from_bytes(written(raw))
    assert (manifest.run_id, manifest.created_at, manifest.code_version) == ("", None, None)
    assert (manifest.heartbeat, manifest.history, manifest.models) == (None, (), {})
    assert manifest.datasets["rome"].excluded == ()
    rome_identity = manifest.identity.benchmarks["rome"]
    assert (rome_identity.protocol, dict(rome_identity.options), rome_identity.decodings) == (
        None,
        {},
        (),
    )
    assert manifest.identity.max_image_side is None
    assert heartbeat.liveness(manifest) == "-"
    assert heartbeat.identity(manifest) is None


def test_a_manifest_without_its_run_id_takes_its_folders(tmp_path):
    raw = rome()
    del raw["run_id"]
    (tmp_path / "r1").mkdir()
    (tmp_path / "r1" / "manifest.json").write_bytes(written(raw))
    assert read_manifest(LocalStore(tmp_path), "r1").run_id == "r1"


def test_an_identity_stored_before_a_field_existed_is_the_same_identity():
    """`max_image_side` absent from an old identity reads as None: a resume with the same
    request is the same run, not one to extend."""
    old = rome()["identity"]
    del old["max_image_side"]
    read_old = Manifest.from_bytes(written({**rome(), "identity": old})).identity
    read_new = Manifest.from_bytes(ROME.read_bytes()).identity
    assert read_old == read_new
    assert check_identity("r1", read_old, read_new, extend=False) is False


def test_a_changed_identity_is_refused_in_words():
    ours = Manifest.from_bytes(ROME.read_bytes()).identity
    raw = rome()
    raw["identity"]["models"] = ["openai/sim-0.3"]
    raw["identity"]["benchmarks"]["rome"]["decodings"].pop()
    theirs = Manifest.from_bytes(written(raw)).identity
    with pytest.raises(RunError) as caught:
        check_identity("r1", ours, theirs, extend=False)
    assert str(caught.value) == (
        "run id r1 already exists with a different request (models: ['openai/sim-0.3', "
        "'openai/sim-0.7'] -> ['openai/sim-0.3']; rome decodings: 4 -> 3 epochs): resume it "
        "with the same settings, or choose a new --run-id"
    )
    assert check_identity("r1", theirs, ours, extend=True) is True


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"seed": 7}, "seed 42 -> 7"),
        (
            {"temperature": 0.2, "max_tokens": 900},
            "temperature 0.7 -> 0.2, max_tokens 16000 -> 900",
        ),
    ],
)
def test_a_changed_setting_is_named_with_its_values(change, words):
    """A changed --seed (or temperature, max tokens) was told only as "sampling settings"."""
    ours = Manifest.from_bytes(ROME.read_bytes()).identity
    raw = rome()
    decodings = raw["identity"]["benchmarks"]["rome"]["decodings"]
    for epoch, decoding in enumerate(decodings):
        decoding.update(change)
        if "seed" in change:
            decoding["seed"] += epoch
    theirs = Manifest.from_bytes(written(raw)).identity
    assert identity_changes(ours, theirs) == [f"rome decodings: {words}"]


def test_a_changed_temperature_is_named_behind_a_greedy_first_epoch():
    """ZeroBench's protocol asks a greedy epoch first: a changed --temperature differs from
    the first sampled epoch on, and a changed --seed beside it is named too."""
    greedy = Decoding(temperature=0.0, seed=0)
    old = (greedy, Decoding(temperature=0.7, top_p=0.95, seed=1))
    new = (Decoding(temperature=0.0, seed=5), Decoding(temperature=0.2, top_p=0.95, seed=6))
    data = DataIdentity("abc", 3, "0" * 64)

    def identity(decodings):
        return Identity(
            models=("openai/sim-0.5",),
            benchmarks={"zerobench": BenchmarkIdentity(data, "zerobench-paper", decodings)},
        )

    assert identity_changes(identity(old), identity(new)) == [
        "zerobench decodings: temperature 0.7 -> 0.2, seed 0 -> 5"
    ]
    assert identity_changes(identity(old), identity((greedy,))) == [
        "zerobench decodings: 2 -> 1 epochs"
    ]


def test_a_truncated_manifest_is_refused_naming_the_file():
    message = refusal(ROME.read_bytes()[:300])
    assert message.startswith(f"{SOURCE} is not a manifest (not JSON: ")


def test_garbage_is_refused_naming_the_file():
    assert refusal(b"#!garbage") == (
        f"{SOURCE} is not a manifest (not JSON: Expecting value: line 1 column 1 (char 0))"
    )
    assert refusal(hashlib.sha256(b"x").digest() * 37).startswith(
        f"{SOURCE} is not a manifest (not JSON: "
    )
    assert refusal(b"[1, 2]") == f"{SOURCE} is not a manifest (not a JSON object)"
    assert refusal(b"") == (
        f"{SOURCE} is not a manifest (not JSON: Expecting value: line 1 column 1 (char 0))"
    )


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        (
            ("identity", "benchmarks", "rome", "data", "samples"),
            "10",
            "identity.benchmarks.rome.data.samples is text, not an integer",
        ),
        (("identity", "models"), "openai/sim-0.3", "identity.models is text, not a list"),
        (("identity", "models", 0), 3, "identity.models[0] is a number, not text"),
        (
            ("identity", "benchmarks", "rome", "decodings", 1, "seed"),
            4.5,
            "identity.benchmarks.rome.decodings[1].seed is a number, not an integer",
        ),
        (("identity", "benchmarks", "rome", "data"), None, "no identity.benchmarks.rome.data"),
        (
            ("identity", "benchmarks", "rome", "options"),
            [],
            "identity.benchmarks.rome.options is a list, not an object",
        ),
        (
            ("models", "openai/sim-0.3", "simulated"),
            "yes",
            "models.openai/sim-0.3.simulated is text, not true or false",
        ),
        (("datasets", "rome", "excluded"), [{"reason": "x"}], "no datasets.rome.excluded[0].id"),
        (("history", 0), "created", "history[0] is text, not an object"),
        (("heartbeat", "at"), "yesterday", "heartbeat.at is 'yesterday', not an ISO time"),
        (
            ("heartbeat", "at"),
            "2026-11-26T12:57:50",
            "heartbeat.at is '2026-11-26T12:57:50', a time without its zone",
        ),
        (("heartbeat", "pid"), "7279", "heartbeat.pid is text, not an integer"),
        (("request", "limit"), "5", "request.limit is text, not an integer"),
        (("run_id",), 7, "run_id is a number, not text"),
        (("identity",), [], "no identity"),
    ],
)
def test_a_field_of_the_wrong_type_is_refused_naming_it(path, value, problem):
    raw = rome()
    holder = raw
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    assert refusal(raw) == f"{SOURCE} is not a manifest ({problem})"


@pytest.mark.parametrize(("version", "newer"), [(3, True), (1, False)])
def test_a_manifest_of_another_version_is_refused(version, newer):
    raw = {**rome(), "manifest_version": version}
    with pytest.raises(OtherManifestVersion) as caught:
        Manifest.from_bytes(written(raw), SOURCE)
    assert (caught.value.version, caught.value.newer) == (version, newer)
    assert str(caught.value) == f"{SOURCE} is not a manifest (manifest version {version}, not 2)"
    del raw["manifest_version"]  # the first manifests had none: version 1
    with pytest.raises(OtherManifestVersion) as caught:
        Manifest.from_bytes(written(raw), SOURCE)
    assert caught.value.version == 1


def test_an_empty_object_is_no_manifest_of_an_older_version():
    """`{}` was read as version 1: "written by an older evalfleet: choose a new --run-id"."""
    with pytest.raises(UnreadableManifest) as caught:
        Manifest.from_bytes(b"{}", SOURCE)
    assert not isinstance(caught.value, OtherManifestVersion)
    assert str(caught.value) == (
        f"{SOURCE} is not a manifest (neither manifest_version nor run_id)"
    )


def store_with(tmp_path: Path, blob: bytes) -> LocalStore:
    (tmp_path / "r1").mkdir()
    (tmp_path / "r1" / layout.manifest_key("r1").split("/", 1)[1]).write_bytes(blob)
    return LocalStore(tmp_path)


def test_the_store_names_a_damaged_manifest_with_its_repair(tmp_path):
    raw = rome()
    raw["identity"]["benchmarks"]["rome"]["data"]["samples"] = -1
    store = store_with(tmp_path, written(raw))
    with pytest.raises(DamagedFile) as caught:
        read_manifest(store, "r1")
    assert str(caught.value) == (
        f"{tmp_path}/r1/manifest.json is damaged (identity.benchmarks.rome.data.samples is -1, "
        "not a count): nothing can rebuild a manifest: restore it from a copy, or move the run "
        "aside and start a new --run-id"
    )


def test_the_store_names_the_evalfleet_a_manifest_needs(tmp_path):
    store = store_with(tmp_path, written({**rome(), "manifest_version": 3}))
    with pytest.raises(ManifestVersionError) as caught:
        read_manifest(store, "r1")
    assert caught.value.newer is True
    assert str(caught.value) == (
        f"run r1 in local directory {tmp_path} was written by a newer evalfleet (manifest "
        "version 3): upgrade evalfleet to use it"
    )


def test_a_request_that_does_not_validate_is_refused_when_asked_for():
    """The run is still read, listed and shown; its request is refused where it is needed."""
    from pydantic import ValidationError

    raw = rome()
    raw["request"]["benchmarks"] = ["no-such-benchmark"]
    manifest = Manifest.from_bytes(written(raw))
    assert manifest.identity.expected_answers == 80
    with pytest.raises(ValidationError):
        _ = manifest.request
