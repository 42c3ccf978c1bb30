"""A small run, cold: `evalfleet run` on 12 items against the simulator at 200 ms, from the
command's start to its exit, beside inspect_ai on the same 12 items against the same simulator.

No stack is running (no `evalfleet up`, no RAY_ADDRESS or PREFECT_API_URL): the run starts
what it needs, as a user's first command does. Each evalfleet run gets a new store and run id.
inspect_ai is installed by this script in a throwaway environment of its own (`uv venv` and
`uv pip install inspect-ai`, from the package registry), and asked through its
OpenAI-compatible provider (`openai-api/sim/sim-0.5`, SIM_BASE_URL the simulator) with the same
12 prompts (each sample's text and image, as evalfleet reads them), temperature 0, scored by
`includes()`. The two alternate, `--repeats` times each; the medians are kept.

Figures (last line):
  small_wall_s     median wall time of `evalfleet run ... --limit 12` (start to exit)
  inspect_wall_s   median wall time of `inspect eval` on the same items (start to exit)
  ratio            small_wall_s / inspect_wall_s (the issue asks at most 0.5)

Usage: python perf/small_run.py [--items 12] [--latency-ms 200] [--repeats 3] [--smoke]
  --smoke   one repeat of each (a check that the script works, not a measurement)
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from perf.work import work_folder  # noqa: E402

MODEL = "sim-0.5"
TASK = """
import json, os
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageUser, ContentImage, ContentText, GenerateConfig
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


@task
def small():
    rows = [json.loads(line) for line in open(os.environ["SMALL_ITEMS"])]
    samples = [
        Sample(
            id=row["id"],
            input=[ChatMessageUser(content=[ContentText(text=row["text"])]
                   + [ContentImage(image=url) for url in row["images"]])],
            target=row["target"],
        )
        for row in rows
    ]
    config = GenerateConfig(temperature=0, max_tokens=16000)
    return Task(dataset=samples, solver=generate(), scorer=includes(), config=config)
"""


def uv() -> str:
    found = shutil.which("uv") or str(ROOT / ".bootstrap" / "bin" / "uv")
    if not Path(found).exists():
        raise SystemExit("uv is needed to install inspect_ai in a throwaway environment")
    return found


def install_inspect(work: Path) -> Path:
    """inspect_ai in a virtual environment of its own: its `inspect` command."""
    venv = work / "inspect-venv"
    subprocess.run([uv(), "venv", "-q", str(venv)], check=True)
    # Named: a UV_PYTHON in the environment would win over VIRTUAL_ENV and point elsewhere.
    python = str(venv / "bin" / "python")
    install = [uv(), "pip", "install", "-q", "--python", python, "inspect-ai", "openai"]
    subprocess.run(install, check=True)
    return venv / "bin" / "inspect"


def write_items(dataset: str, items: int, path: Path) -> None:
    """The prompts evalfleet sends for these items (text and images), for inspect_ai."""
    from evalfleet.engine.prepare.reading import load_benchmarks
    from evalfleet.engine.run.request import EvalRequest

    request = EvalRequest(
        models=[f"openai/{MODEL}"], benchmarks=["zerobench"], dataset_path=dataset, limit=items
    )
    data = load_benchmarks(request)["zerobench"]
    with path.open("w") as out:
        for sample in data.samples:
            text = " ".join(p.text for p in sample.parts if p.kind == "text" and p.text)
            images = [
                f"data:{p.media_type};base64,{base64.b64encode(p.data).decode()}"
                for p in sample.parts
                if p.kind == "image" and p.data
            ]
            row = {"id": sample.id, "text": text, "images": images, "target": str(sample.target)}
            out.write(json.dumps(row) + "\n")


def clean_env(work: Path) -> dict[str, str]:
    """No stack to attach to: a state folder of its own, no Ray or Prefect named."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PREFECT_API_URL")}
    env.update(EVALFLEET_STACK=str(work / "no-stack"), TQDM_DISABLE="1")
    return env


def time_evalfleet(work: Path, dataset: str, sim_url: str, items: int, n: int) -> float:
    command = [sys.executable, "-m", "evalfleet.cli.main", "run", "-m", f"openai/{MODEL}"]
    command += ["-b", "zerobench", "--dataset-path", dataset, "--limit", str(items)]
    command += ["--epochs", "1", "--protocol", "greedy", "--simulator-url", sim_url]
    command += ["--store", str(work / f"runs-{n}"), "--run-id", f"small-{n}"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=work, env=clean_env(work), capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"evalfleet run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall


def time_inspect(work: Path, inspect: Path, sim_url: str) -> float:
    env = {**clean_env(work), "SMALL_ITEMS": str(work / "items.jsonl")}
    env.update(SIM_API_KEY="sim-key", SIM_BASE_URL=f"{sim_url}/v1")
    env["INSPECT_LOG_DIR"] = str(work / "inspect-logs")
    command = [str(inspect), "eval", "task.py", "--model", f"openai-api/sim/{MODEL}"]
    command += ["--display", "none"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"inspect eval failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=12)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="one repeat each: a check")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    if args.smoke:
        args.repeats = 1
    from evalfleet.benchmarks.answer_key import write_answer_key
    from evalfleet.simulator.process import start_simulator
    from perf.throughput import write_dataset

    work = work_folder("small-run")
    dataset = write_dataset(work / "zerobench", args.items)
    answers = write_answer_key(dataset, ["zerobench"], work / "answers.jsonl")
    write_items(dataset, args.items, work / "items.jsonl")
    (work / "task.py").write_text(TASK)
    inspect = install_inspect(work)
    config = {"latency": {"ms": args.latency_ms}}
    ours, theirs = [], []
    with start_simulator(answers, config, work / "sim.jsonl") as sim:
        for n in range(args.repeats):
            ours.append(time_evalfleet(work, dataset, sim.url, args.items, n))
            theirs.append(time_inspect(work, inspect, sim.url))
            print(f"repeat {n + 1}: evalfleet {ours[-1]:.2f} s, inspect_ai {theirs[-1]:.2f} s")
        sim.flush_log()
        asked = sum(1 for line in (work / "sim.jsonl").read_text().splitlines() if line)
    small, peer = statistics.median(ours), statistics.median(theirs)
    print(
        f"items={args.items} latency_ms={args.latency_ms:g} repeats={args.repeats} "
        f"requests_logged={asked}"
    )
    print(f"small_wall_s={small:.2f} inspect_wall_s={peer:.2f} ratio={small / peer:.2f}")


if __name__ == "__main__":
    main()
