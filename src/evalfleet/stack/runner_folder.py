"""A folder of its own, in the stack's state folder, for each process that runs flow runs (the
serve process, each pool worker), which `evalfleet down` removes with the processes.

Prefect's runner keeps its storage in `<temporary directory>/runner_storage/<uuid>` and removes
it only when it is stopped from Python: stopped by a signal, as `down` stops it, it leaves the
folder behind, one per `up`. A worker also makes each flow run's workspace there. So these
processes get their folder as their temporary directory: in that process only
(`tempfile.tempdir`), not in the flow runs they start, whose Ray sockets need the short system
one.

    python -m evalfleet.stack.runner_folder FOLDER SCRIPT [ARGS...]
    python -m evalfleet.stack.runner_folder FOLDER -m MODULE [ARGS...]

runs the Python SCRIPT (or MODULE) as `python SCRIPT ARGS` would, with FOLDER emptied first (what
an earlier process there left)."""

from __future__ import annotations

import runpy
import shutil
import sys
import tempfile
from pathlib import Path

from evalfleet.core.interpreter import module_command

PARENT = "runners"  # in the state folder


def folder_of(state: Path, name: str) -> Path:
    """The folder of the runner `name` (serve, worker-1, ...)."""
    return state / PARENT / name


def command(state: Path, name: str, program: list[str]) -> list[str]:
    """`program` (a script and its arguments, or ["-m", module, ...]) run in its folder."""
    return [*module_command("evalfleet.stack.runner_folder", str(folder_of(state, name))), *program]


def remove_all(state: Path) -> None:
    """Every runner's folder (`down`, once the processes are stopped)."""
    shutil.rmtree(state / PARENT, ignore_errors=True)


def main(argv: list[str]) -> None:
    folder, *program = argv
    shutil.rmtree(folder, ignore_errors=True)
    Path(folder).mkdir(parents=True)
    tempfile.tempdir = folder
    if program[0] == "-m":
        sys.argv = [program[1], *program[2:]]
        runpy.run_module(program[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = program
        runpy.run_path(program[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
