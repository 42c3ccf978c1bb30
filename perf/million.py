"""A million answers in one run, end to end, through a lost node and a provider outage.

One evaluation as `evalfleet run` runs it (the command in a child process, with its own
temporary Prefect server, attached to a Ray cluster through RAY_ADDRESS): two simulated
models x 83,334 ZeroBench-shaped questions (perf/throughput.py's synthetic PNG questions) x
6 epochs (zerobench-paper: the greedy one and five sampled) = 1,000,008 items, against the
simulator at 200 ms latency with 1,024 calls in flight, into a local store. The cluster is
a head that hosts no work and two worker nodes, each its own `ray start` (stack.ray_cluster,
as `evalfleet up --ray --ray-nodes 2` starts them); the run's two worker actors are spread
over the nodes. Along the way:

1. at 30 % of the answers (usable 200s in the simulator's request log), one worker node is
   SIGKILLed, its raylet, agents and workers with it: the run goes on with the other node,
   the lost node's items in flight are sent again;
2. at 60 %, the simulator is stopped (SIGTERM: the calls it holds are answered, the log is
   flushed) for --outage-s seconds and started again on the same port. The default retry
   budget (6 attempts, at most about 15 s of back-off) does not outlast a minute without
   the provider, so the run is given the --max-attempts that does (`attempts_to_outlast`:
   11 for 60 s); no item may end as an error for the outage;
3. the request log is then checked against the store:
     lost        items answered (a usable 200) that have no stored record
     repeated    usable answers to the same request beyond the first that no kill explains
     resent      those the kill explains: the request was in flight on the lost node (sent
                 before the kill, its record not yet written WRITE_S after its answer)
     unfinished  items with no record at all
   (and failed: items whose only record is an error);
4. `evalfleet aggregate` of the first run in a child process, right after it as its own
   aggregation flow would follow it (the cluster and the simulator idle): aggregate_s is
   its scoring and tables, as it reports them apart from the report it then writes, and
   aggregate_peak_mb its peak RSS. The records are still in the page cache then; read cold
   (from the disk, one file each) they take longer: docs/performance.md has both;
5. the bare client (perf/bare_client.py) sends 50,004 items' requests (4,167 of the same
   questions, `-bare` model names) to the same simulator, alone;
6. a second copy of the run (a fresh store) is SIGKILLed, its process group, at 50 %; once
   nothing of it is left it is resumed by the same command: resume_first_request_s is from
   that command's start to its first request in the simulator's log. No process of either
   run may be left (the commands, their Prefect servers, their worker actors);
7. with the cluster and the simulator stopped: the report's first screen in headless
   Chromium (perf/report_open.py), `evalfleet leaderboard` and `evalfleet runs`.

The last line:
  items= lost= repeated= resent= unfinished= items_per_s= ratio_vs_bare= driver_peak_mb=
  worker_peak_mb= aggregate_s= aggregate_peak_mb= report_open_s= resume_first_request_s=
  leaderboard_s= runs_s=
where items_per_s is items over the first run's generation (its first request to its last
answer, in the request log) less the outage, ratio_vs_bare that over the bare client's
items per second (no outage in its pass), driver_peak_mb the run command's peak RSS
(VmHWM, read every second) until its last answer (the whole command's, its own scoring and
report after the work included, is on a line above) and worker_peak_mb the largest of its
worker actors'.

Usage: python perf/million.py [--scale 1.0] [--outage-s 60] [--latency-ms 200]
                              [--in-flight 1024] [--workers 2] [--smoke]
  --scale 0.01: 834 questions (10,008 items), a bare pass of 504 items.
  --smoke: 9 questions (108 items) at 4 in flight, one worker actor a run (the lost node's
           replaced on the other), a 3 s outage, a bare pass of 12 items, the runs' Prefect
           database in the caller's home (as a user's `evalfleet run` has it, not one of their
           own to migrate): every step above in a few minutes rather than an hour, a check
           that the script works, not a measurement.
tests/engine/test_million.py runs steps 1-3 at 1/100 scale.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evalfleet.providers.retry import RetryPolicy  # noqa: E402
from perf.throughput import descendants, proc_status_kb  # noqa: E402
from perf.work import keep, work_folder  # noqa: E402
from tests.support.leftovers import removed_afterwards  # noqa: E402

FULL_QUESTIONS = 83_334  # x 2 models x 6 epochs = 1,000,008 items
BARE_QUESTIONS = 4_167  # x 2 x 6 = 50,004 items
MODELS = ("openai/sim-0.5-m0", "openai/sim-0.6-m1")
EPOCHS = 6  # zerobench-paper, ZeroBench's default protocol: greedy + 5 sampled
RUN_ID = "million"
USABLE = ("ok", "length", "truncate")  # outcomes of a 200 that gave an answer
WRITE_S = 5.0  # after its answer, an item's record may still be being written
QUIET_S = 3.0  # no request for this long: a killed run's worker actors are gone


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


@dataclass(frozen=True)
class Options:
    scale: float = 1.0
    outage_s: float = 60.0
    latency_ms: float = 200.0
    in_flight: int = 1024
    workers: int = 2
    kill_at: float = 0.3
    outage_at: float = 0.6
    copy_kill_at: float = 0.5
    keep_resume_log: bool = True  # a copy of the resume's output in the temp dir, to read

    @property
    def questions(self) -> int:
        return max(1, math.ceil(FULL_QUESTIONS * self.scale))

    @property
    def bare_questions(self) -> int:
        return max(1, math.ceil(BARE_QUESTIONS * self.scale))

    @property
    def items(self) -> int:
        return len(MODELS) * self.questions * EPOCHS


def attempts_to_outlast(outage_s: float) -> int:
    """The --max-attempts with which a call that starts failing as the provider goes away
    is still retrying when it is back, `outage_s` plus 15 s later (the simulator's stop and
    start): back-off at its shortest (the low end of the jitter, no Retry-After)."""
    policy = RetryPolicy()  # what a run's workers use, but for --max-attempts
    waited, failures = 0.0, 0
    while waited <= outage_s + 15.0:
        waited += min(policy.max_delay_s, policy.base_delay_s * 2**failures) / 2
        failures += 1
    return max(policy.max_attempts, failures + 1)


# --- the request log and the store -----------------------------------------------------------


def usable(entry: dict[str, Any]) -> bool:
    return (
        entry.get("route") == "openai.chat"
        and entry.get("status") == 200
        and entry.get("outcome") in USABLE
    )


class LogTail:
    """The simulator's request log read as it grows, from a byte offset (the file is
    appended to across the simulator's restarts, flushed every 0.2 s)."""

    def __init__(self, path: Path, offset: int = 0) -> None:
        self.path = path
        self.offset = offset

    def new(self) -> list[dict[str, Any]]:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        return [json.loads(line) for line in data[:end].splitlines() if line.strip()]


