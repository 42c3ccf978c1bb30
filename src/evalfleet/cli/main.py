"""`evalfleet`: the parser of every command group, and how a command ends (exit 0; 2 for bad
input, in one line; 3 when a run reached its cost cap; 4 when a run did not do its job (a
record it could not store, a model every call to which failed); 5 when items of a run ended in
errors (its last line counts them; `--allow-errors` makes it 0); 130 / 143 when interrupted;
1 for a bug)."""

from __future__ import annotations

import argparse
import atexit
import logging
import os
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    from evalfleet.cli import (
        batches,
        export,
        extensions,
        limits,
        new,
        over_time,
        results,
        run,
        tag,
        up,
        view,
    )
    from evalfleet.cli.errors import OneLineParser

    parser = OneLineParser(
        prog="evalfleet",
        description="Evaluate models on hard multimodal benchmarks (Prefect + Ray).",
    )
    parser.add_argument(
        "--version",
        action=VersionAction,
        help="print the package version and the code version (the commit) and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (run, results, over_time, batches, limits, up, extensions, export, new, tag, view):
        group.add_commands(sub)
    return parser


class VersionAction(argparse.Action):
    """`--version`: asks git for the commit only when the flag is given, not on every start."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_line())
        parser.exit(0)


def version_line() -> str:
    """The package version and the commit it runs: `evalfleet 0.1.0 (code abc123def456)`."""
    import evalfleet
    from evalfleet.engine.store.manifest import code_version

    return f"evalfleet {evalfleet.__version__} (code {code_version()})"


def quiet_defaults() -> None:
    """No phoning home: the machines this runs on may have no internet at all."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def settings_refused() -> bool:
    """Every EVALFLEET_* setting checked before anything else reads one (the parser's defaults
    do): a bad one is told in one line (True)."""
    from evalfleet.core.settings import SettingError, check_all

    try:
        check_all()
    except SettingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return True
    return False


def main(argv: Sequence[str] | None = None) -> int:
    from evalfleet.api.errors import user_errors
    from evalfleet.cli.errors import one_line

    quiet_defaults()
    if settings_refused():
        return 2
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a malformed flag (2)
        return int(exc.code or 0)
    from evalfleet.engine.run.outcome import Interrupted, RunFailed

    try:
        check_run_ids(args)
        return args.func(args)
    except user_errors() as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except RunFailed as exc:  # the run did not do its job (exit 0: there was nothing to do)
        from evalfleet.cli.hints import resume_hint

        print(f"{'error: ' if exc.exit_code else ''}{one_line(exc)}", file=sys.stderr)
        if exc.exit_code and getattr(args, "run_id", None):
            print(f"resume with: {resume_hint(args.run_id)}", file=sys.stderr)
        return exc.exit_code
    except Interrupted as exc:
        from evalfleet.cli.hints import resume_hint
        from evalfleet.engine.run.interrupts import STOP

        print(f"{exc}", file=sys.stderr)
        run_id = getattr(args, "run_id", None)
        if run_id:
            print(f"resume with: {resume_hint(run_id)}", file=sys.stderr)
        return STOP.exit_code
    except KeyboardInterrupt:
        print("interrupted: everything stored so far is kept", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `evalfleet runs | head`: the reader has what it wanted
        return reader_gone()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
        if exc.filename is None:
            raise
        print(f"error: {path_problem(exc)}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        from evalfleet.stack.services import ServiceError

        if not isinstance(exc, ServiceError):
            raise
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 1


def reader_gone() -> int:
    """The pipe's reader ended: nothing more can be printed, and the interpreter's flush at exit
    must not fail again. 141, as a shell reports a command a closed pipe stopped."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141


def path_problem(exc: OSError) -> str:
    """A file or folder the user named that cannot be used, in one line with what to do."""
    what = {
        FileNotFoundError: "no such file or folder: check the path (a file is written only "
        "into a folder that exists)",
        IsADirectoryError: "it is a folder: give a file's path",
        NotADirectoryError: "a part of the path is a file, not a folder: choose another path",
        PermissionError: "permission denied: choose a path you may write, or change its rights",
    }
    fix = next((text for kind, text in what.items() if isinstance(exc, kind)), exc.strerror)
    return f"{exc.filename}: {fix}"


def check_run_ids(args: argparse.Namespace) -> None:
    """Every run id a command was given (`RUN_ID`, `--run-id`, `BLIND_RUN_ID`, ...), checked
    before the command makes a store key of it: one line in the user's words, not the
    store's."""
    given = [
        value
        for name, value in vars(args).items()
        if (name == "run_id" or name.endswith("_run_id")) and isinstance(value, str)
    ]
    if given:
        from evalfleet.engine.run.request import check_run_id

        for run_id in given:
            check_run_id(run_id)


def entry() -> None:
    """The `evalfleet` executable: in the stack's warm launcher when one runs (`cli.launcher`),
    else `main` here; then a prompt exit. Everything a command does is finished (stored,
    flushed, its services stopped) when `main` returns; the interpreter's teardown (joining
    Prefect's and tqdm's idle threads, freeing every object) would add half a second to each
    command for nothing. Exit handlers still run."""
    from evalfleet.core import collector

    collector.while_importing()  # `evalfleet run` sets it back once its modules are loaded
    from evalfleet.cli.launcher_client import delegate

    code = 2 if settings_refused() else delegate(sys.argv[1:])
    if code is None:
        code = main()
        finish()
    os._exit(code)


def finish() -> None:
    """What a command's process does before it exits without the interpreter's teardown."""
    atexit._run_exitfuncs()  # what asked to run at exit still does (a server Prefect started)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()


if __name__ == "__main__":
    entry()
