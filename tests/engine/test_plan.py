"""Planning: a resume from a moved copy of the same data is the same run; its manifest records
the inputs it used and its history, and nothing is stale."""

from __future__ import annotations

import json
import shutil

from engine.prepare.plan import plan
from engine.prepare.resolve import resolve
from engine.run.request import EvalRequest
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
    first = plan(resolve(EvalRequest(**base, dataset_path=demo_dataset)))
    assert first.event == "new" and len(first.answers) == 4 * 6
    manifest_path = tmp_path / "runs" / layout.manifest_key("r1")
    before = json.loads(manifest_path.read_text())
    assert [e["event"] for e in before["history"]] == ["created"]
    assert (tmp_path / "runs" / layout.plan_key("r1", "zerobench")).is_file()

    second = plan(resolve(EvalRequest(**base, dataset_path=str(moved))))
    after = json.loads(manifest_path.read_text())
    assert second.event == "resumed"
    assert after["request"]["dataset_path"] == str(moved)
    assert after["identity"] == before["identity"]
    assert after["created_at"] == before["created_at"]
    assert [e["event"] for e in after["history"]] == ["created", "resumed"]
    # identical bytes, so the same revision hash and the same request hashes: nothing stale
    assert after["datasets"]["zerobench"]["revision"] == before["datasets"]["zerobench"]["revision"]
    assert after["datasets"]["zerobench"]["source"] == f"dataset path {moved}"
    assert [i.request_hash for i in second.answers] == [i.request_hash for i in first.answers]
