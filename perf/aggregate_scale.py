"""How long aggregating a large run takes, and how much memory: a synthetic ZeroBench run of
M models x S questions x E epochs (default 2 x 83,334 x 6 = 1,000,008 answers), one record per
answer written straight to a local store, then `evalfleet aggregate` in a child process.

    .venv/bin/python perf/aggregate_scale.py [--models 2] [--samples 83334] [--epochs 6]
                                             [--work DIR] [--keep] [--smoke]

`--smoke`: 2 models x 10 questions x 2 epochs, the same code in seconds (a check that the
script works, not a measurement: below 30,000 answers no scoring worker starts).

Prints, last: `records=<n> aggregate_s=<s> report_s=<s> command_s=<s> aggregate_peak_mb=<mb>
with_workers_peak_mb=<mb>`: the scoring and tables (as the command reports them), the report,
the whole command (its leaderboard and start-up too); the command's own peak RSS, and the
peak of its and its scoring workers' memory summed (PSS, read every half second). Writing
the records is not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

RUN_ID = "perf-aggregate"


def write_run(work: Path, models: int, samples: int, epochs: int) -> int:
    """The run's manifest and plan, and one record per answer (about a third right)."""
    from synthetic import synthetic_run

    from evalfleet.core.record import Cost, Record, Usage
    from evalfleet.engine.run.items import answer_items
    from evalfleet.engine.store.manifest import open_run
    from evalfleet.storage.local import LocalStore

    run = synthetic_run(RUN_ID, work / "runs", models=models, samples=samples, epochs=epochs)
    open_run(run.store, run.manifest, run.data, extend=False)
    store = LocalStore(str(work / "runs"))
    items = answer_items(run)
    targets = {s.id: s.target for s in run.data["zerobench"].samples}
    batch: dict[str, bytes] = {}
    for n, item in enumerate(items):
        key = item.key
        right = (n * 7 + key.epoch) % 3 == 0
        answer = targets[key.sample_id] if right else "unknown"
        record = Record(
            run_id=RUN_ID,
            stage=key.stage,
            model=key.model,
            benchmark=key.benchmark,
            sample_id=key.sample_id,
            epoch=key.epoch,
            request_hash=item.request_hash,
            provider="openai",
            api_model=key.model.split("/", 1)[1],
            model_reported=key.model.split("/", 1)[1],
            request=item.decoding,
            response=f"Step by step: the quantity is clear.\nSo the final answer is {{{answer}}}",
            finish_reason="stop",
            usage=Usage(120, 24, 0, 0),
            cost_usd=0.000216,
            cost=Cost(0.00012, 0.0, 0.000096, 0.0, 0.000216),
            latency_s=0.2,
            request_id=f"req_{n:x}",
            started_at="2026-11-26T10:00:00.000+00:00",
            finished_at="2026-11-26T10:00:00.200+00:00",
        )
        batch[item.store_key] = record.to_bytes()
        if len(batch) >= 20_000:
            store.put_many_if_absent(batch)
            batch = {}
    store.put_many_if_absent(batch)
    return len(items)


SMOKE = {"models": 2, "samples": 10, "epochs": 2}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=2)
    parser.add_argument("--samples", type=int, default=83_334)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--work", default=None, help="a folder to use (default: a new temp one)")
    parser.add_argument("--keep", action="store_true", help="keep the folder afterwards")
    parser.add_argument("--smoke", action="store_true", help="40 answers: a check, not a figure")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="evalfleet-agg-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        started = time.monotonic()
        if not (work / "runs" / RUN_ID / "manifest.json").exists():
            records = write_run(work, args.models, args.samples, args.epochs)
        else:
            records = args.models * args.samples * args.epochs
        print(f"wrote {records} records in {time.monotonic() - started:.0f} s", flush=True)
        command = [sys.executable, "-m", "evalfleet.cli.main", "aggregate", RUN_ID]
        command += ["--store", str(work / "runs")]
        from throughput import TreePeak

        # The run's samples are synthetic: the report would look for the media of ZeroBench's
        # revision on the Hub (tens of seconds of retries without a network, a download with).
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        started = time.monotonic()
        child = subprocess.Popen(
            command,
            cwd=Path(__file__).resolve().parents[1],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        tree = TreePeak(child.pid)
        _, stderr = child.communicate()
        elapsed = time.monotonic() - started
        tree_mb = tree.stop()
        if child.returncode != 0:
            raise SystemExit(f"aggregate failed ({child.returncode}):\n{stderr[-3000:]}")
        timing = re.search(r"tables in ([\d.]+) s, report in ([\d.]+) s", stderr)
        if timing is None:
            raise SystemExit(f"aggregate printed no timing line:\n{stderr[-3000:]}")
        tables_s, report_s = (float(x) for x in timing.groups())
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        latest = json.loads((work / "runs" / RUN_ID / "results" / "latest.json").read_text())
        print(f"version {latest['version']}", flush=True)
        print(
            f"records={records} aggregate_s={tables_s:.1f} report_s={report_s:.1f} "
            f"command_s={elapsed:.1f} aggregate_peak_mb={peak_mb:.0f} "
            f"with_workers_peak_mb={tree_mb:.0f}"
        )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
