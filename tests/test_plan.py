"""Planning: a resume records the inputs it used, so aggregate rebuilds the right plan."""

from __future__ import annotations

import json
import shutil

from flows.evaluate import prepare
from flows.request import EvalRequest
from storage import layout


def test_resume_with_a_moved_dataset_updates_the_manifest(tmp_path, demo_dataset):
    moved = tmp_path / "moved"
    shutil.copytree(demo_dataset, moved)
    base = dict(
        models=["openai/sim-0.5"],
        benchmarks=["zerobench"],
        run_id="r1",
        store=str(tmp_path / "runs"),
        simulator_url="http://127.0.0.1:9",
    )
    first = prepare(EvalRequest(**base, dataset_path=demo_dataset))
    assert first.new_run and len(first.items) == 4 * 6
    manifest_path = tmp_path / "runs" / layout.manifest_key("r1")
    before = json.loads(manifest_path.read_text())

    second = prepare(EvalRequest(**base, dataset_path=str(moved)))
    after = json.loads(manifest_path.read_text())
    assert not second.new_run
    assert after["request"]["dataset_path"] == str(moved)
    assert after["identity"] == before["identity"]
    assert after["created_at"] == before["created_at"]
    assert len(after["resumed_at"]) == 1
    # identical bytes, so the same revision hash and the same request hashes: nothing stale
    assert after["datasets"] == before["datasets"]
    assert [i.request_hash for i in second.items] == [i.request_hash for i in first.items]
