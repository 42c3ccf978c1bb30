"""The stack's warm launcher, `python -m evalfleet.cli.launcher SOCKET`, which `evalfleet up`
starts: it imports what the delegated commands use, then forks one child per caller
(`cli.launcher_client` is the caller's side and the protocol). The child takes the caller's
arguments, directory, umask, environment and standard streams as its own, runs
`cli.main.main`, and reports the exit code; it delivers the signals the caller forwards and
dies with the caller."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import sys
from pathlib import Path

from evalfleet.cli.launcher_client import (
    FORWARDED,
    code_digest,
    read_exactly,
    receive_message_and_fds,
    send_message,
    start_detached,
)

PRELOADED = (
    "evalfleet.cli.main",
    "evalfleet.api.launch",
    "evalfleet.cli.run",
    "evalfleet.cli.results",
    "evalfleet.flows.in_process",
    "evalfleet.flows.evaluate",
    "evalfleet.flows.aggregate",
    "evalfleet.flows.leaderboard",
    "evalfleet.engine.generation.online",
    "evalfleet.engine.scoring.aggregate",
    "evalfleet.engine.prepare.plan",
    "evalfleet.engine.prepare.resolve",
    "evalfleet.engine.scoring.score",
    "evalfleet.reports.report",
    "evalfleet.reports.leaderboard",
    "evalfleet.reports.tables",
    "evalfleet.reports.compare",
    "evalfleet.tasks.pool",
    "evalfleet.tasks.dispatch",
    "pyarrow.parquet",
    "matplotlib.pyplot",
)


def preload() -> None:
    """Import what the delegated commands use, and warm what they build first."""
    import importlib

    os.environ.setdefault("MPLBACKEND", "Agg")
    for name in PRELOADED:
        importlib.import_module(name)
    from evalfleet.cli.main import build_parser
    from evalfleet.providers.registry import load_registry

    build_parser()
    load_registry()


def serve(path: Path) -> None:
    """Accept callers until SIGTERM (`evalfleet down`, which also stops the runs in flight:
    they are this process group's)."""
    import threading

    preload()
    if threading.active_count() != 1:  # a fork would copy a thread's locks, not the thread
        names = ", ".join(t.name for t in threading.enumerate())
        raise SystemExit(f"the launcher started threads while preloading ({names})")
    digest = code_digest()
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    print(f"launcher ready on {path} (code {digest})", flush=True)
    while True:
        conn, _ = listener.accept()
        if not _same_user(conn):
            conn.close()
            continue
        if os.fork() == 0:
            try:
                listener.close()
                _run_child(conn, digest)
            finally:
                os._exit(1)
        conn.close()


def _peer(conn: socket.socket) -> tuple[int, int]:
    """The caller's pid and uid, as the kernel tells them."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    return pid, uid


def _peer_pid(conn: socket.socket) -> int:
    return _peer(conn)[0]


def _same_user(conn: socket.socket) -> bool:
    return _peer(conn)[1] == os.getuid()


def _run_child(conn: socket.socket, digest: str) -> None:
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, *FORWARDED):
        signal.signal(sig, signal.SIG_DFL)
    received = receive_message_and_fds(conn, fds=3)
    if received is None:
        return
    request, fds = received
    detach = bool(request.get("detach"))
    if request.get("digest") != digest or len(fds) != (1 if detach else 3):
        send_message(conn, {"refused": "the launcher runs other code"})
        return
    send_message(conn, {"pid": os.getpid()})
    command = next((a for a in request["argv"] if not a.startswith("-")), "?")
    how = "on its own" if detach else "for"
    print(f"pid {os.getpid()}: `evalfleet {command}` {how} pid {_peer_pid(conn)}", flush=True)
    # A detached command reads nothing and writes to the launcher's log.
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.stdout.reconfigure(line_buffering=sys.stdout.isatty())  # type: ignore[union-attr]
    sys.argv = ["evalfleet", *request["argv"]]
    _refresh_settings()
    _rebuild_leaderboards_here()
    if detach:
        conn.close()
    else:
        _watch_caller(conn)
    from evalfleet.cli.main import finish, main

    code = main(request["argv"])
    finish()
    if not detach:
        with contextlib.suppress(OSError):
            send_message(conn, {"exit": code})
    os._exit(code)


def _refresh_settings() -> None:
    """Prefect and Ray read some settings when imported: read them again from the caller's
    environment."""
    from ray._raylet import Config  # type: ignore[attr-defined]  # not in Ray's stub

    from evalfleet.flows.settings import refresh_prefect_settings

    refresh_prefect_settings()
    Config.initialize("")


def _rebuild_leaderboards_here() -> None:
    """A command forked here has the leaderboard rebuilt by a process forked here too, not by
    the served deployment's new process (which imports Prefect and pandas again: some 5 s of
    CPU, taken from the next command)."""
    from evalfleet.flows.leaderboard import rebuild_with

    def start(store_url: str, endpoint_url: str | None) -> int | None:
        if not os.environ.get("PREFECT_API_URL"):  # a run on its own temporary server
            return None
        argv = ["leaderboard", "--store", store_url, "--flow-run"]
        if endpoint_url:
            argv += ["--s3-endpoint-url", endpoint_url]
        return start_detached(argv)

    rebuild_with(start)


def _watch_caller(conn: socket.socket) -> None:
    """A thread that delivers the signals the caller forwards, and kills this process if
    the caller goes away (its connection closes)."""
    import threading

    def watch() -> None:
        while True:
            data = read_exactly(conn, 4)
            if len(data) < 4:
                os.kill(os.getpid(), signal.SIGKILL)
                return
            (signum,) = struct.unpack("!I", data)
            if signum in {int(s) for s in FORWARDED}:
                os.kill(os.getpid(), signum)

    threading.Thread(target=watch, name="launcher-caller", daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m evalfleet.cli.launcher SOCKET_PATH", file=sys.stderr)
        return 2
    serve(Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
