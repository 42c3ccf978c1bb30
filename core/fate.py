"""Run a command that dies with its parent: `python -m core.fate PARENT_PID -- CMD ARGS...`.

Linux delivers SIGTERM to the command when the process that started it ends, however it
ends (SIGKILL included), so a server or cluster head started for one run never outlives it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m core.fate PARENT_PID -- CMD [ARGS...]", file=sys.stderr)
        return 2
    parent = int(argv[0])
    command = argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
        print(f"fate: prctl failed (errno {ctypes.get_errno()})", file=sys.stderr)
    if os.getppid() != parent:  # the parent ended before the death signal was armed
        return 0
    os.execvp(command[0], command)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
