"""A child process that answers on a pipe of its own: `python -m MODULE FD`, in a session of
its own (a terminal's Ctrl-C reaches only the command, which decides), dying with the command
however it ends (`evalfleet.core.fate`), run from the checkout (relative paths mean the same).
`start_answering` starts one, `end_answering` ends it."""

from __future__ import annotations

import contextlib
import os
import subprocess
from typing import BinaryIO

from evalfleet.core.checkout import ROOT
from evalfleet.core.interpreter import module_command


def start_answering(
    module: str, *, quiet: bool = False
) -> tuple[subprocess.Popen[bytes], BinaryIO]:
    """The child running `module` with the write end of a pipe as its argument, its stdin a
    pipe; and the pipe's read end, for its answer. `quiet`: its output goes nowhere."""
    answer_read, answer_write = os.pipe()
    command = module_command("evalfleet.core.fate", str(os.getpid()), "--")
    command += module_command(module, str(answer_write))
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    silent = subprocess.DEVNULL if quiet else None
    try:
        child = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=silent,
            stderr=silent,
            pass_fds=(answer_write,),
            start_new_session=True,
            env={**os.environ, "PYTHONPATH": path},
        )
    except BaseException:
        os.close(answer_read)
        raise
    finally:
        os.close(answer_write)
    return child, os.fdopen(answer_read, "rb")


def end_answering(child: subprocess.Popen[bytes], answer: BinaryIO, wait_s: float = 0.0) -> None:
    """Close the answer's pipe and end the child: given `wait_s` to exit on its own (it has
    answered), else killed (its answer is not wanted)."""
    with contextlib.suppress(OSError):
        answer.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=wait_s)
    if child.poll() is None:
        child.kill()
    child.wait()
