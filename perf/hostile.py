"""The hostile-input matrix (`tests/support/hostile.py`), every case, with its figures: each
command against damaged store files, hostile names and hostile numbers, on a fresh copy of a
small store, against the simulator, with one local Ray and one Prefect server for all.

    .venv/bin/python perf/hostile.py [--only TEXT] [--smoke]

`--smoke`: 4 cases spread over the matrix (of those `--only` keeps), the same code in well
under a minute: a check that the script works, not a measurement.

Prints a line per case that went wrong (none, when all is well), then, last:
`cases=<n> tracebacks=<n> paid_unstored=<n> lost=<n> silent=<n> billed_unrecorded_usd=<usd>`;
every figure but `cases` must be 0.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


SMOKE_CASES = 4


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="run only the cases whose name holds this")
    parser.add_argument("--smoke", action="store_true", help="4 cases: a check, not a figure")
    return parser


def spread(cases: list, count: int) -> list:
    """`count` cases evenly spaced over the list (its first among them), or all of a shorter
    one."""
    step = max(1, len(cases) // count)
    return cases[::step][:count]


def main() -> None:
    args = build_parser().parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    import ray

    from evalfleet.benchmarks.answer_key import write_answer_key
    from evalfleet.benchmarks.zerobench.demo import write_demo_dataset
    from evalfleet.simulator.process import start_simulator
    from evalfleet.tasks.ray_setup import RAY_SYSTEM_CONFIG
    from tests.support.hostile import (
        SIMULATOR_CONFIG,
        all_cases,
        build_base,
        run_case,
        summary,
    )
    from tests.support.prefect_server import prefect_server

    work = Path(tempfile.mkdtemp(prefix="evalfleet-hostile-"))
    started = time.monotonic()
    try:
        dataset = str(write_demo_dataset(work / "data" / "zerobench"))
        answers = write_answer_key(dataset, ["zerobench"], work / "answers.jsonl")
        context = ray.init(
            address="local",  # a new instance, never a `ray start` cluster of this machine
            num_cpus=2,
            include_dashboard=False,
            _temp_dir=str(work / "ray"),
            _system_config=RAY_SYSTEM_CONFIG,
        )
        os.environ["RAY_ADDRESS"] = context.address_info["gcs_address"]
        with prefect_server() as prefect_api_url:
            os.environ["PREFECT_API_URL"] = prefect_api_url
            log = work / "requests.jsonl"
            with start_simulator(answers, SIMULATOR_CONFIG, log) as sim:
                build_base(work / "base", dataset, sim.url)
                cases = [c for c in all_cases() if args.only in c.name]
                if args.smoke:
                    cases = spread(cases, SMOKE_CASES)
                outcomes = []
                for case in cases:
                    outcome = run_case(case, work / "base", work / "cases", sim, log, dataset)
                    outcomes.append(outcome)
                    if outcome.problems():
                        print(f"{case.name}: {', '.join(outcome.problems())}", flush=True)
        ray.shutdown()
    finally:
        from tests.support.hostile_places import release

        release(work)  # the read-only cases' immutable copies
        shutil.rmtree(work, ignore_errors=True)
    print(f"elapsed_s={time.monotonic() - started:.0f}")
    print(summary(outcomes))


if __name__ == "__main__":
    main()
