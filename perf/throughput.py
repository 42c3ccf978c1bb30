"""Throughput of the real pipeline (Prefect flow -> Ray actors -> openai SDK -> simulator -> store),
against a bare asyncio client sending the same requests to the same simulator.

Builds a ZeroBench-format dataset of Q questions (one small PNG each), starts the simulator
with a fixed latency and no rate limit, and runs the `evaluate` flow for M simulated models
with the zerobench-paper protocol (6 epochs), so N = Q * 6 * M items. Then, against the same
simulator process (same latency, same config), `perf/bare_client.py` sends the same N requests
(byte-identical chat-completions bodies: checked against the functions the pipeline hands the
SDK before it starts, and against the simulator's request log after) with aiohttp alone, under
the same concurrency limits, parsing each response and checkpointing one JSON file per item.

The two passes run one after the other, never together. The bare pass asks for the pipeline's
model names with a `-bare` suffix (`sim-0.5-m0` -> `sim-0.5-m0-bare`), so the simulator's
request log tells them apart; the suffix only changes which answers the deterministic answering
model draws, not their size or the latency. It runs in its own process, started after the
pipeline's Ray has been shut down, so no Ray or Prefect thread shares its interpreter or CPU.

Figures (last line):
  items_per_s            items / wall time of the generate phase (dispatch to last checkpoint)
  cpu_ms_per_item        CPU of evalfleet's own processes per item (the driver and the worker
                         actors; the simulator and Ray's and Prefect's daemons apart), with
                         the split between the driver and the workers
  bare_items_per_s       items / wall time of the bare client (first request to last file)
  ratio_vs_bare          items_per_s / bare_items_per_s
  overhead_ms_per_item   (wall - ideal) / N, where ideal = N * latency / in_flight is the time a
                         perfect pipeline bound only by latency and concurrency would take:
                         the wall time each item costs beyond that ideal. in_flight is the
                         effective limit: the pipeline also caps each model at its
                         max_concurrency (256 for simulated models), so 1,024 in flight over
                         2 models is 512; the bare client gets the same caps.

Lines before it: CPU per item of each process during each pass (driver, worker actors,
simulator, the other processes this run started: raylet, GCS, Prefect's server; bare client)
and the whole machine's busy cores (another user's load shows up there); memory:
  driver_peak_mb         the driver's peak RSS (getrusage ru_maxrss), set-up included
  worker_peak_mb         the largest peak RSS (VmHWM) of the CompletionWorker actor processes,
                         read from /proc/<pid>/status as dispatch ends; Ray reports each actor's
                         pid. Shared library pages count in RSS, so this is an upper bound
  bytes_per_item         the driver's growth while dispatching: its peak RSS during dispatch
                         (VmHWM reset with /proc/self/clear_refs as dispatch starts) minus its
                         RSS then, over N (what holding the outcomes of N items costs)
The probes wrap `evalfleet.tasks.dispatch.dispatch` from here; no pipeline code changes.

Usage: python perf/throughput.py [--questions 500] [--models 2] [--latency-ms 200]
                                 [--in-flight 256] [--workers 2] [--scale] [--smoke]
  --scale   the 50,000-item point: 4,167 questions x 6 epochs x 2 models = 50,004 items at
            1,024 in flight (overrides --questions, --models and --in-flight)
  --smoke   4 questions x 6 epochs x 2 models = 48 items at 16 in flight: both passes in
            seconds (a check that the script works, not a measurement)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import io
import json
import math
import multiprocessing as mp
import os
import re
import resource
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bare_client import CpuWindow, chat_body, proc_cpu_s  # noqa: E402

from perf.work import work_folder  # noqa: E402


def write_key(dataset: str, path: Path) -> Path:
    from evalfleet.benchmarks.answer_key import write_answer_key

    return write_answer_key(dataset, ["zerobench"], path)


def write_dataset(path: Path, questions: int) -> str:
    import datasets
    from PIL import Image

    from evalfleet.benchmarks.zerobench.dataset import upstream_features

    def png(i: int) -> bytes:
        buffer = io.BytesIO()
        Image.new("RGB", (32, 32), (i % 256, (i * 7) % 256, (i * 13) % 256)).save(buffer, "PNG")
        return buffer.getvalue()

    features = upstream_features()
    rows = {
        "question_id": [str(i + 1) for i in range(questions)],
        "question_text": [f"What is the colour code of image {i + 1}?" for i in range(questions)],
        "question_images_decoded": [[{"bytes": png(i), "path": None}] for i in range(questions)],
        "question_images": [[f"images/{i + 1}_0.png"] for i in range(questions)],
        "question_answer": [str(i * 7 % 1000) for i in range(questions)],
        "image_attribution": ["generated"] * questions,
    }
    dataset = datasets.Dataset.from_dict(rows, features=features)
    datasets.DatasetDict({"zerobench": dataset}).save_to_disk(str(path))
    return str(path)


SCALE = {"questions": 4167, "models": 2, "in_flight": 1024}
SMOKE = {"questions": 4, "models": 2, "in_flight": 16}
BARE = Path(__file__).resolve().parent / "bare_client.py"


# --- /proc probes ----------------------------------------------------------------------------


def proc_status_kb(pid: int | str, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            match = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.MULTILINE)
    except OSError:
        return None
    return int(match.group(1)) if match else None


def descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, stack = set(), [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def proc_pss_kb(pid: int | str) -> int | None:
    """A process's proportional set size: its private pages, and its share of the pages it
    shares (a summed RSS would count the libraries every worker maps once per worker)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            match = re.search(r"^Pss:\s+(\d+) kB", f.read(), re.MULTILINE)
    except OSError:
        return None
    return int(match.group(1)) if match else None


