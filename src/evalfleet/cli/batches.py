"""`evalfleet batches poll`: one batch round for every run of a store with jobs open."""

from __future__ import annotations

import argparse

from evalfleet.cli.options import add_store_options, store_from


def add_commands(sub: argparse._SubParsersAction) -> None:
    batches = sub.add_parser("batches", help="batch jobs (--batch runs)")
    batches_sub = batches.add_subparsers(dest="action", required=True)
    poll = batches_sub.add_parser(
        "poll",
        help="one round for every run of a store with open jobs: collect the jobs that "
        "ended, send what follows, aggregate the runs completed",
    )
    add_store_options(poll)
    poll.set_defaults(func=cmd_batches_poll)


def cmd_batches_poll(args: argparse.Namespace) -> int:
    from evalfleet.engine.generation.batches import poll_store
    from evalfleet.reports.leaderboard import update
    from evalfleet.reports.report import write_report_or_warn

    store = store_from(args)
    report = poll_store(store)
    if not report:
        print(f"no batch jobs open in {store.url}")
    for run_id, outcome in report.items():
        left = outcome.batch_jobs_open
        state = f"{left} jobs open" if left else "aggregated"
        print(f"run {run_id}: {dict(outcome.batch)} — {state}")
        if not left:
            where = write_report_or_warn(store, run_id)
            print(f"  report: {where}" if where else "  the report was not written (see above)")
    if any(not outcome.batch_jobs_open for outcome in report.values()):
        try:
            update(store)
        except Exception as exc:  # the tables are written; the leaderboard can wait
            print(f"the leaderboard was not updated: {exc}")
    return 0
