"""Hostile cases for the fleet-over-time flags (issue 47): `run --reuse-from` (an unknown
run, '*' on an empty store, a run of another benchmark, a damaged record in the source run),
`drift --notify` (a malformed URL, a port that does not answer, a non-http scheme) and
`history` (an unknown model, an empty store), on the matrix's store
(`tests/support/hostile.py`). Refused in one line before anything is asked or written, or
done with nothing lost."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

from tests.support.hostile import BASE_RUN, MODELS, OTHER_RUN, RUN, Case, _files, garbage

DRIFT = ("leaderboard/drift.csv",)


def emptied_store(store: Path) -> None:
    """Every run gone: the store is an empty directory."""
    for child in store.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()


def other_is_another_benchmark(store: Path) -> None:
    """Run `other` says it ran ROME (its records stay ZeroBench's: no request hash matches)."""
    path = store / OTHER_RUN / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["request"]["benchmarks"] = ["rome"]
    path.write_text(json.dumps(manifest))


def damaged_source_record(store: Path) -> None:
    garbage(_files(store / OTHER_RUN, "completions/**/*.json")[0])


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fleet_cases() -> list[Case]:
    new = "fleet1"
    reuse = (*RUN, "-m", "openai/sim-0.5", "--run-id", new, "--reuse-from")
    ran = (f"{new}/", "leaderboard/", "_board_cache/")
    store = ("--store", "{store}")
    return [
        Case("reuse-from unknown run", (*reuse, "no-such-run"), exit_codes=(2,)),
        Case(
            "reuse-from * on an empty store",
            (*reuse, "*"),
            emptied_store,
            ran,
            ("pass@1",),
            (0,),
        ),
        Case(
            "reuse-from a run of another benchmark",
            (*reuse, OTHER_RUN),
            other_is_another_benchmark,
            ran,
            ("pass@1",),
            (0,),
        ),
        Case(
            "reuse-from a damaged record in the source run",
            (*reuse, OTHER_RUN),
            damaged_source_record,
            ran,
            ("pass@1",),
            (0,),
        ),
        Case(
            "drift --notify malformed URL",
            ("drift", *store, "--notify", "http//x"),
            exit_codes=(2,),
        ),
        Case(
            "drift --notify a URL without a host",
            ("drift", *store, "--notify", "http://"),
            exit_codes=(2,),
        ),
        Case(
            "drift --notify non-http scheme",
            ("drift", *store, "--notify", "file:///etc/passwd"),
            exit_codes=(2,),
        ),
        Case(
            "drift --notify a port that does not answer",
            ("drift", *store, "--notify", f"http://127.0.0.1:{closed_port()}/"),
            may_change=DRIFT,
            must_show=("nothing flagged: nothing sent",),
            exit_codes=(0,),
        ),
        Case(
            "history unknown model",
            ("history", "openai/no-such-model", *store),
            exit_codes=(2,),
        ),
        Case(
            "history empty store",
            ("history", MODELS[0], *store),
            emptied_store,
            exit_codes=(2,),
        ),
        Case("history of a run id", ("history", BASE_RUN, *store), exit_codes=(2,)),
        Case(
            "history of a known model",
            ("history", MODELS[0], *store),
            must_show=(f"{BASE_RUN}  ",),
            exit_codes=(0,),
        ),
    ]
