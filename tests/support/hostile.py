"""The hostile-input matrix: every command against the values and files nobody expects, and
what each case must never do.

A case runs one `evalfleet` command on a fresh copy of a small store (a finished run `base`
and a second run `other`, both aggregated, answered by the simulator), after damaging a file
of it or with a hostile value on its command line. For every case:

- the exit code is 0 or 2, and no traceback is printed;
- nothing stored changed unless changing it is the command's job (`may_change`), and no record
  is lost;
- no request reached the simulator whose answer is not stored (`paid_unstored`), and every
  billed one (each 200, retries of empty answers included) is in a record's ledger or the
  run's ledger entries, at its price (`billed_unrecorded_usd`);
- a command that exits 0 shows what it should (`silent` counts those that do not).

`tests/hostile/` asserts all of this per case; `perf/hostile.py` runs the same matrix and
prints the counts.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BASE_RUN, OTHER_RUN = "base", "other"
MODELS = ("openai/sim-0.3", "openai/sim-0.7")
JUDGE = "anthropic/sim-0.9"
# The matrix's simulator: models whose name ends so answer with that fault every time.
MONEY_FAULTS = {
    "empty": {"empty_content": 1.0},  # an empty answer, retried twice
    "spent": {"empty_length": 1.0},  # a reasoning model that spent max_tokens thinking
    "nousage": {"no_usage": 1.0},
    "negusage": {"negative_usage": 1.0},
}
SIMULATOR_CONFIG = {
    "latency": {"ms": 1},
    "rules": [{"match": f"*-{tag}", "faults": faults} for tag, faults in MONEY_FAULTS.items()],
}

Damage = Callable[[Path], None]


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]  # "{store}" and "{sim}" are filled in
    damage: Damage | None = None
    may_change: tuple[str, ...] = ()  # store path prefixes the command may write
    # when it exits 0, what its output must hold (else the case is `silent`)
    must_show: tuple[str, ...] = ()
    exit_codes: tuple[int, ...] = (0, 2)
    # environment variables set for the command ("{store}" filled in), restored afterwards
    env: tuple[tuple[str, str], ...] = ()


@dataclass
class Outcome:
    case: Case
    code: int
    out: str
    err: str
    traceback: bool
    changed: list[str] = field(default_factory=list)  # outside may_change
    lost: list[str] = field(default_factory=list)  # records gone or altered
    paid_unstored: int = 0
    billed_unrecorded_usd: float = 0.0
    silent: bool = False

    def problems(self) -> list[str]:
        found = []
        if self.code not in self.case.exit_codes:
            found.append(f"exit {self.code}")
        if self.traceback:
            found.append("traceback")
        if self.changed:
            found.append(f"changed {self.changed[:3]}")
        if self.lost:
            found.append(f"lost {self.lost[:3]}")
        if self.paid_unstored:
            found.append(f"{self.paid_unstored} paid, not stored")
        if self.billed_unrecorded_usd > 1e-12:
            found.append(f"${self.billed_unrecorded_usd:.6f} billed, not recorded")
        if self.silent:
            found.append("exit 0 without what it should show")
        return found


# --- damage ------------------------------------------------------------------------------


def _files(store: Path, pattern: str) -> list[Path]:
    found = sorted(store.glob(pattern))
    assert found, f"nothing matches {pattern} in {store}"
    return found


def _latest_version(store: Path) -> str:
    return json.loads((store / BASE_RUN / "results" / "latest.json").read_text())["version"]


def truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 2)])


def emptied(path: Path) -> None:
    path.write_bytes(b"")


def garbage(path: Path) -> None:
    path.write_bytes(hashlib.sha256(path.name.encode()).digest() * 37)


def deleted(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


DAMAGES = {"truncated": truncated, "emptied": emptied, "garbage": garbage, "deleted": deleted}


def store_file(store: Path, which: str) -> Path:
    """The file (or folder) of run `base` that a damage case hits."""
    run = store / BASE_RUN
    if which == "latest.json":
        return run / "results" / "latest.json"
    if which == "samples.parquet":
        return run / "results" / _latest_version(store) / "samples.parquet"
    if which == "results version":
        return run / "results" / _latest_version(store)
    if which == "plan":
        return _files(run, "plan/*.parquet")[0]
    if which == "manifest":
        return run / "manifest.json"
    raise ValueError(which)


def damage_of(which: str, how: str) -> Damage:
    def apply(store: Path) -> None:
        DAMAGES[how](store_file(store, which))

    return apply


FILES = {  # file -> the damages that apply to it
    "latest.json": ("truncated", "emptied", "garbage", "deleted"),
    "samples.parquet": ("truncated", "emptied", "garbage", "deleted"),
    "results version": ("deleted",),
    "plan": ("truncated", "emptied", "garbage", "deleted"),
    "manifest": ("truncated", "emptied", "garbage", "deleted"),
}
REPAIRED_BY_AGGREGATE = {"latest.json", "samples.parquet", "results version"}


def damaged_store_cases() -> list[Case]:
    """Each store file damaged each way, under each command that reads it."""
    cases = []
    results = f"{BASE_RUN}/results/"
    for which, hows in FILES.items():
        for how in hows:
            damage = damage_of(which, how)
            tag = f"{which} {how}"
            repairable = which in REPAIRED_BY_AGGREGATE
            cases += [
                # the rest of the store renders; the damaged run is named apart
                Case(
                    f"leaderboard | {tag}",
                    ("leaderboard", "--store", "{store}"),
                    damage,
                    ("leaderboard/",),
                    ("Runs left out, and why", f"{BASE_RUN}/", "## zerobench"),
                    (0,),
                ),
                Case(
                    f"report | {tag}",
                    ("report", BASE_RUN, "--store", "{store}"),
                    damage,
                    (results,),
                    exit_codes=(2,),
                ),  # fmt: skip
                Case(
                    f"compare | {tag}",
                    ("compare", f"{BASE_RUN}:{MODELS[0]}", f"{BASE_RUN}:{MODELS[1]}")
                    + ("--store", "{store}"),
                    damage,
                    (results,),
                    exit_codes=(2,),
                ),
                Case(
                    f"status | {tag}",
                    ("status", BASE_RUN, "--store", "{store}"),
                    damage,
                    exit_codes=(2,),
                ),  # fmt: skip
                # aggregate is the repair of results; a plan or a manifest it cannot rebuild
                # (it records the answer counts of its listing: evalfleet.engine.store.counts)
                Case(
                    f"aggregate | {tag}",
                    ("aggregate", BASE_RUN, "--store", "{store}"),
                    damage,
                    (results, f"{BASE_RUN}/counts.json", "leaderboard/"),
                    ("results in",) if repairable else (),
                    (0,) if repairable else (2,),
                ),
                Case(
                    f"judge | {tag}",
                    ("judge", BASE_RUN, "--judge", JUDGE, "--store", "{store}")
                    + ("--simulator-url", "{sim}"),
                    damage,
                    (f"{BASE_RUN}/", "leaderboard/"),
                    exit_codes=(0,) if repairable else (2,),
                ),
            ]
    return cases


# --- hostile names and numbers --------------------------------------------------------------

HOSTILE_TEXT = {  # what nobody expects in a name
    "dollar": "x$HOME",
    "pipe": "x|y",
    "lt": "x<img",
    "gt": "x>y",
    "amp": "x&y",
    "quote": 'x"y',
    "apostrophe": "x'y",
    "newline": "x\ny",
    "300 chars": "x" * 300,
    "unicode": "mod\u00e8le-\u6a21\u578b",
}
HOSTILE_NUMBERS = ("nan", "inf", "-1", "0", "1e308")
RUN = ("run", "-b", "zerobench", "--epochs", "1", "--dataset-path", "{dataset}")
RUN += ("--store", "{store}", "--simulator-url", "{sim}")


def name_cases() -> list[Case]:
    """Each hostile text as a model, a simulated model's tag, a judge and a run id, under the
    commands that take one: refused in one line, nothing written, nothing asked."""
    cases = []
    for label, text in HOSTILE_TEXT.items():
        tag = f"| {label}"
        cases += [
            # a real run with that model: refused before a request (or, where the name is
            # fine, run and stored: `paid_unstored` would catch a paid, unstored answer)
            Case(
                f"run model {tag}",
                (*RUN, "-m", f"openai/{text}", "--run-id", "h1"),
                exit_codes=(2,),
            ),  # fmt: skip
            Case(
                f"run simulated tag {tag}",
                (*RUN, "-m", f"openai/sim-0.5-{text}", "--run-id", "h2"),
                exit_codes=(2,),
            ),
            Case(f"run id {tag}", (*RUN, "-m", MODELS[0], "--run-id", text), exit_codes=(2,)),
            Case(
                f"judge {tag}",
                ("judge", BASE_RUN, "--judge", f"anthropic/{text}", "--store", "{store}")
                + ("--simulator-url", "{sim}"),
                exit_codes=(2,),
            ),
            Case(
                f"compare {tag}",
                ("compare", f"{BASE_RUN}:openai/{text}", BASE_RUN, "--store", "{store}"),
                exit_codes=(2,),
            ),
            Case(f"report {tag}", ("report", text, "--store", "{store}"), exit_codes=(2,)),
            Case(f"status {tag}", ("status", text, "--store", "{store}"), exit_codes=(2,)),
            Case(f"aggregate {tag}", ("aggregate", text, "--store", "{store}"), exit_codes=(2,)),
        ]
    return cases


NUMBER_OPTIONS = (  # run options that take a number, each given every hostile number
    "--max-cost-usd",
    "--limit",
    "--temperature",
    "--top-p",
    "--max-tokens",
    "--max-in-flight",
    "--workers",
    "--timeout-s",
    "--max-attempts",
    "--seed",
)
VALID = {  # the hostile numbers each option takes as they are (the rest are refused)
    "--max-cost-usd": {"1e308"},  # a finite cap above 0, however high
    "--temperature": {"0"},
    "--seed": {"-1", "0"},
}


def number_cases() -> list[Case]:
    """Each hostile number for each numeric option, on `run --estimate` (which sends
    nothing) and on `report --media-mb` and `--rpm`: refused in one line, or taken."""
    cases = []
    for option in NUMBER_OPTIONS:
        for number in HOSTILE_NUMBERS:
            ok = number in VALID.get(option, set())
            cases.append(
                Case(
                    f"run {option} {number}",
                    (*RUN, "-m", MODELS[0], "--run-id", "n1", "--estimate", option, number),
                    must_show=("total",) if ok else (),
                    exit_codes=(0,) if ok else (2,),
                )
            )
    for number in HOSTILE_NUMBERS:
        cases.append(
            Case(
                f"run --rpm {number}",
                (*RUN, "-m", MODELS[0], "--run-id", "n2", "--estimate")
                + ("--rpm", f"{MODELS[0]}={number}"),
                exit_codes=(2,),
            )
        )
        cases.append(  # 0 shows no media, a huge budget is a budget; the rest are refused
            Case(
                f"report --media-mb {number}",
                ("report", BASE_RUN, "--store", "{store}", "--media-mb", number),
                None,
                (f"{BASE_RUN}/results/",),
                ("report:",),
            )
        )
    return cases


def money_cases() -> list[Case]:
    """Answers that are billed but are no answer (retried empty ones, a reasoning model that
    spent its output limit, no usage, impossible usage), from each provider, in a new run, a
    capped run and a resume of `base` extended with the models (the three providers in one
    command): every billed attempt recorded
    at its price, a cap that counts them, nothing quarantined and asked again."""
    cases = []
    for tag in MONEY_FAULTS:  # one command asks all three provider APIs: each is checked
        models = [
            x for p in ("openai", "anthropic", "google") for x in ("-m", f"{p}/sim-0.5-{tag}")
        ]
        # an empty answer, a spent limit, an impossible usage end as errors: exit 5
        ended = (0,) if tag == "nousage" else (5,)
        cases += [
            Case(
                f"run | {tag}",
                (*RUN, *models, "--run-id", f"m-{tag}", "--limit", "2"),
                may_change=(f"m-{tag}/", "leaderboard/"),
                must_show=("tokens and cost",),
                exit_codes=ended,
            ),
            Case(
                f"run capped | {tag}",
                (*RUN, *models, "--run-id", f"c-{tag}")
                + ("--max-cost-usd", "0.002", "--max-in-flight", "2"),
                may_change=(f"c-{tag}/", "leaderboard/"),
                must_show=("tokens and cost",),
                exit_codes=(*ended, 3),
            ),
            Case(
                f"resume extended | {tag}",
                (*RUN, "-m", MODELS[0], "-m", MODELS[1], *models)
                + ("--run-id", BASE_RUN, "--extend"),
                may_change=(f"{BASE_RUN}/", "leaderboard/"),
                must_show=("tokens and cost",),
                exit_codes=ended,
            ),
        ]
    return cases


def all_cases() -> list[Case]:
    from tests.support.hostile_fleet import fleet_cases
    from tests.support.hostile_numbers import numbers_cases
    from tests.support.hostile_places import places_cases
    from tests.support.hostile_settings import settings_cases

    return [
        *damaged_store_cases(),
        *name_cases(),
        *number_cases(),
        *money_cases(),
        *settings_cases(),
        *places_cases(),
        *fleet_cases(),
        *numbers_cases(),
    ]


# --- running a case ----------------------------------------------------------------------


def snapshot(store: Path) -> dict[str, str]:
    return {
        str(path.relative_to(store)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in store.rglob("*")
        if path.is_file()
    }


def paid_requests(log: Path) -> list[str]:
    """Request ids the simulator answered with 200 (what was paid for)."""
    if not log.exists():
        return []
    ids = []
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("status") == 200 and entry.get("request_id"):
            ids.append(entry["request_id"])
    return ids


def stored_attempts(store: Path) -> dict[str, float | None]:
    """USD recorded per request id: each record's request and billed attempts (its ledger),
    and the ledger entries a run kept apart; None for usage counted here (an estimate: what
    it records is not the provider's figure)."""
    found: dict[str, float | None] = {}

    def add(attempt: dict) -> None:
        cost = (attempt.get("cost") or {}).get("total") or 0.0
        found[attempt.get("request_id")] = None if attempt.get("estimated") else cost

    for folder in ("completions", "judgements"):
        for path in store.glob(f"*/{folder}/**/*.json"):
            with contextlib.suppress(ValueError, OSError, AttributeError, TypeError):
                record = json.loads(path.read_text())
                found.setdefault(record.get("request_id"), None)
                for attempt in record.get("ledger") or ():
                    add(attempt)
    for path in store.glob("*/ledger/**/*.json"):
        with contextlib.suppress(ValueError, OSError, AttributeError, TypeError, KeyError):
            add(json.loads(path.read_text())["attempt"])
    return found


def billed_requests(log: Path, since: set[str], sim_url: str) -> dict[str, float]:
    """USD the simulator billed per request id (each 200 it answered, at the registry's price
    of its model), for the requests not in `since`."""
    from evalfleet.providers.registry import resolve_model

    out = {}
    if not log.exists():
        return out
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        rid = entry.get("request_id")
        if entry.get("status") != 200 or not rid or rid in since:
            continue
        provider = {"gemini": "google"}.get(
            entry["route"].split(".")[0], entry["route"].split(".")[0]
        )
        try:
            config = resolve_model(f"{provider}/{entry['model']}", simulator_url=sim_url)
        except ValueError:  # a model the registry does not know: priced at nothing here
            out[rid] = 0.0
            continue
        out[rid] = config.cost_usd(entry["input_tokens"] or 0, entry["output_tokens"] or 0)
    return out


def call_in_process(argv: list[str]) -> tuple[int, str, str, bool]:
    """`evalfleet ARGV` in this process: (exit code, stdout, stderr, traceback printed)."""
    from evalfleet.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    crashed = False
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = int(exc.code or 0)
        except BaseException:  # what the user would see as a traceback
            traceback.print_exc(file=err)
            crashed, code = True, 1
    text = err.getvalue()
    return code, out.getvalue(), text, crashed or "Traceback (most recent call last)" in text


def call_subprocess(argv: list[str]) -> tuple[int, str, str, bool]:
    done = subprocess.run(
        [sys.executable, "-m", "evalfleet.cli.main", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TQDM_DISABLE": "1"},
    )
    both = done.stdout + done.stderr
    return done.returncode, done.stdout, done.stderr, "Traceback (most recent call" in both


def run_case(
    case: Case,
    base: Path,
    work: Path,
    sim,
    sim_log: Path,
    dataset: str,
    call: Callable[[list[str]], tuple[int, str, str, bool]] = call_in_process,
) -> Outcome:
    """`sim` is the simulator's handle (`evalfleet.simulator.process`): its URL, and its request log
    flushed before each reading."""
    store = work / hashlib.sha256(case.name.encode()).hexdigest()[:12]
    shutil.rmtree(store, ignore_errors=True)
    shutil.copytree(base, store)
    if case.damage is not None:
        case.damage(store)
    before = snapshot(store)
    sim.flush_log()
    paid_before = set(paid_requests(sim_log))
    argv = [
        a.replace("{store}", str(store)).replace("{sim}", sim.url).replace("{dataset}", dataset)
        for a in case.argv
    ]
    with _environment({k: v.replace("{store}", str(store)) for k, v in case.env}):
        code, out, err, crashed = call(argv)
    after = snapshot(store)
    sim.flush_log()
    changed = sorted(
        key
        for key in before.keys() | after.keys()
        if before.get(key) != after.get(key) and not key.startswith(case.may_change)
    )
    lost = sorted(
        key
        for key, digest in before.items()
        if ("/completions/" in key or "/judgements/" in key) and after.get(key) != digest
    )
    paid_now = [r for r in paid_requests(sim_log) if r not in paid_before]
    stored = stored_attempts(store) if paid_now else {}
    silent = code == 0 and not all(text in out + err for text in case.must_show)
    outcome = Outcome(case, code, out, err, crashed, changed, lost)
    outcome.paid_unstored = sum(r not in stored for r in paid_now)
    if paid_now:
        bill = billed_requests(sim_log, paid_before, sim.url)
        # a billed request not recorded, or recorded at less than its price (an estimate
        # is recorded as such, and not compared)
        outcome.billed_unrecorded_usd = sum(
            usd - (stored.get(rid) or 0.0)
            for rid, usd in bill.items()
            if rid not in stored or (stored[rid] is not None and usd - stored[rid] > 1e-12)
        )
    outcome.silent = silent
    shutil.rmtree(store, ignore_errors=True)
    return outcome


@contextlib.contextmanager
def _environment(values: dict[str, str]):
    """These variables set in os.environ (a subprocess call inherits them), then restored."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def summary(outcomes: list[Outcome]) -> str:
    """The figures perf/hostile.py prints last."""
    return (
        f"cases={len(outcomes)} "
        f"tracebacks={sum(o.traceback for o in outcomes)} "
        f"paid_unstored={sum(o.paid_unstored for o in outcomes)} "
        f"lost={sum(bool(o.lost) for o in outcomes)} "
        f"silent={sum(o.silent for o in outcomes)} "
        f"billed_unrecorded_usd={sum(o.billed_unrecorded_usd for o in outcomes):.6f}"
    )


def build_base(store: Path, dataset: str, sim_url: str, call=call_in_process) -> None:
    """The store every case starts from: run `base` (two models) and run `other` (one), on
    ZeroBench's demo questions, greedy and one sampled epoch, aggregated, with a leaderboard."""
    for run_id, models in ((BASE_RUN, MODELS), (OTHER_RUN, ("openai/sim-0.5",))):
        argv = ["run", *(x for m in models for x in ("-m", m)), "-b", "zerobench"]
        argv += ["--epochs", "1", "--dataset-path", dataset, "--run-id", run_id]
        argv += ["--store", str(store), "--simulator-url", sim_url]
        code, out, err, _ = call(argv)
        if code != 0:
            raise RuntimeError(f"could not build the hostile store: {err[-2000:]}")