class TreePeak:
    """The peak of the summed PSS of a process and its descendants (a command and the
    scoring workers it starts), read every `every_s` seconds in a thread while it lives."""

    def __init__(self, root: int, every_s: float = 0.5) -> None:
        self.root, self.every_s, self.kb = root, every_s, 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.done.wait(self.every_s):
            pids = {self.root, *descendants(self.root)}
            self.kb = max(self.kb, sum(proc_pss_kb(p) or 0 for p in pids))

    def stop(self) -> float:
        """The peak in MB."""
        self.done.set()
        self.thread.join()
        return self.kb / 1024


def max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def worker_pids() -> set[int]:
    """The live CompletionWorker actors' processes of this driver's job, as Ray's GCS reports
    them; failing that, this run's processes titled ray::CompletionWorker."""
    try:
        import ray
        from ray._private import state

        job = ray.get_runtime_context().get_job_id()
        actors = state.actors(actor_state_name="ALIVE").values()
        pids = {
            int(a["Pid"])
            for a in actors
            if a.get("ActorClassName", "").endswith("CompletionWorker")
            and a.get("JobID") == job
            and a.get("Pid")
        }
        if pids:
            return pids
    except Exception:  # a private API: fall back on the process titles
        pass
    found = set()
    for pid in descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().startswith(b"ray::CompletionWorker"):
                    found.add(pid)
        except OSError:
            continue
    return found


class DispatchProbe:
    """Wraps tasks.dispatch.dispatch (whatever its arguments): memory and CPU of the driver,
    the worker actors, the simulator and the rest of what this run started, from dispatch's
    start to its end (before the flow kills the actors). A thread looks the actors up every
    second, so a worker replaced during the run is counted too."""

    def __init__(self, simulator_pid: int | None) -> None:
        self.simulator_pid = simulator_pid
        self.figures: dict[str, Any] = {}
        self.workers: dict[int, list[float]] = {}  # pid -> [cpu at first sight, cpu, hwm kB]
        self.done = threading.Event()

    def install(self) -> None:
        import evalfleet.tasks.dispatch

        original = evalfleet.tasks.dispatch.dispatch

        def probed(*args, **kwargs):
            self.start()
            try:
                return original(*args, **kwargs)
            finally:
                self.end()

        evalfleet.tasks.dispatch.dispatch = probed

    def look(self) -> None:
        for pid in worker_pids() | set(self.workers):
            cpu, hwm = proc_cpu_s(pid), proc_status_kb(pid, "VmHWM")
            if hwm is None:
                continue  # gone: keep its last reading
            seen = self.workers.setdefault(pid, [cpu, cpu, 0])
            seen[1], seen[2] = cpu, hwm

    def watch(self) -> None:
        while not self.done.wait(1.0):
            self.look()

    def start(self) -> None:
        self.look()
        simulator = {self.simulator_pid} if self.simulator_pid else set()
        others = descendants(os.getpid()) - set(self.workers) - simulator
        self.peak_before_mb = max_rss_mb()  # clear_refs below resets what getrusage reads
        self.rss_before_kb = proc_status_kb("self", "VmRSS") or 0
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
                f.write("5")  # reset VmHWM: the peak from here on
            self.hwm_reset = True
        except OSError:
            self.hwm_reset = False
        self.window = CpuWindow({"simulator": simulator, "other": others, "driver": {os.getpid()}})
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()

    def end(self) -> None:
        self.done.set()
        self.thread.join()
        self.look()
        cpu = self.window.close(also_ours=set(self.workers))
        cpu["workers"] = sum(last - first for first, last, _ in self.workers.values())
        hwm_kb = proc_status_kb("self", "VmHWM") if self.hwm_reset else None
        self.figures = {
            "cpu": cpu,
            "driver_peak_mb": max(self.peak_before_mb, max_rss_mb()),
            "driver_rss_before_mb": self.rss_before_kb / 1024,
            "driver_dispatch_peak_kb": hwm_kb,
            "worker_peak_mb": [hwm / 1024 for _, _, hwm in self.workers.values()],
        }