def entries(path: Path, start: int, end: int) -> Iterator[dict[str, Any]]:
    """The log's lines between two offsets, one at a time (a million of them as dicts at
    once would be gigabytes)."""
    with path.open("rb") as f:
        f.seek(start)
        while f.tell() < end:
            line = f.readline()
            if not line:
                return
            if line.strip():
                yield json.loads(line)


class ItemIndex:
    """Each planned answer of the run as one int, found from its request as the simulator
    logs it (API model, prompt hash, seed) or from its stored record (model, sample, epoch).
    Made by the engine's own resolve (the run's samples and the epochs' decodings): what the
    run plans, nothing assumed."""

    def __init__(self, dataset: str, simulator_url: str, plan_store: Path) -> None:
        from evalfleet.engine.prepare.resolve import resolve
        from evalfleet.engine.run.request import EvalRequest
        from evalfleet.simulator.answering import prompt_sha256

        request = EvalRequest(
            models=list(MODELS),
            benchmarks=["zerobench"],
            dataset_path=dataset,
            run_id="million-plan",
            store=str(plan_store),
            simulator_url=simulator_url,
        )
        run = resolve(request)
        data = run.data["zerobench"]
        self.configs = {m: run.configs[m] for m in MODELS}
        self.models = {m: i for i, m in enumerate(MODELS)}
        self.api_models = {run.configs[m].api_model: i for i, m in enumerate(MODELS)}
        self.samples = {s.id: i for i, s in enumerate(data.samples)}
        self.prompts = {
            prompt_sha256(next(p.text for p in s.parts if p.kind == "text")): i
            for i, s in enumerate(data.samples)
        }
        self.seeds = {d.seed: e for e, d in enumerate(data.decodings)}
        self.epochs = len(data.decodings)
        self.size = len(MODELS) * len(self.samples) * self.epochs

    def _pack(self, model: int, sample: int, epoch: int) -> int:
        return (model * len(self.samples) + sample) * self.epochs + epoch

    def of_request(self, entry: dict[str, Any]) -> int | None:
        model = self.api_models.get(entry.get("model"))
        sample = self.prompts.get(entry.get("prompt_sha256"))
        epoch = self.seeds.get(entry.get("seed"))
        if model is None or sample is None or epoch is None:
            return None  # another model's (the bare client's) or no answer's
        return self._pack(model, sample, epoch)

    def of_record(self, model: str, sample_id: str, epoch: int) -> int | None:
        if model not in self.models or sample_id not in self.samples:
            return None
        return self._pack(self.models[model], self.samples[sample_id], epoch)


