"""What a store holds: `evalfleet runs`, `status`, `aggregate` and `leaderboard`."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from cli.options import add_store_options, store_from


def add_commands(sub: argparse._SubParsersAction) -> None:
    agg = sub.add_parser("aggregate", help="score a run and write its result tables")
    agg.add_argument("run_id")
    add_store_options(agg)
    agg.set_defaults(func=cmd_aggregate)

    runs = sub.add_parser("runs", help="list the runs in a store with their progress")
    add_store_options(runs)
    runs.set_defaults(func=cmd_runs)

    status = sub.add_parser("status", help="done / failed / stale / missing per model, benchmark")
    status.add_argument("run_id")
    add_store_options(status)
    status.add_argument(
        "--quarantine",
        action="store_true",
        help="move undecodable records aside now (a resume also does it)",
    )
    status.set_defaults(func=cmd_status)

    board = sub.add_parser(
        "leaderboard",
        help="every run of a store side by side: tables and plots under leaderboard/",
        description="Keep the latest complete result per (model, benchmark, scoring) of every "
        "run in the store, rank them, and write Parquet, CSV, Markdown, PNG plots and an HTML "
        "page under {store}/leaderboard/.",
    )
    add_store_options(board)
    board.add_argument("--open", action="store_true", help="open the HTML page (print its path)")
    board.set_defaults(func=cmd_leaderboard)


def cmd_aggregate(args: argparse.Namespace) -> int:
    from engine.aggregate import aggregate_run
    from reports.tables import print_result

    print_result(aggregate_run(store_from(args), args.run_id))
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from reports.status import list_runs

    print(list_runs(store_from(args)))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from reports.status import batch_status, run_status

    store = store_from(args)
    table, bad = run_status(store, args.run_id, move_aside=args.quarantine)
    print(table.to_markdown(index=False))
    jobs = batch_status(store, args.run_id)
    if not jobs.empty:
        print("\nbatch jobs")
        print(jobs.to_markdown(index=False))
    if bad:
        action = "moved to quarantine/" if args.quarantine else "the next run moves them aside"
        print(f"{len(bad)} undecodable records count as missing ({action}):")
        for key in bad[:20]:
            print(f"  {key}")
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from engine.results import markdown
    from reports.leaderboard import shown_columns, update

    board, where = update(store_from(args))
    shown = shown_columns(board.table)
    if not board.new:
        shown = shown.drop(columns=["new"])
    for (benchmark, scoring), part in shown.groupby(["benchmark", "scoring"], sort=False):
        print(f"\n{benchmark} ({scoring})")
        print(markdown(part.drop(columns=["benchmark", "scoring"])))
    for line in board.new:
        print(line)
    print(f"\n{board.runs} runs; tables and plots in {where}")
    if args.open:
        page = Path(where[len("file://") :] if where.startswith("file://") else where)
        if where.startswith("s3://") or not page.exists():
            page = Path("leaderboard.html").resolve()
            page.write_bytes(board.files["index.html"])
        else:
            page = page / "index.html"
        print(f"page: {page}")
        import webbrowser

        with contextlib.suppress(Exception):
            webbrowser.open(page.as_uri())
    return 0