# --- the two passes --------------------------------------------------------------------------


def run_pipeline(args, dataset: str, work: Path, sim, models: list[str]) -> dict[str, Any]:
    """The `evaluate` flow in this process, as `evalfleet run` runs it: against a temporary
    Prefect server and a private Ray head that this process starts (not Prefect's in-process
    ephemeral mode, which would load Prefect's server into the driver)."""
    from evalfleet.stack.services import LocalStack

    stack = LocalStack()
    stack.use_private_ray()
    stack.start(prefect=True, ray=True)
    try:
        stack.wait()
        from evalfleet.engine.run.request import EvalRequest
        from evalfleet.flows.evaluate import evaluate

        probe = DispatchProbe(sim.pid)
        probe.install()
        request = EvalRequest(
            models=models,
            benchmarks=["zerobench"],
            dataset_path=dataset,
            run_id="throughput",
            store=str(work / "runs"),
            simulator_url=sim.url,
            max_in_flight=args.in_flight,
            workers=args.workers,
        )
        started = time.monotonic()
        result = evaluate(request)
        total = time.monotonic() - started
    finally:
        import ray

        from evalfleet.flows.in_process import drain_prefect

        drain_prefect()  # Prefect's logs and events, sent while its server is up
        ray.shutdown()  # its daemons stay out of the bare pass
        stack.stop()
    outcome = {
        "submitted": result.submitted,
        "elapsed_s": result.elapsed_s,
        "statuses": dict(result.statuses),
    }
    return {**outcome, "flow_total_s": total, **probe.figures}


def run_bare(args, dataset: str, work: Path, sim, api_models: list[str], per_model: int):
    cmd = [
        sys.executable,
        str(BARE),
        "--base-url",
        sim.openai_base_url,
        "--dataset",
        dataset,
        "--models",
        ",".join(api_models),
        "--in-flight",
        str(args.in_flight),
        "--per-model-limit",
        str(per_model),
        "--out",
        str(work / "bare"),
        *(["--simulator-pid", str(sim.pid)] if sim.pid else []),
    ]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def check_same_bodies(dataset: str, api_model: str, config) -> None:
    """The bare client's bodies are what the pipeline hands the openai SDK (which sends them
    as given: checked with a capturing server when this benchmark was written)."""
    from evalfleet.benchmarks.zerobench.dataset import load_samples
    from evalfleet.engine.prepare.reading import load_benchmarks
    from evalfleet.engine.run.request import EvalRequest
    from evalfleet.providers.openai_chat import chat_content, decoding_arguments

    sample = load_samples("zerobench", dataset, limit=1)[0][0]
    request = EvalRequest(
        models=["openai/sim-0.5"], benchmarks=["zerobench"], dataset_path=dataset, limit=1
    )
    for decoding in load_benchmarks(request)["zerobench"].decodings:
        mine = chat_body(api_model, sample.parts, decoding)
        theirs = {
            "messages": [{"role": "user", "content": chat_content(sample.parts)}],
            "model": api_model,
            **decoding_arguments(config, decoding),
        }
        if mine != theirs:
            raise SystemExit(f"the bare client's body differs from the pipeline's: {decoding}")


