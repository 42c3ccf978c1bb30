"""What a store holds: `evalfleet runs`, `status`, `aggregate` and `leaderboard`."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from pathlib import Path

from evalfleet.cli.options import add_store_options, store_from
from evalfleet.reports import MEDIA_BUDGET_MB
from evalfleet.reports.not_installed import check_installed
from evalfleet.storage import Store


def add_commands(sub: argparse._SubParsersAction) -> None:
    agg = sub.add_parser(
        "aggregate", help="score a run, write its result tables and rebuild the leaderboard"
    )
    agg.add_argument("run_id")
    add_store_options(agg)
    agg.set_defaults(func=cmd_aggregate)

    runs = sub.add_parser(
        "runs",
        help="list the runs in a store with their progress (an ended run's as its last "
        "aggregation counted it; `status RUN` reads every record)",
    )
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

    report = sub.add_parser(
        "report",
        help="the run report: every answer with its prompt, verdicts and costs, in one page",
        description="Write {run}/results/{version}/report.html: the run's identity, coverage "
        "and headline, then every answered item, filterable by model, benchmark, scoring "
        "mode, epoch, verdict, disagreement and text, sortable, and each sample across "
        "models. One self-contained file up to 20,000 items; above, the page reads its "
        "items from the folder report_items/ beside it.",
    )
    report.add_argument("run_id")
    report.add_argument(
        "--version", type=results_version, help="a results version (default: the latest)"
    )
    report.add_argument(
        "--media-mb",
        type=megabytes,
        default=MEDIA_BUDGET_MB,
        help="images and audio embedded, in MB: every image as a tile, then full size while "
        f"they fit (default: {MEDIA_BUDGET_MB:g})",
    )
    report.add_argument("--open", action="store_true", help="open the page in a browser")
    report.add_argument(
        "--watch",
        nargs="?",
        const=10.0,
        type=watch_seconds,
        metavar="SECONDS",
        help="follow a run while it runs: every SECONDS (default 10) that it stored answers, "
        "aggregate what is stored and rewrite the report, at one address "
        "({run}/results/live.html) that follows it; ends when the run ends",
    )
    add_store_options(report)
    report.set_defaults(func=cmd_report)

    compare = sub.add_parser(
        "compare",
        help="what differs between two runs (or two models, or two results versions) and "
        "whether the score moved: paired bootstrap interval, exact McNemar test, flips",
        description="A and B are RUN_ID, RUN_ID:MODEL or RUN_ID@VERSION[:MODEL]. Prints what "
        "differs between the two identities, then per benchmark and scoring mode the "
        "accuracies on the items both hold, the difference with a paired bootstrap 95% "
        "interval, McNemar's exact p and the samples that flipped. Kept beside A's results "
        "(compare/) and shown in A's report.",
    )
    compare.add_argument("a")
    compare.add_argument("b")
    compare.add_argument("--markdown", metavar="FILE", help="also write the Markdown here")
    compare.add_argument("--json", metavar="FILE", help="also write the JSON here")
    add_store_options(compare)
    compare.set_defaults(func=cmd_compare)

    board = sub.add_parser(
        "leaderboard",
        help="every run of a store side by side: tables and plots under leaderboard/",
        description="Keep the latest complete result per (model, benchmark, scoring) of every "
        "run in the store, rank them, and write Parquet, CSV, Markdown, PNG plots and an HTML "
        "page under {store}/leaderboard/.",
    )
    add_store_options(board)
    board.add_argument("--open", action="store_true", help="open the HTML page (print its path)")
    board.add_argument(
        "--unadjusted",
        action="store_true",
        help="print ranks without Holm's adjustment across each table's pairs (the stored "
        "pages keep the adjusted ranks; the CSV has both)",
    )
    # How the stack's launcher rebuilds it after a run: a flow run (its tables as artifacts),
    # one at a time.
    board.add_argument("--flow-run", action="store_true", help=argparse.SUPPRESS)
    board.set_defaults(func=cmd_leaderboard)


def megabytes(text: str) -> float:
    """A size in MB: a finite number, 0 or more (`nan`, `inf` and negatives refused)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"takes a size in MB, 0 or more, not {text!r}")
    return value


def cmd_aggregate(args: argparse.Namespace) -> int:
    from evalfleet.engine.scoring.aggregate import aggregate_run
    from evalfleet.reports.report import write_report_or_warn
    from evalfleet.reports.tables import print_result

    store = store_from(args)
    check_installed(store, args.run_id)  # a benchmark not installed: one line, exit 2
    started = time.monotonic()
    result = aggregate_run(store, args.run_id)
    tables_s = time.monotonic() - started
    result["report"] = write_report_or_warn(store, args.run_id, result["version"])
    report_s = time.monotonic() - started - tables_s
    print_result(result)
    rebuild_leaderboard(store)
    # on stderr, with the leaderboard's line: how long a user waits for what
    print(f"tables in {tables_s:.1f} s, report in {report_s:.1f} s", file=sys.stderr)
    return 0


