"""How far `evalfleet run --estimate` is from the bill: the demo's request (its two simulated
models on both ZeroBench splits), online and in batch mode, each estimated in an empty store
(the cold estimate: no measured answer lengths) and then run against the simulator.

Each mode prints the estimate's expected, low and high figures and the real cost (the sum of
the stored records' costs). Figures (last line):
  demo_estimate_error_pct   100 x (expected - real) / real, online
  batch_estimate_error_pct  the same in batch mode (batch prices)
  in_range                  of the two real costs, how many lie within the low-high range
Target: both errors within +-25 %, in_range=2.

Usage: python perf/estimate_error.py [--smoke]
  --smoke   the same request limited to 2 questions of each split (`--limit 2`): a check that
            the script works, not a measurement (the demo is small already: its time is the
            commands' start-up)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from perf.work import work_folder  # noqa: E402

EVALFLEET = str(Path(sys.executable).with_name("evalfleet"))
TOTAL = re.compile(r"expected \$([0-9.]+), low \$([0-9.]+) .*, high \$([0-9.]+) ")
MODES = {"demo": [], "batch": ["--batch", "--batch-poll-s", "0.5"]}


def evalfleet(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([EVALFLEET, *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"evalfleet {args[0]} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def real_cost(run: Path) -> float:
    paths = [*run.glob("completions/**/*.json"), *run.glob("judgements/**/*.json")]
    return sum(json.loads(p.read_text())["cost_usd"] for p in paths)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="2 questions a split: a check")
    return parser


def main() -> None:
    options = build_parser().parse_args()
    import datasets

    from evalfleet.benchmarks import registry
    from evalfleet.benchmarks.answer_key import write_answer_key
    from evalfleet.simulator.process import start_simulator

    datasets.disable_progress_bars()
    work = work_folder("estimate-error")
    demo = registry.get("zerobench").demo()
    dataset = str(demo.write(work / "data"))
    key = write_answer_key(dataset, list(demo.benchmarks), work / "answers.jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_ADDRESS"))}
    env.update(EVALFLEET_STACK=str(work / "stack"), RAY_USAGE_STATS_ENABLED="0")
    errors: dict[str, float] = {}
    in_range = 0
    with start_simulator(key, {"latency": {"ms": 20}}, work / "sim.jsonl") as sim:
        for mode, extra in MODES.items():
            store = work / mode
            args = [x for model in demo.models for x in ("-m", model)]
            args += [x for name in demo.benchmarks for x in ("-b", name)]
            args += ["--dataset-path", dataset, "--store", str(store), "--run-id", mode]
            args += ["--simulator-url", sim.url, *extra]
            args += ["--limit", "2"] if options.smoke else []
            found = TOTAL.search(evalfleet(env, "run", *args, "--estimate"))
            if found is None:
                raise SystemExit("the estimate printed no total")
            expected, low, high = (float(x) for x in found.groups())
            evalfleet(env, "run", *args)
            real = real_cost(store / mode)
            errors[mode] = 100 * (expected - real) / real
            in_range += low <= real <= high
            print(
                f"{mode}: expected ${expected:.6f}, low ${low:.6f}, high ${high:.6f}, "
                f"real ${real:.6f}: error {errors[mode]:+.1f} %",
                flush=True,
            )
    print(
        f"demo_estimate_error_pct={errors['demo']:.1f} "
        f"batch_estimate_error_pct={errors['batch']:.1f} in_range={in_range}"
    )


if __name__ == "__main__":
    main()