@dataclass
class Tally:
    items: int
    answers: int = 0  # usable answers in the log
    stored: int = 0  # answer records stored (not errors)
    failed: int = 0  # items whose only record is an error
    lost: int = 0
    repeated: int = 0
    resent: int = 0
    unfinished: int = 0
    first_t: float = math.inf  # the first request's arrival
    last_t: float = 0.0  # the last usable answer's departure

    def line(self) -> str:
        return (
            f"items={self.items} stored={self.stored} answers={self.answers} "
            f"failed={self.failed} lost={self.lost} repeated={self.repeated} "
            f"resent={self.resent} unfinished={self.unfinished}"
        )


def tally(
    index: ItemIndex,
    log: Iterator[dict[str, Any]],
    store_root: Path,
    kills: list[tuple[float, float]],
) -> Tally:
    """The request log against the store. A usable answer counts as cut off by a kill
    (killed at, resumed at) when its request was in flight then: sent before the resume,
    its record perhaps not yet written WRITE_S after its answer left the simulator. One
    answer again per kill is `resent`; any more is `repeated`."""
    from evalfleet.storage import LocalStore, layout

    out = Tally(index.size)
    answered: Counter[int] = Counter()
    cut: Counter[int] = Counter()
    for entry in log:
        item = index.of_request(entry)
        if item is None:
            continue
        out.first_t = min(out.first_t, entry["t"])
        if not usable(entry):
            continue
        answered[item] += 1
        end = entry["t"] + entry["latency_ms"] / 1000
        out.last_t = max(out.last_t, end)
        if any(entry["t"] <= resumed and killed <= end + WRITE_S for killed, resumed in kills):
            cut[item] += 1
    for item, n in answered.items():
        explained = min(n - 1, cut[item], len(kills))  # sent again once per kill, no more
        out.resent += explained
        out.repeated += n - 1 - explained
    out.answers = sum(answered.values())
    done, failed = set(), set()
    for key in LocalStore(str(store_root)).list(layout.stage_prefix(RUN_ID, layout.ANSWER)):
        name = layout.parse_record_key(RUN_ID, key)
        if name is None:
            continue
        item = index.of_record(name.item.model, name.item.sample_id, name.item.epoch)
        if item is None:
            continue
        (failed if name.failed else done).add(item)
        out.stored += not name.failed
    out.lost = sum(1 for item in answered if item not in done)
    out.failed = len(failed - done)
    out.unfinished = index.size - len(done | failed)
    return out


# --- the machine: data, the simulator, the Ray cluster ---------------------------------------


def worker_actors(roots: list[int]) -> set[int]:
    """Ray worker processes under the cluster's nodes: actors and idle workers (`ray::...`),
    the nodes' own agents apart."""
    found = set()
    for root in roots:
        for pid in descendants(root):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    title = f.read()
            except OSError:
                continue
            if title.startswith(b"ray::") and b"Agent" not in title.split(b"\0")[0]:
                found.add(pid)
    return found


