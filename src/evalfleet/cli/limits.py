"""`evalfleet limits RUN`: retune a live run's rate limits and concurrency.

`engine.retune` does the work (the Prefect UI's `limits` deployment calls it too): the
run's control file, which every worker of the run reads about once a second, and an event of
the run's history, `retuned #N: rpm …, tpm …, max in flight …`.
"""

from __future__ import annotations

import argparse


def add_commands(sub: argparse._SubParsersAction) -> None:
    from evalfleet.cli.options import add_store_options

    limits = sub.add_parser(
        "limits",
        help="retune a live run's rate limits and concurrency (within seconds)",
        description="Retune a running run: its requests and tokens per minute, per model or "
        "for every model, and how many calls it keeps in flight. Every worker of the run "
        "applies them within a few seconds; the run's control file keeps each retune.",
    )
    limits.add_argument("run_id", metavar="RUN")
    limits.add_argument(
        "--rpm",
        action="append",
        default=[],
        metavar="[MODEL=]N",
        help="requests per minute: N for every model of the run, MODEL=N for one (repeatable)",
    )
    limits.add_argument(
        "--tpm",
        action="append",
        default=[],
        metavar="[MODEL=]N",
        help="tokens per minute: N for every model of the run, MODEL=N for one (repeatable)",
    )
    limits.add_argument(
        "--max-in-flight", metavar="N", help="calls in flight at most, for the whole run"
    )
    add_store_options(limits)
    limits.set_defaults(func=cmd_limits)


def cmd_limits(args: argparse.Namespace) -> int:
    from evalfleet.cli.options import store_from
    from evalfleet.engine.retune import retune

    print(retune(store_from(args), args.run_id, args.rpm, args.tpm, args.max_in_flight))
    return 0
