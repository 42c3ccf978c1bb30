"""`evalfleet history MODEL` and `evalfleet drift [--notify URL]`: a store's runs over time
(`reports.history`, `reports.drift`)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalfleet.core.types import ConfigError
    from evalfleet.storage.base import Store


def add_commands(sub: argparse._SubParsersAction) -> None:
    from evalfleet.cli.options import add_store_options

    history = sub.add_parser(
        "history",
        help="every run of a model in time order: headline, interval, reported versions",
        description="Per benchmark, item set and scoring mode, every run of MODEL in time "
        "order: date, run id, headline with its 95 % interval, the model versions the provider "
        "reported, the judge and its versions.",
    )
    history.add_argument("model", metavar="MODEL", help="the model id, as the run named it")
    add_store_options(history)
    history.set_defaults(func=cmd_history)

    drift = sub.add_parser(
        "drift",
        help="each model's latest run against its previous one: what changed",
        description="Pairs each model's latest run with its previous run on the same "
        "benchmark and scoring mode and writes leaderboard/drift.csv: the paired difference "
        "and its 95 % interval, and whether the reported model version or the judge changed.",
    )
    add_store_options(drift)
    drift.add_argument(
        "--notify",
        metavar="URL",
        help="POST one JSON document listing the flagged rows to this URL (a webhook) when "
        "at least one row is flagged; nothing is sent when none is",
    )
    drift.set_defaults(func=cmd_drift)


def cmd_history(args: argparse.Namespace) -> int:
    from evalfleet.cli.options import store_from
    from evalfleet.core.types import ConfigError
    from evalfleet.reports.board_rows import read_runs
    from evalfleet.reports.history import history_text, points

    store = store_from(args)
    stored = read_runs(store)
    found = points(store, [args.model], stored)
    if not found:  # a typo or another store: say which models it has
        models = sorted({p.model for p in points(store, found=stored, versions=False)})
        if not models:
            raise no_results_yet(store)
        more = f" (and {len(models) - 8} more)" if len(models) > 8 else ""
        raise ConfigError(
            f"no results of {args.model} in {store.describe()}: give one of its models, "
            f"{', '.join(models[:8])}{more}"
        )
    print(history_text(args.model, found))
    left_out(stored.damaged)
    return 0


def no_results_yet(store: Store) -> ConfigError:
    """A store with no run's results (another folder, or a typo), said in one line."""
    from evalfleet.core.types import ConfigError

    return ConfigError(
        f"no run in {store.describe()} has results yet: run `evalfleet run` first, or give "
        "the store that holds them (--store)"
    )


def left_out(damaged: list[str]) -> None:
    """The runs that could not be read, on stderr: a history or a drift pair without a word
    of them would read as if they had never been made."""
    for line in damaged:
        print(f"left out: {line}", file=sys.stderr)


def cmd_drift(args: argparse.Namespace) -> int:
    from evalfleet.cli.options import store_from
    from evalfleet.core.settings import check_http_url
    from evalfleet.core.types import ConfigError
    from evalfleet.reports import drift
    from evalfleet.reports.board_rows import read_runs

    if args.notify:
        try:
            check_http_url(args.notify)
        except ValueError:
            raise ConfigError(
                f"--notify {args.notify!r} is not an http:// or https:// URL with a host: "
                "give the webhook's URL"
            ) from None
    store = store_from(args)
    stored = read_runs(store)
    if not stored.rows and not stored.damaged:  # another folder, or a typo: write nothing there
        raise no_results_yet(store)
    rows = drift.drift_rows(store, stored)
    key = drift.write_drift(store, rows)
    flagged = [row for row in rows if row["flagged"]]
    where = f"{store.url.rstrip('/')}/{key}"
    print(
        f"{len(rows)} comparisons of a run with the one before it (by model, benchmark and "
        f"scoring), {len(flagged)} flagged: {where}"
    )
    if flagged:
        print(drift.summary_text(flagged))
    left_out(stored.damaged)
    if args.notify:
        try:
            sent = drift.notify(args.notify, drift.document(store, rows))
        except drift.NotifyError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"notified {args.notify}" if sent else "nothing flagged: nothing sent")
    return 0
