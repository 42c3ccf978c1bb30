"""The stack's warm launcher: while `evalfleet up` runs, a command runs in a process forked
from one that has already imported Prefect, Ray, pandas and evalfleet, instead of spending
some three seconds of CPU importing them again.

`evalfleet up` starts `python -m cli.warm SOCKET` (`serve`). The `evalfleet` executable first
calls `delegate`, which imports only the standard library. For the commands in `DELEGATED`,
when the stack's launcher answers and runs the same code, it sends its arguments, working
directory, umask, environment and its standard input, output and error (the descriptors
themselves) over a Unix socket only this user can open. The launcher forks; the child takes
all of these as its own and runs `cli.main.main` exactly as the executable would, writing
to the caller's terminal. The caller waits for the exit code and forwards the signals it
gets (Ctrl-C, SIGTERM, SIGHUP) to the child; if the caller dies (SIGKILL), the child is
killed at once, as the command's own process would have been.

Not delegated, and run in the calling process as before: any other command, a caller whose
environment names another Prefect server or Ray cluster (PREFECT_API_URL, RAY_ADDRESS), a
launcher that runs other code than the caller's (the files changed since `up`), or
EVALFLEET_NO_LAUNCHER=1.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys
from pathlib import Path

DELEGATED = {"run", "judge", "aggregate", "report", "compare", "leaderboard", "status", "runs"}
CODE_ROOMS = (
    "cli",
    "flows",
    "stack",
    "reports",
    "engine",
    "tasks",
    "providers",
    "simulator",
    "benchmarks",
    "storage",
    "metrics",
    "core",
    "deployments",
)
MAGIC = b"EVF1"
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def code_digest() -> str:
    """Which code this checkout holds (`core.checkout`): the launcher compares it with its
    own."""
    from core.checkout import checkout_digest

    return checkout_digest(CODE_ROOMS)


# --- the caller's side -------------------------------------------------------------------------


def launcher_socket() -> Path | None:
    """The running stack's launcher socket, if `up` recorded one whose process is alive."""
    folder = os.environ.get("EVALFLEET_STACK")
    if folder:
        path = Path(folder).expanduser()
    else:
        home = Path(os.environ.get("EVALFLEET_HOME", "~/.evalfleet")).expanduser()
        path = home / "stack"
    try:
        recorded = json.loads((path / "stack.json").read_text()).get("launcher") or {}
        fields = Path(f"/proc/{recorded['pid']}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if fields[0] == "Z" or int(fields[19]) != recorded.get("started"):
        return None
    return Path(recorded["address"])


def delegate(argv: list[str]) -> int | None:
    """Run `evalfleet ARGV` in the stack's launcher; its exit code, or None when it is not
    delegated (the caller runs it itself)."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in DELEGATED or os.environ.get("EVALFLEET_NO_LAUNCHER") == "1":
        return None
    if os.environ.get("PREFECT_API_URL") or os.environ.get("RAY_ADDRESS"):
        return None
    path = launcher_socket()
    if path is None:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except OSError:
        conn.close()
        return None
    umask = os.umask(0)
    os.umask(umask)
    request = {
        "argv": argv,
        "cwd": os.getcwd(),
        "umask": umask,
        "env": dict(os.environ),
        "digest": code_digest(),
    }
    try:
        _send(conn, request, fds=[0, 1, 2])
        reply = _receive(conn)
    except (OSError, ValueError):
        conn.close()
        return None
    if reply is None or "pid" not in reply:
        conn.close()
        return None
    return _follow(conn)


def _follow(conn: socket.socket) -> int:
    """Forward signals to the run's process until it reports its exit code."""

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(struct.pack("!I", signum))

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        while True:
            try:
                reply = _receive(conn)
            except InterruptedError:
                continue
            except (OSError, ValueError):
                reply = None
            if reply is None:
                print(
                    "evalfleet: the command's process in the stack's launcher ended without an "
                    "exit code (killed?)",
                    file=sys.stderr,
                )
                return 1
            if "exit" in reply:
                return int(reply["exit"])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        conn.close()


def _send(conn: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    body = json.dumps(message).encode()
    header = MAGIC + struct.pack("!I", len(body))
    if fds:
        socket.send_fds(conn, [header], fds)
    else:
        conn.sendall(header)
    conn.sendall(body)


def _receive(conn: socket.socket, fds: int = 0) -> dict | tuple[dict, list[int]] | None:
    """One message (None at the end of the stream); with `fds`, also the descriptors sent."""
    if fds:
        header, received, _flags, _addr = socket.recv_fds(conn, 8, fds)
    else:
        header, received = _exactly(conn, 8), []
    if len(header) < 8:
        if header:
            header += _exactly(conn, 8 - len(header))
        else:
            return None
    if header[:4] != MAGIC:
        raise ValueError("not a launcher message")
    (length,) = struct.unpack("!I", header[4:])
    message = json.loads(_exactly(conn, length))
    return (message, received) if fds else message


def _exactly(conn: socket.socket, count: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < count:
        chunk = conn.recv(count - len(chunks))
        if not chunk:
            break
        chunks += chunk
    return bytes(chunks)


# --- the launcher's side -----------------------------------------------------------------------

PRELOADED = (
    "cli.main",
    "cli.launch",
    "cli.run",
    "cli.results",
    "flows.in_process",
    "flows.evaluate",
    "flows.aggregate",
    "flows.leaderboard",
    "engine.generation",
    "engine.aggregate",
    "engine.plan",
    "engine.resolve",
    "engine.scoring",
    "reports.report",
    "reports.leaderboard",
    "reports.tables",
    "reports.compare",
    "tasks.pool",
    "tasks.dispatch",
    "pyarrow.parquet",
    "matplotlib.pyplot",
)


def preload() -> None:
    """Import what the delegated commands use, and warm what they build first."""
    import importlib

    os.environ.setdefault("MPLBACKEND", "Agg")
    for name in PRELOADED:
        importlib.import_module(name)
    from cli.main import build_parser
    from providers.registry import load_registry

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
    received = _receive(conn, fds=3)
    if received is None:
        return
    request, fds = received
    if request.get("digest") != digest or len(fds) != 3:
        _send(conn, {"refused": "the launcher runs other code"})
        return
    _send(conn, {"pid": os.getpid()})
    command = next((a for a in request["argv"] if not a.startswith("-")), "?")
    print(f"pid {os.getpid()}: `evalfleet {command}` for pid {_peer_pid(conn)}", flush=True)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.stdout.reconfigure(line_buffering=sys.stdout.isatty())
    sys.argv = ["evalfleet", *request["argv"]]
    _refresh_settings()
    _watch_caller(conn)
    from cli.main import finish, main

    code = main(request["argv"])
    finish()
    with contextlib.suppress(OSError):
        _send(conn, {"exit": code})
    os._exit(code)


def _refresh_settings() -> None:
    """Prefect and Ray read some settings when imported: read them again from the caller's
    environment."""
    from ray._raylet import Config

    from flows.settings import refresh_prefect_settings

    refresh_prefect_settings()
    Config.initialize("")


def _watch_caller(conn: socket.socket) -> None:
    """A thread that delivers the signals the caller forwards, and kills this process if
    the caller goes away (its connection closes)."""
    import threading

    def watch() -> None:
        while True:
            data = _exactly(conn, 4)
            if len(data) < 4:
                os.kill(os.getpid(), signal.SIGKILL)
                return
            (signum,) = struct.unpack("!I", data)
            if signum in {int(s) for s in FORWARDED}:
                os.kill(os.getpid(), signum)

    threading.Thread(target=watch, name="launcher-caller", daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m cli.warm SOCKET_PATH", file=sys.stderr)
        return 2
    serve(Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