def same_requests(log: list[dict[str, Any]], api_models: list[str]) -> bool:
    """Each model's requests (prompt hash, seed, max tokens) match its -bare twin's."""
    asked: dict[str, Counter] = {}
    for entry in log:
        if entry.get("route") == "openai.chat":
            key = (entry["prompt_sha256"], entry["seed"], entry["max_tokens"])
            asked.setdefault(entry["model"], Counter())[key] += 1
    return all(asked.get(m) and asked.get(m) == asked.get(f"{m}-bare") for m in api_models)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--models", type=int, default=2)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--scale", action="store_true", help="50,004 items at 1,024 in flight (see above)"
    )
    parser.add_argument("--smoke", action="store_true", help="48 items: a check, not a figure")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    if args.scale:
        vars(args).update(SCALE)
    if args.smoke:
        vars(args).update(SMOKE)

    from evalfleet.providers.registry import resolve_model
    from evalfleet.simulator.process import start_simulator

    work = work_folder("throughput")
    # The harness's own work runs in a child process: making the dataset imports `datasets`
    # (100 MB) and checking the bare client's bodies the openai SDK (20 MB), which a run's
    # driver does not, and the driver's memory is one of the figures.
    spawn = mp.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as child:
        dataset = child.submit(write_dataset, work / "zerobench", args.questions).result()
        answers = child.submit(write_key, dataset, work / "answers.jsonl").result()
        models = [f"openai/sim-0.{5 + i % 5}-m{i}" for i in range(args.models)]
        config = {"latency": {"ms": args.latency_ms}}
        with start_simulator(answers, config, work / "sim.jsonl") as sim:
            configs = [resolve_model(m, simulator_url=sim.url) for m in models]
            api_models = [c.api_model for c in configs]
            per_model = min(c.max_concurrency for c in configs)
            child.submit(check_same_bodies, dataset, api_models[0], configs[0]).result()
            print(f"load_before_pipeline={os.getloadavg()[0]:.2f}", flush=True)
            pipe = run_pipeline(args, dataset, work, sim, models)
            print(f"load_before_bare={os.getloadavg()[0]:.2f}", flush=True)
            bare = run_bare(args, dataset, work, sim, [f"{m}-bare" for m in api_models], per_model)
            same = same_requests(sim.read_log(), api_models)

    items = pipe["submitted"]
    wall = pipe["elapsed_s"]
    rate = items / wall
    bare_items, bare_wall = bare["items"], bare["elapsed_s"]
    bare_rate = bare_items / bare_wall
    in_flight = min(args.in_flight, per_model * args.models)
    latency_s = args.latency_ms / 1000
    overhead_ms = (wall - items * latency_s / in_flight) / items * 1000
    bare_overhead_ms = (bare_wall - bare_items * latency_s / in_flight) / bare_items * 1000
    cpu = pipe.get("cpu", {})

    def ms(seconds: float, n: int) -> str:
        return f"{seconds / n * 1000:.2f}"

    print(
        f"items={items} generate_s={wall:.2f} flow_total_s={pipe['flow_total_s']:.2f} "
        f"in_flight={args.in_flight} effective_in_flight={in_flight} "
        f"latency_ms={args.latency_ms:.0f} statuses={pipe['statuses']}"
    )
    if cpu:
        print(
            f"pipeline_cpu_ms_per_item driver={ms(cpu['driver'], items)} "
            f"workers={ms(cpu['workers'], items)} simulator={ms(cpu['simulator'], items)} "
            f"other={ms(cpu['other'], items)} outside={ms(cpu['outside'], items)} "
            f"host_busy_cores={cpu['host_busy_cores']:.2f} outside_top={cpu['outside_top']}"
        )
    print(
        f"bare_items={bare_items} bare_s={bare_wall:.2f} bare_statuses={bare['statuses']} "
        f"same_requests={same} bare_overhead_ms_per_item={bare_overhead_ms:.1f}"
    )
    bare_cpu = bare["cpu"]
    print(
        f"bare_cpu_ms_per_item client={ms(bare_cpu['client'], bare_items)} "
        f"simulator={ms(bare_cpu['simulator'], bare_items)} "
        f"outside={ms(bare_cpu['outside'], bare_items)} "
        f"host_busy_cores={bare_cpu['host_busy_cores']:.2f} "
        f"outside_top={bare_cpu['outside_top']}"
    )
    if "driver_peak_mb" in pipe:
        hwm = pipe["driver_dispatch_peak_kb"]
        growth = (
            f"{(hwm * 1024 - pipe['driver_rss_before_mb'] * 2**20) / items:.0f}" if hwm else "n/a"
        )
        workers = pipe["worker_peak_mb"]
        print(
            f"driver_peak_mb={pipe['driver_peak_mb']:.0f} "
            f"worker_peak_mb={max(workers, default=0):.0f} "
            f"worker_peaks_mb={[round(w) for w in workers]} "
            f"driver_rss_before_dispatch_mb={pipe['driver_rss_before_mb']:.0f} "
            f"bytes_per_item={growth} bare_client_peak_mb={bare['peak_rss_mb']:.0f}"
        )
    ours = (cpu.get("driver", 0.0) + cpu.get("workers", 0.0)) / items * 1000 if cpu else math.nan
    print(
        f"items_per_s={rate:.1f} bare_items_per_s={bare_rate:.1f} "
        f"ratio_vs_bare={rate / bare_rate:.2f} overhead_ms_per_item={overhead_ms:.1f} "
        f"cpu_ms_per_item={ours:.2f} (driver {ms(cpu.get('driver', 0.0), items)}, "
        f"workers {ms(cpu.get('workers', 0.0), items)})"
    )


if __name__ == "__main__":
    main()
