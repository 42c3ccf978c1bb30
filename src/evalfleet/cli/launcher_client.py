"""The caller's side of the stack's warm launcher (`cli.launcher`): while `evalfleet up` runs, a
command runs in a process forked from one that has already imported Prefect, Ray, pandas and
evalfleet, instead of spending some three seconds of CPU importing them again.

The `evalfleet` executable first calls `delegate`, which imports only the standard library. For
the commands in `DELEGATED`, when the stack's launcher answers and runs the same code, it sends
its arguments, working directory, umask, environment and its standard input, output and error
(the descriptors themselves) over a Unix socket only this user can open. The launcher forks; the
child takes all of these as its own and runs `cli.main.main` exactly as the executable would,
writing to the caller's terminal. The caller waits for the exit code and forwards the signals it
gets (Ctrl-C, SIGTERM, SIGHUP) to the child; if the caller dies (SIGKILL), the child is killed
at once, as the command's own process would have been.

Not delegated, and run in the calling process as before: any other command, a caller whose
environment names another Prefect server or Ray cluster (PREFECT_API_URL, RAY_ADDRESS), a
launcher that runs other code than the caller's (the files changed since `up`, or packages
installed or removed, or another $PYTHONPATH), or EVALFLEET_NO_LAUNCHER=1."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys
from pathlib import Path
from typing import Any

from evalfleet.core.checkout import environment_digest
from evalfleet.core.places import process_start_ticks, stack_folder
from evalfleet.core.settings import NO_LAUNCHER

DELEGATED = {"run", "judge", "aggregate", "report", "compare", "leaderboard", "status", "runs"}
MAGIC = b"EVF1"
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def code_digest() -> str:
    """Which code this checkout holds and which packages are installed beside it
    (`evalfleet.core.checkout`): the launcher compares it with its own."""
    return environment_digest()


def launcher_socket() -> Path | None:
    """The running stack's launcher socket, if `up` recorded one whose process is alive."""
    try:
        recorded = json.loads((stack_folder() / "stack.json").read_text()).get("launcher") or {}
        alive = process_start_ticks(int(recorded["pid"])) == recorded.get("started")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return Path(recorded["address"]) if alive else None


def delegate(argv: list[str]) -> int | None:
    """Run `evalfleet ARGV` in the stack's launcher; its exit code, or None when it is not
    delegated (the caller runs it itself)."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in DELEGATED or NO_LAUNCHER.get():
        return None
    if os.environ.get("PREFECT_API_URL") or os.environ.get("RAY_ADDRESS"):
        return None
    sent = _request(argv, fds=[0, 1, 2])
    return None if sent is None else _follow(sent[0])


def start_detached(argv: list[str]) -> int | None:
    """Have the stack's launcher run `evalfleet ARGV` on its own, writing to the launcher's
    log: not waited for and not ended with this process. Its pid, or None where no launcher of
    this code answers."""
    with open(os.devnull, "rb") as devnull:
        sent = _request(argv, fds=[devnull.fileno()], detach=True)
    if sent is None:
        return None
    conn, pid = sent
    conn.close()
    return pid


def _request(
    argv: list[str], fds: list[int], detach: bool = False
) -> tuple[socket.socket, int] | None:
    """Send a command to the launcher: the connection and the pid of the command's process
    once it has forked it, or None where no launcher of this code answers."""
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
        "detach": detach,
    }
    try:
        send_message(conn, request, fds=fds)
        reply = receive_message(conn)
    except (OSError, ValueError):
        conn.close()
        return None
    if reply is None or "pid" not in reply:
        conn.close()
        return None
    return conn, int(reply["pid"])


def _follow(conn: socket.socket) -> int:
    """Forward signals to the run's process until it reports its exit code."""

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(struct.pack("!I", signum))

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        while True:
            try:
                reply = receive_message(conn)
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


def send_message(conn: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    body = json.dumps(message).encode()
    header = MAGIC + struct.pack("!I", len(body))
    if fds:
        socket.send_fds(conn, [header], fds)
    else:
        conn.sendall(header)
    conn.sendall(body)


def receive_message(conn: socket.socket) -> dict[str, Any] | None:
    """One message (None at the end of the stream)."""
    received = receive_message_and_fds(conn, 0)
    return None if received is None else received[0]


def receive_message_and_fds(
    conn: socket.socket, fds: int
) -> tuple[dict[str, Any], list[int]] | None:
    """One message and up to `fds` descriptors sent with it (None at the end of the stream)."""
    if fds:
        header, received, _flags, _addr = socket.recv_fds(conn, 8, fds)
    else:
        header, received = read_exactly(conn, 8), []
    if len(header) < 8:
        if header:
            header += read_exactly(conn, 8 - len(header))
        else:
            return None
    if header[:4] != MAGIC:
        raise ValueError("not a launcher message")
    (length,) = struct.unpack("!I", header[4:])
    message: dict[str, Any] = json.loads(read_exactly(conn, length))
    return message, received


def read_exactly(conn: socket.socket, count: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < count:
        chunk = conn.recv(count - len(chunks))
        if not chunk:
            break
        chunks += chunk
    return bytes(chunks)
