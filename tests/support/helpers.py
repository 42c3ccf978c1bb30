"""Small helpers the end-to-end tests share: the demo dataset's samples, result tables, keys."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pandas as pd

from evalfleet.benchmarks.zerobench import dataset as zerobench_data
from evalfleet.core.types import Sample
from evalfleet.storage import layout

SPLITS = ("zerobench", "zerobench_subquestions")


def zerobench_samples(split: str, dataset_path: str | Path) -> list[Sample]:
    return zerobench_data.load_samples(split, dataset_path)[0]


def prompt_hashes(dataset_path: str | Path) -> dict[tuple[str, str], str]:
    """(split, sample id) -> sha256 of the prompt text the simulator logs."""
    return {
        (split, s.id): hashlib.sha256(s.parts[0].text.encode()).hexdigest()
        for split in SPLITS
        for s in zerobench_samples(split, dataset_path)
    }


def results_dir(runs: Path, run_id: str) -> Path:
    """The directory of a local run's latest results version."""
    latest = json.loads((runs / run_id / "results" / "latest.json").read_text())
    return runs / run_id / "results" / latest["version"]


def result_table(runs: Path, run_id: str, name: str) -> pd.DataFrame:
    return pd.read_parquet(results_dir(runs, run_id) / name)


def store_table(store, run_id: str, name: str) -> pd.DataFrame:
    """A table of a run's latest results from any store (local or S3)."""
    latest = json.loads(store.get(layout.latest_results_key(run_id)))
    blob = store.get(layout.results_key(run_id, latest["version"], name))
    return pd.read_parquet(io.BytesIO(blob))


def parse(run_id: str, key: str) -> layout.ItemKey | None:
    name = layout.parse_record_key(run_id, key)
    return None if name is None else name.item


def tagged_processes(tag: str) -> list[tuple[int, str]]:
    """Live processes whose environment carries EVALFLEET_TEST_TAG=tag (a run and everything it
    started inherit it), with their command lines."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            if f"EVALFLEET_TEST_TAG={tag}".encode() not in environ.split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z":  # a zombie is already dead, only not yet reaped
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append((int(entry.name), cmdline.strip()))
    return found


def wait_for_no_processes(tag: str, timeout_s: float = 30.0) -> list[tuple[int, str]]:
    """What is left of a tagged run after `timeout_s` (empty as soon as nothing is)."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        left = tagged_processes(tag)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def scratch_of(pid: int) -> list[Path]:
    """The services' folders (`stack.scratch`) a command with this pid left in the temp dir."""
    import tempfile

    return [
        folder
        for folder in Path(tempfile.gettempdir()).glob("evalfleet-*")
        if (folder / "owner.pid").is_file() and (folder / "owner.pid").read_text() == str(pid)
    ]


def answered_run(request, input_tokens: int, output_tokens: int = 0):
    """`request`'s run opened in its store with every answer stored as a worker writes it:
    the reply "so {7}" with the token counts given. Returns (the resolved run, its items)."""
    from evalfleet.engine.prepare.resolve import resolve
    from evalfleet.engine.run.items import answer_items
    from evalfleet.engine.store.manifest import open_run
    from evalfleet.providers.types import ProviderResponse, Usage
    from evalfleet.tasks.records import build_record

    run = resolve(request)
    open_run(run.store, run.manifest, run.data, extend=False)
    items = answer_items(run)
    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    response = ProviderResponse(text="so {7}", finish_reason="stop", usage=usage)
    for item in items:
        record = build_record(
            item,
            run.configs[item.key.model],
            response=response,
            error=None,
            attempts=1,
            attempt_errors=[],
            started=0.0,
            finished=1.0,
            latency_s=1.0,
        )
        assert run.store.put_if_absent(item.store_key, record.to_bytes())
    return run, items