def rebuild_leaderboard(store: Store) -> None:
    """As the aggregate flow does: the store's leaderboard with the new results in it; a
    leaderboard that cannot be rebuilt leaves the tables written (one line says why)."""
    from evalfleet.reports.leaderboard import update

    try:
        _, where = update(store)
    except Exception as exc:
        print(f"the leaderboard was not updated: {' '.join(str(exc).split())}", file=sys.stderr)
        return
    print(f"leaderboard: {where}")


def results_version(text: str) -> str:
    """A results version's name (`v-` and 12 hex digits; `evalfleet status RUN` and the run's
    results folder list them): one name, never a path."""
    if text in ("", ".", "..") or "/" in text or "\\" in text or text != text.strip():
        raise argparse.ArgumentTypeError(
            f"takes a results version's name, such as v-0123456789ab (`evalfleet status RUN` "
            f"names the run's latest), not {text!r}"
        )
    return text


def watch_seconds(text: str) -> float:
    """Seconds between two looks of `report --watch`: a number from 2 to 3600."""
    from evalfleet.reports.live import LONGEST_S, SHORTEST_S

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not SHORTEST_S <= value <= LONGEST_S:  # nan fails both
        raise argparse.ArgumentTypeError(
            f"takes seconds from {SHORTEST_S:g} to {LONGEST_S:g}, not {text!r}"
        )
    return value


def cmd_report(args: argparse.Namespace) -> int:
    from evalfleet.reports.report import write_report

    store = store_from(args)
    check_installed(store, args.run_id)
    if args.watch is not None:
        return _watch(store, args)
    where = write_report(store, args.run_id, args.version, media_mb=args.media_mb)
    print(f"report: {where}")
    if args.open:
        open_page(where, store)
    return 0


def _watch(store: Store, args: argparse.Namespace) -> int:
    from evalfleet.core.types import ConfigError
    from evalfleet.reports.live import watch

    if args.version:
        raise ConfigError(
            "--watch follows the run's newest look and --version names one: drop one of them"
        )
    where = watch(store, args.run_id, args.watch, media_mb=args.media_mb)
    if args.open:
        open_page(where, store)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    import json

    from evalfleet.engine.run.request import check_run_id
    from evalfleet.reports.compare import compare, save, to_markdown
    from evalfleet.reports.report import write_report

    for side in (args.a, args.b):  # RUN_ID[@VERSION][:MODEL]
        check_run_id(side.partition(":")[0].partition("@")[0])
    store = store_from(args)
    result = compare(store, args.a, args.b)
    text = to_markdown(result)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    save(store, result)
    where = write_report(store, result["a"]["run_id"], result["a"]["version"])
    print(f"kept with the results of {result['a']['label']}")
    print(f"its report: {where}")
    return 0


def open_page(where: str, store) -> None:
    """Open a page of the store in a browser: a local file as it is, an S3 object through a
    copy in the current directory (with the folder a paged report reads its items from)."""
    import webbrowser

    from evalfleet.reports.report_paged import FOLDER

    page = Path(where)
    if "://" in where:
        key = where[len(store.url.rstrip("/")) + 1 :]
        page = Path(Path(key).name).resolve()
        page.write_bytes(store.get(key) or b"")
        folder = f"{key.rsplit('/', 1)[0]}/{FOLDER}/"
        for name in store.list(folder):
            copy = page.parent / FOLDER / name[len(folder) :]
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(store.get(name) or b"")
        print(f"copied to {page}")
    with contextlib.suppress(Exception):
        webbrowser.open(page.as_uri())


def cmd_runs(args: argparse.Namespace) -> int:
    from evalfleet.reports.status import list_runs

    print(list_runs(store_from(args)))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from evalfleet.reports.status import batch_status, run_status

    store = store_from(args)
    check_installed(store, args.run_id)
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
    from evalfleet.engine.store.results import check_results

    about = check_results(store, args.run_id)  # a damaged results file: one line, exit 2
    if about is None:
        print(f"results: none yet (`evalfleet aggregate {args.run_id}`)")
    else:
        print(f"results: {about.version}")
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from evalfleet.reports.board_page import markdown_page
    from evalfleet.reports.leaderboard import update

    if args.flow_run:
        return rebuild_as_flow_run(args)
    board, where = update(store_from(args))
    print(markdown_page(board, unadjusted=args.unadjusted))
    print(f"{board.runs} runs; tables and plots in {where}")
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


def rebuild_as_flow_run(args: argparse.Namespace) -> int:
    """The `leaderboard` flow, as the served deployment runs it; one rebuild at a time (each
    reads the store when it starts, so the last one started holds every run)."""
    import fcntl

    from evalfleet.core.places import stack_folder
    from evalfleet.flows.leaderboard import leaderboard

    folder = stack_folder()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "leaderboard.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        leaderboard(store=args.store, s3_endpoint_url=args.s3_endpoint_url)
    return 0
