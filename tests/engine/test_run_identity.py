"""A run id is a contract: other data under the same id is refused with the store untouched;
growing a run (more epochs, more models) needs --extend; every aggregation of a different set
of records gets its own results version, and `latest` points at the newest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalfleet.cli.main import main
from evalfleet.simulator.process import start_simulator
from tests.support.helpers import result_table

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack


MODEL = "openai/sim-0.5"


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def requests(log: Path) -> list[dict]:
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def attached(monkeypatch, ray_address, prefect_api_url):
    """Runs in this process join the session's Ray and Prefect server."""
    monkeypatch.setenv("RAY_ADDRESS", ray_address)
    monkeypatch.setenv("PREFECT_API_URL", prefect_api_url)


def subset_parquet(demo_dataset: str, path: Path, n: int) -> Path:
    """The first n main questions as a single Parquet file in the upstream schema."""
    import datasets

    split = datasets.load_from_disk(demo_dataset, keep_in_memory=True)["zerobench"]
    split.select(range(n)).to_parquet(str(path))
    return path


def test_other_data_under_the_same_run_id_is_refused_and_nothing_changes(
    attached, demo_dataset, answer_key, tmp_path, capsys
):
    runs = tmp_path / "runs"
    log = tmp_path / "sim.jsonl"
    subset = subset_parquet(demo_dataset, tmp_path / "subset.parquet", 2)
    with start_simulator(answer_key, {"latency": {"ms": 1}}, log) as sim:
        base = ["run", "-m", MODEL, "-b", "zerobench", "--epochs", "1", "--run-id", "r1"]
        base += ["--store", str(runs), "--simulator-url", sim.url]
        assert main([*base, "--dataset-path", demo_dataset]) == 0
        sim.flush_log()
        asked = len(requests(log))
        assert asked == 4 * 2
        before = snapshot(runs)
        identity = json.loads((runs / "r1" / "manifest.json").read_text())["identity"]
        old = identity["benchmarks"]["zerobench"]["data"]
        capsys.readouterr()

        # A single Parquet file is a valid dataset path; its 2 questions are not the run's 4.
        assert main([*base, "--dataset-path", str(subset)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(
            "error: run id r1 already exists with a different request (zerobench data: "
            f"4 samples at {old['revision'][:19]}… (ids {old['sample_ids_sha256'][:8]}) -> "
            "2 samples at sha256:"
        )
        assert err.endswith("): resume it with the same settings, or choose a new --run-id")
        assert "\n" not in err

        # The same data, fewer questions: refused too.
        assert main([*base, "--dataset-path", demo_dataset, "--limit", "2"]) == 2
        assert "zerobench data: 4 samples" in capsys.readouterr().err

        # A new run id takes the single file.
        assert main([*base[:-6], "--run-id", "r2", *base[-4:], "--dataset-path", str(subset)]) == 0
        sim.flush_log()
    assert snapshot(runs / "r1") == {k[3:]: v for k, v in before.items() if k.startswith("r1/")}
    assert len(requests(log)) == asked + 2 * 2  # the refused runs asked nothing


def test_growing_a_run_needs_extend_and_keeps_every_results_version(
    attached, demo_dataset, answer_key, tmp_path, capsys
):
    runs = tmp_path / "runs"
    log = tmp_path / "sim.jsonl"
    with start_simulator(answer_key, {"latency": {"ms": 1}}, log) as sim:
        base = ["run", "-b", "zerobench", "--dataset-path", demo_dataset, "--run-id", "grow"]
        base += ["--store", str(runs), "--simulator-url", sim.url]
        assert main([*base, "-m", MODEL, "--epochs", "1"]) == 0
        first_version = json.loads((runs / "grow/results/latest.json").read_text())["version"]
        first_tables = snapshot(runs / "grow" / "results" / first_version)
        capsys.readouterr()

        assert main([*base, "-m", MODEL, "--epochs", "2"]) == 2
        assert capsys.readouterr().err.strip() == (
            "error: run id grow already exists with a different request (zerobench "
            "decodings: 2 -> 3 epochs): pass --extend to grow the run, or choose a new --run-id"
        )
        sim.flush_log()
        asked = len(requests(log))
        assert main([*base, "-m", MODEL, "--epochs", "2", "--extend"]) == 0
        sim.flush_log()
        grown = requests(log)[asked:]
        assert sorted(line["seed"] for line in grown) == [44] * 4  # only the new epoch
        assert main([*base, "-m", MODEL, "-m", "openai/sim-0.9", "--epochs", "2", "--extend"]) == 0
        sim.flush_log()
        added = requests(log)[asked + 4 :]
        assert {line["model"] for line in added} == {"sim-0.9"} and len(added) == 4 * 3

    manifest = json.loads((runs / "grow" / "manifest.json").read_text())
    assert [e["event"] for e in manifest["history"]] == ["created", "extended", "extended"]
    versions = sorted(p.name for p in (runs / "grow" / "results").iterdir() if p.is_dir())
    assert len(versions) == 3
    latest = json.loads((runs / "grow/results/latest.json").read_text())["version"]
    assert latest != first_version
    assert snapshot(runs / "grow" / "results" / first_version) == first_tables  # untouched
    summary = result_table(runs, "grow", "summary_zerobench.parquet")
    assert sorted(summary.model.unique()) == [MODEL, "openai/sim-0.9"]
    assert set(summary.n_epochs) == {3}
