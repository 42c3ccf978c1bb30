"""What planning costs as a run grows: a run of 1,000,000 answers (10 simulated models x 20,000
samples x 5 epochs, synthetic text samples, nothing requested) planned by the real planner on
an empty local store: the manifest and plan written, the store listed, every item's key and
request hash made, what is left to ask found.

Figures (last line):
  plan_s          wall time of `engine.prepare.plan.plan` (the run resolved in memory before it)
  driver_peak_mb  the process's peak RSS (getrusage ru_maxrss), with what a run's driver
                  imports (Prefect's flow engine, Ray) and the samples
  bytes_per_item  (peak RSS - RSS before planning) / items: what each planned item holds
Before it: items, the samples' build time, RSS before planning.

Usage: python perf/plan_scale.py [--models 10] [--samples 20000] [--epochs 5] [--smoke]
  --smoke   2 models x 50 samples x 2 epochs: the same code in seconds (a check, not a figure)
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from perf.work import work_folder  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


SMOKE = {"models": 2, "samples": 50, "epochs": 2}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="200 items: a check, not a figure")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    if args.smoke:
        vars(args).update(SMOKE)

    import ray  # noqa: F401
    from synthetic import synthetic_run

    import evalfleet.flows.evaluate  # noqa: F401  (what a run's driver holds: Prefect's engine, Ray)
    from evalfleet.engine.prepare.plan import plan

    work = work_folder("plan-scale")
    started = time.perf_counter()
    run = synthetic_run(
        "plan-scale",
        work / "runs",
        models=args.models,
        samples=args.samples,
        epochs=args.epochs,
    )
    build_s = time.perf_counter() - started
    before = rss_mb()
    started = time.perf_counter()
    planned = plan(run)
    plan_s = time.perf_counter() - started
    items = planned.planned
    assert len(planned.todo) == items, "a new run asks every item"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"items={items} build_s={build_s:.1f} rss_before_plan_mb={before:.0f}")
    per_item = (peak - before) * 2**20 / items
    print(f"plan_s={plan_s:.1f} driver_peak_mb={peak:.0f} bytes_per_item={per_item:.0f}")


if __name__ == "__main__":
    main()
