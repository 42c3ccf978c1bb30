"""How long planning a resume takes when a run already holds 100,000 completions (or, with
--stored and --planned, any share of a larger run: a million planned against 500,000 stored).

Builds the work items of a synthetic run with the real planner (`engine.run.items.answer_items`:
real keys and request hashes; default 2 models x 1 benchmark x 10,000 samples x 5 epochs =
100,000 items), stores one small record for each of the first --stored items in a local store
and (unless --no-s3) on a moto S3 server on 127.0.0.1, then times:

  plan_s_local    what a resume does before its first request: engine.run.state.list_records
                  and the plan's sweep of every answer against that listing
                  (engine.prepare.sweep.sweep: no record read, the places of the rest kept)
  read_back_s_local  every record the plan counted, read and decoded
                  (engine.run.state.undecodable), as a resume does after its first requests
  plan_s_s3       the plan against the S3 store, over HTTP with boto3
  list_floor_s3   one bare paginated list_objects_v2 of the run's completions prefix with a
                  plain boto3 client, same server, same process (no parsing, no sorting)

Each figure is the best of --repeat rounds; in each S3 round the bare listing and the plan run
back to back, so both see the same server state. Setup is not timed: the local records are
written with put_many_if_absent; the S3 objects are created straight in the backend of the moto
server, which runs in a child process (100,000 PUTs over HTTP would take many minutes and
measure moto, not the planner). moto answers each listing page by sorting every key under the
prefix, so one listing of 100,000 keys takes about a minute: the whole script ~5 minutes (a
listing of 500,000 would take most of an hour: --no-s3 leaves S3 out).
Progress goes to stdout; the last line is
`plan_s_local=<x> read_back_s_local=<r> plan_s_s3=<y> list_floor_s3=<z> objects=<n>
planned=<m>` (without the S3 figures under --no-s3).

Usage: python perf/resume.py [--planned 100000] [--stored PLANNED] [--models 2] [--epochs 5]
                             [--repeat 2] [--no-s3] [--profile] [--smoke]
       python perf/resume.py --planned 1000000 --stored 500000 --no-s3   (the issue's scale)
  --smoke   100 items planned, 50 stored, one round, S3 included: the same code in seconds
            (a check that the script works, not a measurement)
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pickle
import pstats
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from evalfleet.storage.base import Store  # noqa: E402
from perf.work import work_folder  # noqa: E402

RUN_ID = "perf-resume"
BUCKET = "evalfleet-perf"
PREFIX = "team/runs"


def say(message: str) -> None:
    print(message, flush=True)


def synthetic_items(samples: int, models: int, epochs: int, work: Path):
    """The synthetic run and its work items (real keys and request hashes)."""
    from synthetic import synthetic_run

    from evalfleet.engine.run.items import answer_items

    run = synthetic_run(RUN_ID, work / "plan-store", models=models, samples=samples, epochs=epochs)
    return run, answer_items(run)


def record_bytes(item) -> bytes:
    from evalfleet.core.record import Record

    key = item.key
    return Record(
        run_id=item.run_id,
        stage=key.stage,
        model=key.model,
        benchmark=key.benchmark,
        sample_id=key.sample_id,
        epoch=key.epoch,
        request_hash=item.request_hash,
        response="So the final answer is {7}",
    ).to_bytes()


def plan(store, run) -> tuple[float, Counter, int]:
    """What a resume does before its first request: list, classify from the listing (no
    record read: a local store's are read back after the first requests, `read_back`), keep
    the places of the rest."""
    elapsed, swept = planned(store, run)
    return elapsed, swept.states, len(swept.todo)


def planned(store, run):
    """The plan's own listing and sweep (`evalfleet.engine.prepare.plan`), timed."""
    from evalfleet.engine.prepare.sweep import sweep
    from evalfleet.engine.run.items import AnswerSpace
    from evalfleet.engine.run.state import list_records
    from evalfleet.storage import layout

    started = time.perf_counter()
    listing = list_records(store, RUN_ID, (layout.ANSWER,))
    swept = sweep(AnswerSpace(run), listing, {"missing", "stale", "failed"}, set())
    return time.perf_counter() - started, swept


def read_back(local, run) -> float:
    """The read-back after the first requests: every record the plan counted, read and
    decoded (`evalfleet.engine.run.state.undecodable`), none found undecodable."""
    from evalfleet.engine.run.state import undecodable

    _, swept = planned(local, run)
    keys = swept.unverified
    started = time.perf_counter()
    bad = undecodable(local, keys)
    elapsed = time.perf_counter() - started
    if bad:
        raise SystemExit(f"{len(bad)} records read back undecodable, e.g. {bad[0]}")
    say(f"read back {len(keys)} records after the first requests: {elapsed:.2f} s")
    return elapsed


def bare_listing(client, prefix: str) -> tuple[float, int]:
    started = time.perf_counter()
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        keys.extend(obj["Key"] for obj in page.get("Contents", ()))
    return time.perf_counter() - started, len(keys)


def check(label: str, states: Counter, todo: int, stored: int, planned: int) -> None:
    expected = {"done": stored, "missing": planned - stored}
    if dict(+states) != +Counter(expected) or todo != planned - stored:
        raise SystemExit(
            f"{label}: expected {expected} and {planned - stored} to do, got "
            f"{dict(states)} and {todo}"
        )


def serve_s3(objects_file: str) -> None:
    """Child process: a moto S3 server holding the objects of `objects_file` (pickled
    {key: body} dicts one after the other), created straight in its backend. Prints
    `READY <endpoint>`, then serves until stdin closes. A process of its own, so that neither
    the server's CPU nor its ~100,000 objects (which every garbage collection would walk)
    weigh on the timed planner."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    from tests.support.s3_server import MotoS3Server

    server = MotoS3Server()
    server.start()
    try:
        server.create_bucket(BUCKET)
        backend = s3_backends[DEFAULT_ACCOUNT_ID]["global"]
        with open(objects_file, "rb") as f:
            while True:  # one pickled dict per chunk
                try:
                    objects = pickle.load(f)
                except EOFError:
                    break
                for key, body in objects.items():
                    backend.put_object(BUCKET, key, body, disable_notification=True)
        print(f"READY {server.endpoint}", flush=True)
        sys.stdin.read()
    finally:
        server.stop()


class ListedKeys(Store):
    """One listing served from memory: the planner's own cost, without any I/O."""

    url = "memory:"

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys

    def list(self, prefix: str) -> list[str]:
        return self.keys

    def describe(self) -> str:
        return "keys in memory"

    def put_if_absent(self, key: str, data: bytes) -> bool:
        raise NotImplementedError

    def check_writable(self) -> None:
        raise NotImplementedError

    def put(self, key: str, data: bytes) -> None:
        raise NotImplementedError

    def get(self, key: str) -> bytes | None:
        raise NotImplementedError

    def exists(self, key: str) -> bool:
        raise NotImplementedError

    def delete(self, key: str) -> None:
        raise NotImplementedError

    def list_dirs(self, prefix: str) -> list[str]:
        raise NotImplementedError


@dataclass
class Figures:
    """The best of each timed round, in seconds."""

    local: list[float] = field(default_factory=list)
    s3: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    read_back: float = 0.0

    def line(self, stored: int, planned: int) -> str:
        out = f"plan_s_local={min(self.local):.3f} read_back_s_local={self.read_back:.3f}"
        if self.s3:
            out += f" plan_s_s3={min(self.s3):.3f} list_floor_s3={min(self.floor):.3f}"
        return f"{out} objects={stored} planned={planned}"


SMOKE = {"planned": 100, "stored": 50, "repeat": 1}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--planned", type=int, default=100_000, help="items the run plans")
    parser.add_argument("--stored", type=int, help="items already stored (default: all)")
    parser.add_argument("--models", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-s3", action="store_true", help="time the local store only")
    parser.add_argument("--profile", action="store_true", help="profile one plan of each store")
    parser.add_argument("--serve-s3", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="100 items: a check, not a figure")
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(SMOKE)
    per_sample = args.models * args.epochs
    if args.planned % per_sample:
        parser.error(f"--planned must be a multiple of models x epochs ({per_sample})")
    args.samples = args.planned // per_sample
    args.stored = args.planned if args.stored is None else args.stored
    if not 0 <= args.stored <= args.planned:
        parser.error("--stored must be between 0 and --planned")
    return args


def profiled(store, run) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    plan(store, run)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
    say(out.getvalue())


def record_chunks(items, chunk: int = 10_000) -> Iterator[dict[str, bytes]]:
    """The stored records, {key: bytes}, a chunk at a time: 500,000 bodies made at once and
    freed left the timed process's memory scattered (planning was a third slower after)."""
    for start in range(0, len(items), chunk):
        yield {item.store_key: record_bytes(item) for item in items[start : start + chunk]}


def write_local(local, items) -> None:
    t0 = time.perf_counter()
    for bodies in record_chunks(items):
        written = local.put_many_if_absent(bodies)
        assert all(written.values())
    os.sync()  # a resume reads records written long ago, not ones still being written back
    elapsed = time.perf_counter() - t0
    say(f"local: wrote {len(items)} records under {local.root} in {elapsed:.1f} s")


def start_s3(work: Path, items) -> tuple[subprocess.Popen[str], str]:
    """The moto server process holding the records of `items`, and its endpoint."""
    t0 = time.perf_counter()
    objects_file = work / "objects.pickle"
    with objects_file.open("wb") as f:
        for bodies in record_chunks(items):
            pickle.dump({f"{PREFIX}/{k}": v for k, v in bodies.items()}, f)
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve-s3", str(objects_file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    ready = child.stdout.readline().split()
    if ready[:1] != ["READY"]:
        raise SystemExit("the S3 server process did not start")
    elapsed = time.perf_counter() - t0
    say(f"s3: moto server at {ready[1]} holds {len(items)} objects ({elapsed:.1f} s)")
    return child, ready[1]


def time_local(local, run, items, stored: int, figures: Figures, repeat: int) -> None:
    for round_ in range(1, repeat + 1):
        elapsed, states, todo = plan(local, run)
        check("local", states, todo, stored, len(items))
        figures.local.append(elapsed)
        say(f"round {round_}: plan local {elapsed:.2f} s")


def time_s3(endpoint: str, run, items, stored: int, figures: Figures, args) -> None:
    import boto3
    from botocore.config import Config

    from evalfleet.storage import layout, open_store

    s3 = open_store(f"s3://{BUCKET}/{PREFIX}", s3_endpoint_url=endpoint)
    if stored:
        some = items[stored // 2]  # over HTTP, as the planner will read
        assert s3.get(some.store_key) == record_bytes(some)
    client = boto3.client(
        "s3", endpoint_url=endpoint, config=Config(s3={"addressing_style": "path"})
    )
    prefix = f"{PREFIX}/{layout.stage_prefix(RUN_ID, layout.ANSWER)}"
    for round_ in range(1, args.repeat + 1):
        floor, listed = bare_listing(client, prefix)
        if listed != stored:
            raise SystemExit(f"the bare listing found {listed} objects, not {stored}")
        figures.floor.append(floor)
        elapsed, states, todo = plan(s3, run)
        check("s3", states, todo, stored, len(items))
        figures.s3.append(elapsed)
        say(f"round {round_}: plan s3 {elapsed:.2f} s, bare s3 listing {floor:.2f} s")
    if args.profile:
        profiled(s3, run)


def planner_cpu(local, run, items, stored: int) -> None:
    """What the plan adds to the listing: the planner's own work on the same keys, no I/O."""
    from evalfleet.core import collector
    from evalfleet.storage import layout

    keys = local.list(layout.stage_prefix(RUN_ID, layout.ANSWER))
    cpu, states, todo = plan(ListedKeys(keys), run)
    check("memory", states, todo, stored, len(items))
    t0 = time.perf_counter()
    with collector.held_back():  # as in list_records
        layout.parse_record_keys(RUN_ID, keys)
    parse = time.perf_counter() - t0
    say(
        f"planner without I/O (the sweep over {len(keys)} listed keys): {cpu:.2f} s, "
        f"of which parse_record_keys {parse:.2f} s"
    )


def main() -> None:
    args = parse_args()

    from tests.support.s3_server import FAKE_AWS_ENV

    os.environ.update(FAKE_AWS_ENV)
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
        os.environ.pop(name, None)
    if args.serve_s3:
        serve_s3(args.serve_s3)
        return

    from evalfleet.storage import LocalStore

    work = work_folder("resume")
    t0 = time.perf_counter()
    run, items = synthetic_items(args.samples, args.models, args.epochs, work)
    say(f"built {len(items)} work items in {time.perf_counter() - t0:.2f} s")
    stored = items[: args.stored]

    figures = Figures()
    child: subprocess.Popen[str] | None = None
    try:
        local = LocalStore(work / "runs")
        write_local(local, stored)
        endpoint = None
        if not args.no_s3:
            child, endpoint = start_s3(work, stored)
        # The local rounds first: right after a minute of S3 listing the local plan was seen
        # to run up to 2x slower once (on a 2-core machine the server process and the kernel's
        # writeback compete with it).
        time_local(local, run, items, args.stored, figures, args.repeat)
        figures.read_back = read_back(local, run)
        if args.profile:
            profiled(local, run)
        if endpoint is not None:
            time_s3(endpoint, run, items, args.stored, figures, args)
        planner_cpu(local, run, items, args.stored)
    finally:
        if child is not None:
            child.stdin.close()
            child.wait(timeout=60)
    print(figures.line(args.stored, len(items)), flush=True)


if __name__ == "__main__":
    main()
