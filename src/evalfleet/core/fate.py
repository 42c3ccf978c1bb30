"""Run a command that dies with its parent: `python -m core.fate PARENT_PID -- CMD ARGS...`
(or, in a forked child, `die_with(parent)`).

Linux delivers SIGTERM to the command when the process that started it ends, however it
ends (SIGKILL included), so a server or cluster head started for one run never outlives it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with(parent: int) -> bool:
    """Have the kernel send this process SIGTERM when `parent` ends; False if it already has
    (then there is nothing to run for)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
        print(f"fate: prctl failed (errno {ctypes.get_errno()})", file=sys.stderr)
    return os.getppid() == parent  # else the parent ended before the death signal was armed


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m evalfleet.core.fate PARENT_PID -- CMD [ARGS...]", file=sys.stderr)
        return 2
    if not die_with(int(argv[0])):
        return 0
    command = argv[2:]
    os.execvp(command[0], command)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
