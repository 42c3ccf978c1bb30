"""`evalfleet ARGS` run in the test's own process, answered as `subprocess.run` answers.

For tests that check what a command prints and its exit code, with no signal, process group
or fresh interpreter at stake: a subprocess costs some 2 s of imports, and a run in it starts
new Ray workers, where this process (joined to the session's Ray and Prefect server by
`session_services`) keeps its own."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.hostile import call_in_process


def evalfleet_here(*args: str) -> subprocess.CompletedProcess:
    """The command's exit code, output and error output; a traceback fails the test.
    `sys.argv` is the command's meanwhile, as in the stack's launcher (`cli.launcher`): the
    hints a command prints repeat it."""
    argv = [str(a) for a in args]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", ["evalfleet", *argv])
        code, out, err, crashed = call_in_process(argv)
    assert not crashed, err[-3000:]
    return subprocess.CompletedProcess(["evalfleet", *args], code, out, err)