def title(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return "?"


class World:
    """What the runs run against: the datasets and their answer key, the simulator (stopped
    and started again on its port for the outage), and a Ray head with two worker nodes.
    A context manager: everything it started is stopped when it exits. `home` is the
    runs' EVALFLEET_HOME (their temporary Prefect server's database): a folder of their own
    (the first server there migrates it, tens of seconds on a loaded machine, in no figure),
    or None for the caller's, as a user's `evalfleet run` has it."""

    def __init__(self, options: Options, work: Path, home: Path | None = None) -> None:
        self.options = options
        self.work = work
        self.home = home
        self.log_path = work / "sim.jsonl"
        self.token = secrets.token_hex(32)
        self.nodes: list[Any] = []  # stack.pidfiles.Daemon
        self.head: Any = None
        self.sim: Any = None
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> World:
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        from evalfleet.benchmarks.answer_key import write_answer_key
        from evalfleet.simulator.process import start_simulator
        from evalfleet.stack import ray_cluster
        from perf.throughput import write_dataset

        o = self.options
        say(f"writing {o.questions} questions ({o.items} items) and {o.bare_questions} more")
        self.dataset = write_dataset(self.work / "zerobench", o.questions)
        self.bare_dataset = write_dataset(self.work / "zerobench-bare", o.bare_questions)
        # The bare questions are the first of the run's (the same prompts): one key serves.
        self.answers = write_answer_key(self.dataset, ["zerobench"], self.work / "answers.jsonl")
        self.sim_config = {"latency": {"ms": o.latency_ms}}
        self.sim = start_simulator(self.answers, self.sim_config, self.log_path)
        self.port = self.sim.port
        self.cluster = self.work / "cluster"
        self.cluster.mkdir()
        self._stack.callback(ray_cluster.remove_sessions, self.cluster)
        started = time.monotonic()
        self.head = self._started(
            "ray", lambda: ray_cluster.start_head(self.cluster, self.token, hosts_work=False)
        )
        for _ in range(2):
            self.add_node()
        say(f"Ray head and two worker nodes up in {time.monotonic() - started:.0f} s")
        self.index = ItemIndex(self.dataset, self.sim.url, self.work / "plan-store")

    def add_node(self) -> None:
        from evalfleet.stack import ray_cluster

        index = len(self.nodes) + 1
        start = partial(ray_cluster.start_node, self.cluster, self.head.address, self.token, index)
        self.nodes.append(self._started(f"ray-node-{index}", start))

    def _started(self, log: str, start: Callable[[], Any], tries: int = 3) -> Any:
        """A Ray head or node, started again if it failed to: Ray gives a raylet 30 s to
        register with the GCS, which a loaded 2-core machine can exceed. What the failed
        `ray start` left (its group: a raylet that came up late) is killed first."""
        from evalfleet.stack.pidfiles import recorded
        from evalfleet.stack.services import ServiceError

        for attempt in range(1, tries + 1):
            try:
                return start()
            except ServiceError as exc:
                if attempt == tries:
                    raise
                say(f"{log} did not start ({' '.join(str(exc).split())[-200:]}): again")
                for daemon in recorded(self.cluster)[0]:
                    if Path(daemon.log).stem == log:
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.killpg(daemon.pid, signal.SIGKILL)
                time.sleep(10)  # the cluster's processes that are starting, a moment to
        raise AssertionError("not reached")

    def __exit__(self, *exc: object) -> None:
        from evalfleet.stack.state import stop

        if self.sim is not None:
            self.sim.stop()
        for daemon in [*self.nodes, self.head]:
            if daemon is not None:
                stop(daemon, grace_s=10)
        self._stack.close()

    def env(self, tag: str, *, ray: bool = True) -> dict[str, str]:
        """A command's environment: the cluster's address and token (with `ray`), no
        Prefect server named (a run starts its own), a stack state folder of its own (never
        attached to a stack `evalfleet up` keeps on this machine), the home, and a tag every
        process of the command inherits."""
        from evalfleet.stack.ray_cluster import ray_client_env

        env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
        for name in ("EVALFLEET_STORE", "EVALFLEET_SIMULATOR_URL"):
            env.pop(name, None)
        if ray:
            env.update(ray_client_env(self.head.address, self.token))
        env.update(
            EVALFLEET_TEST_TAG=tag,
            EVALFLEET_STACK=str(self.work / "state"),
            TQDM_DISABLE="1",
            PREFECT_SERVER_ANALYTICS_ENABLED="false",
        )
        if self.home is not None:
            env["EVALFLEET_HOME"] = str(self.home)
        return env

    def node_pids(self) -> list[int]:
        return [n.pid for n in [self.head, *self.nodes] if n.alive()]

    def log_mark(self) -> int:
        """The log's size once everything answered so far is in it."""
        self.sim.flush_log()
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def kill_node(self) -> tuple[int, float]:
        """SIGKILL the first live worker node that hosts a worker actor: its `ray start`,
        raylet, agents and workers, as losing its machine would."""
        from tests.support.stack import kill_tree

        live = [n for n in self.nodes if n.alive()]
        hosting = {n.pid: [p for p in worker_actors([n.pid]) if is_completion(p)] for n in live}
        node = next((n for n in live if hosting[n.pid]), live[0])
        actors = len(hosting[node.pid])
        tree = kill_tree(node.pid)
        killed = time.time()
        say(f"{node.name} SIGKILLed ({len(tree)} processes, {actors} of them worker actors)")
        return actors, killed

    def outage(self, seconds: float) -> tuple[float, float]:
        """Stop the simulator, wait, start it again on its port: (stopped at, back at)."""
        from evalfleet.simulator.process import start_simulator

        down = time.time()
        self.sim.stop()
        say(f"simulator stopped for {seconds:.0f} s")
        time.sleep(seconds)
        self.sim = start_simulator(self.answers, self.sim_config, self.log_path, self.port)
        up = time.time()
        say(f"simulator back on port {self.port} after {up - down:.1f} s")
        return down, up


# --- one run ---------------------------------------------------------------------------------


class Peaks(threading.Thread):
    """Every second, the peak RSS (VmHWM) of the run's command and of each worker actor on
    the cluster, while they live (a process's VmHWM goes with it: its last reading stays)."""

    def __init__(self, driver: int, world: World) -> None:
        super().__init__(daemon=True)
        self.driver = driver
        self.world = world
        self.driver_kb = 0
        self.workers_kb: dict[int, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        looked = 0.0
        pids: set[int] = set()
        while not self.done.wait(1.0):
            self.driver_kb = max(self.driver_kb, proc_status_kb(self.driver, "VmHWM") or 0)
            if time.monotonic() - looked > 5:
                pids = {p for p in worker_actors(self.world.node_pids()) if is_completion(p)}
                looked = time.monotonic()
            for pid in pids | set(self.workers_kb):
                hwm = proc_status_kb(pid, "VmHWM")
                if hwm is not None:
                    self.workers_kb[pid] = max(self.workers_kb.get(pid, 0), hwm)

    def stop(self) -> None:
        self.done.set()
        self.join()


def is_completion(pid: int) -> bool:
    return title(pid).startswith("ray::CompletionWorker")


@dataclass
class Run:
    """One `evalfleet run` command of the run, in a process group of its own."""

    world: World
    store: Path
    name: str
    tag: str = field(default_factory=lambda: f"million-{uuid.uuid4().hex[:12]}")

    def args(self) -> list[str]:
        o = self.world.options
        args = ["run", *[x for m in MODELS for x in ("-m", m)], "-b", "zerobench"]
        args += ["--dataset-path", self.world.dataset, "--run-id", RUN_ID]
        args += ["--store", str(self.store), "--simulator-url", self.world.sim.url]
        args += ["--max-in-flight", str(o.in_flight), "--workers", str(o.workers)]
        return [*args, "--max-attempts", str(attempts_to_outlast(o.outage_s))]

    def start(self, suffix: str = "") -> subprocess.Popen:
        self.output = self.world.work / f"{self.name}{suffix}.log"
        with self.output.open("w") as out:
            return subprocess.Popen(
                [sys.executable, "-m", "evalfleet.cli.main", *self.args()],
                cwd=ROOT,
                env=self.world.env(self.tag),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a process group of its own, as a shell's job
            )

    def failed(self, code: int | None) -> SystemExit:
        keep(self.world.work)
        text = self.output.read_text(errors="replace")[-4000:]
        return SystemExit(f"{self.name}: evalfleet run ended with {code}:\n{text}")

    def leftovers(self, timeout_s: float = 60.0) -> list[tuple[int, str]]:
        """Processes of this run still alive after at most `timeout_s`: those carrying its
        tag (the command, its Prefect server) and any Ray worker on the cluster."""
        from tests.support.helpers import tagged_processes

        deadline = time.monotonic() + timeout_s
        while True:
            left = tagged_processes(self.tag)
            left += [(p, title(p)) for p in worker_actors(self.world.node_pids())]
            if not left or time.monotonic() > deadline:
                for pid, command in left:
                    say(f"left behind by {self.name}: {pid} {command}")
                return left
            time.sleep(0.5)


@dataclass
class FirstRun:
    tally: Tally
    outage: tuple[float, float]
    node_kill: float
    actors_on_lost_node: int
    driver_generate_mb: float
    driver_peak_mb: float
    worker_peak_mb: float
    workers_seen: int
    worker_lost_lines: int
    leftovers: list[tuple[int, str]]
    wall_s: float

    @property
    def items_per_s(self) -> float:
        generate = self.tally.last_t - self.tally.first_t - (self.outage[1] - self.outage[0])
        return self.tally.items / generate


def first_run(world: World) -> FirstRun:
    """The run through the node kill at `kill_at` and the outage at `outage_at` of its
    answers, then its request log against its store."""
    o = world.options
    store = world.work / "runs"
    start = world.log_mark()
    run = Run(world, store, "first-run")
    say(f"first run: {o.items} items, --max-attempts {attempts_to_outlast(o.outage_s)}")
    begun = time.monotonic()
    process = run.start()
    peaks = Peaks(process.pid, world)
    peaks.start()
    tail = LogTail(world.log_path, start)
    answered, killed, outage, actors, generate_kb = 0, 0.0, (0.0, 0.0), 0, 0
    try:
        while process.poll() is None:
            answered += answers_in(world.index, tail.new())
            if not killed and answered >= o.kill_at * o.items:
                say(f"{answered} answers")
                actors, killed = world.kill_node()
            if not outage[0] and answered >= o.outage_at * o.items:
                say(f"{answered} answers")
                outage = world.outage(o.outage_s)
            if not generate_kb and answered >= o.items:
                generate_kb = peaks.driver_kb or proc_status_kb(process.pid, "VmHWM") or 0
            time.sleep(0.2)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        peaks.stop()
    wall = time.monotonic() - begun
    if process.returncode != 0 or not killed or not outage[0]:
        raise run.failed(process.returncode)
    say(f"first run done in {wall:.0f} s")
    end = world.log_mark()
    counted = tally(world.index, entries(world.log_path, start, end), store, [(killed, killed)])
    lost_lines = run.output.read_text(errors="replace").count("a worker was lost (")
    return FirstRun(
        tally=counted,
        outage=outage,
        node_kill=killed,
        actors_on_lost_node=actors,
        driver_generate_mb=(generate_kb or peaks.driver_kb) / 1024,
        driver_peak_mb=peaks.driver_kb / 1024,
        worker_peak_mb=max(peaks.workers_kb.values(), default=0) / 1024,
        workers_seen=len(peaks.workers_kb),
        worker_lost_lines=lost_lines,
        leftovers=run.leftovers(),
        wall_s=wall,
    )


@dataclass
class Copy:
    tally: Tally
    first_request_s: float
    leftovers: list[tuple[int, str]]


def killed_and_resumed(world: World) -> Copy:
    """A second copy of the run in a fresh store, on the cluster made whole again: its
    process group SIGKILLed at `copy_kill_at` of its answers, then, once nothing of it is
    left (not even a worker actor sending), resumed by the same command."""
    o = world.options
    world.add_node()  # the cluster as the first run began on it: two worker nodes
    store = world.work / "runs-copy"
    start = world.log_mark()
    run = Run(world, store, "copy")
    process = run.start()
    tail = LogTail(world.log_path, start)
    answered = 0
    while answered < o.copy_kill_at * o.items:
        if process.poll() is not None:
            raise run.failed(process.returncode)
        answered += answers_in(world.index, tail.new())
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    killed = time.time()
    process.wait()
    say(f"copy SIGKILLed (its process group) at {answered} answers")
    left = run.leftovers()
    while True:  # until its actors have sent nothing for QUIET_S (the leftovers said gone)
        time.sleep(QUIET_S)
        world.log_mark()
        if not tail.new():
            break
    resumed = time.time()
    say(f"nothing of the copy left {resumed - killed:.1f} s after the kill: resuming")
    process = run.start("-resume")
    first = None
    while process.poll() is None:
        first = first or first_request(tail.new(), resumed)
        time.sleep(0.05)
    if process.returncode != 0:
        raise run.failed(process.returncode)
    world.log_mark()
    first = first or first_request(tail.new(), resumed) or math.nan
    say(f"resume done in {time.time() - resumed:.0f} s")
    if o.keep_resume_log:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        kept = Path(tempfile.gettempdir()) / f"million-resume-{stamp}.log"
        shutil.copyfile(run.output, kept)  # what the resume said before its first request
        say(f"the resume's output, kept: {kept}")
    left += run.leftovers()
    end = world.log_mark()
    counted = tally(world.index, entries(world.log_path, start, end), store, [(killed, resumed)])
    return Copy(counted, first - resumed, left)


def answers_in(index: ItemIndex, new: list[dict[str, Any]]) -> int:
    """Usable answers to the run's requests among log entries."""
    return sum(1 for e in new if usable(e) and index.of_request(e) is not None)


def first_request(new: list[dict[str, Any]], since: float) -> float | None:
    """When the first chat completion among log entries arrived at or after `since`."""
    return min(
        (e["t"] for e in new if e["route"] == "openai.chat" and e["t"] >= since), default=None
    )


def bare_pass(world: World) -> dict[str, Any]:
    """perf/throughput.py's bare client on the bare questions, to the same simulator, with
    the run's limits (1,024 in flight, each model at its max_concurrency)."""
    from perf.throughput import check_same_bodies, run_bare

    configs = list(world.index.configs.values())
    check_same_bodies(world.bare_dataset, configs[0].api_model, configs[0])
    per_model = min(c.max_concurrency for c in configs)
    args = SimpleNamespace(in_flight=world.options.in_flight)
    names = [f"{c.api_model}-bare" for c in configs]
    bare = run_bare(args, world.bare_dataset, world.work, world.sim, names, per_model)
    say(f"bare client: {bare['items']} items in {bare['elapsed_s']:.1f} s {bare['statuses']}")
    return bare


# --- after the runs --------------------------------------------------------------------------


def timed_command(work: Path, env: dict[str, str], *args: str) -> tuple[float, float, str]:
    """An evalfleet command in a child process: (wall seconds, its peak RSS in MB, output)."""
    out = work / f"{args[0]}.log"
    with out.open("w") as sink:
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "evalfleet.cli.main", *args],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        _, status, usage = os.wait4(process.pid, 0)  # this child's own rusage
        elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    text = out.read_text(errors="replace")
    if process.returncode != 0:
        keep(work)
        raise SystemExit(f"evalfleet {args[0]} ended with {process.returncode}:\n{text[-3000:]}")
    return elapsed, usage.ru_maxrss / 1024, text


def report_first_screen(page: Path) -> float:
    """The report's first screen in headless Chromium (perf/report_open.py's measure)."""
    from perf.report_open import open_seconds
    from tests.support.browser import CHROMEDRIVER, CHROMIUM, close, headless_chromium

    if shutil.which(CHROMIUM) is None or shutil.which(CHROMEDRIVER) is None:
        say("no chromium or chromedriver: report_open_s is not measured")
        return math.nan
    driver = headless_chromium(1400, 1000)
    try:
        return open_seconds(driver, page)
    finally:
        close(driver)


def aggregated(work: Path, env: dict[str, str]) -> tuple[dict[str, float], Path]:
    """`evalfleet aggregate` of the first run, in a child process, right after the run (as
    the run's own aggregation flow follows its generation), with the cluster and the
    simulator idle: its tables' seconds and peak RSS, and the report it wrote."""
    store = str(work / "runs")
    seconds, peak, text = timed_command(work, env, "aggregate", RUN_ID, "--store", store)
    timing = re.search(r"tables in ([\d.]+) s, report in ([\d.]+) s", text)
    if timing is None:
        raise SystemExit(f"evalfleet aggregate printed no timing line:\n{text[-3000:]}")
    tables_s, report_s = (float(x) for x in timing.groups())
    say(
        f"evalfleet aggregate: {seconds:.1f} s in all, the tables in {tables_s:.1f} s "
        f"(peak {peak:.0f} MB), the report in {report_s:.1f} s"
    )
    page = Path(text.rsplit("report: ", 1)[-1].strip().splitlines()[0])
    say(f"report: {page.stat().st_size / 2**20:.1f} MB")
    return {"aggregate_s": tables_s, "aggregate_peak_mb": peak}, page


def afterwards(work: Path, env: dict[str, str], page: Path) -> dict[str, float]:
    """The report's first screen, the leaderboard and the runs list of the first run's store
    (the copy's beside it), each with nothing else of this script running."""
    store = str(work / "runs")
    figures = {"report_open_s": report_first_screen(page)}
    figures["leaderboard_s"], _, _ = timed_command(work, env, "leaderboard", "--store", store)
    figures["runs_s"], _, _ = timed_command(work, env, "runs", "--store", store)
    say(f"leaderboard {figures['leaderboard_s']:.1f} s, runs {figures['runs_s']:.1f} s")
    return figures


# 9 questions, 108 items; one worker actor a run (the lost node's is replaced on the other)
SMOKE = {"scale": 1e-4, "outage_s": 3.0, "in_flight": 4, "workers": 1}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="of the 83,334 questions")
    parser.add_argument("--outage-s", type=float, default=60.0)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--in-flight", type=int, default=1024)
    parser.add_argument("--workers", type=int, default=2, help="each run's worker actors")
    parser.add_argument("--smoke", action="store_true", help="108 items: a check, not a figure")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    options = Options(
        args.scale,
        args.outage_s,
        args.latency_ms,
        args.in_flight,
        args.workers,
        keep_resume_log=not args.smoke,
    )
    started = time.monotonic()
    with removed_afterwards():  # the killed node's Ray session files
        work = work_folder("million")
        home = None if args.smoke else work / "home"
        with World(options, work, home=home) as world:
            first = first_run(world)
            env = world.env(f"million-{uuid.uuid4().hex[:12]}", ray=False)
            aggregate, page = aggregated(work, env)
            bare = bare_pass(world)
            copy = killed_and_resumed(world)
        after = afterwards(work, env, page) | aggregate
    t = first.tally
    left = len(first.leftovers) + len(copy.leftovers)
    if t.lost or t.repeated or t.unfinished or t.failed or left:
        keep(work)
    bare_rate = bare["items"] / bare["elapsed_s"]
    print(f"first run: {t.line()} wall_s={first.wall_s:.0f}")
    print(
        f"node killed with {first.actors_on_lost_node} worker actors on it, "
        f"worker_lost_lines={first.worker_lost_lines}; "
        f"outage_s={first.outage[1] - first.outage[0]:.1f}; "
        f"driver_peak_mb_whole_command={first.driver_peak_mb:.0f} (aggregation included); "
        f"workers_seen={first.workers_seen}"
    )
    print(f"copy killed at {options.copy_kill_at:.0%} and resumed: {copy.tally.line()}")
    print(
        f"bare_items={bare['items']} bare_items_per_s={bare_rate:.1f} "
        f"bare_statuses={bare['statuses']} leftover_processes={left} "
        f"script_s={time.monotonic() - started:.0f}"
    )
    print(
        f"items={t.items} lost={t.lost} repeated={t.repeated} resent={t.resent} "
        f"unfinished={t.unfinished} items_per_s={first.items_per_s:.1f} "
        f"ratio_vs_bare={first.items_per_s / bare_rate:.2f} "
        f"driver_peak_mb={first.driver_generate_mb:.0f} worker_peak_mb={first.worker_peak_mb:.0f} "
        f"aggregate_s={after['aggregate_s']:.1f} "
        f"aggregate_peak_mb={after['aggregate_peak_mb']:.0f} "
        f"report_open_s={after['report_open_s']:.2f} "
        f"resume_first_request_s={copy.first_request_s:.1f} "
        f"leaderboard_s={after['leaderboard_s']:.1f} runs_s={after['runs_s']:.1f}"
    )


if __name__ == "__main__":
    main()
