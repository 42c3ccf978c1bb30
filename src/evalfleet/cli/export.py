"""`evalfleet export RUN --format inspect|hf`: a run's results for other tools."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalfleet.cli.options import add_store_options, store_from
from evalfleet.cli.results import results_version


def add_commands(sub: argparse._SubParsersAction) -> None:
    export = sub.add_parser(
        "export",
        help="write a run's items for other tools: inspect_ai logs or a Hugging Face dataset",
        description="--format inspect: one inspect_ai log per model and benchmark (`inspect "
        "view DIR` opens them; needs `pip install 'evalfleet[inspect]'`). --format hf: a "
        "`datasets` folder, one row per item, read by datasets.load_from_disk.",
    )
    export.add_argument("run_id")
    export.add_argument("--format", required=True, choices=("inspect", "hf"))
    export.add_argument(
        "--version", type=results_version, help="a results version (default: the latest)"
    )
    export.add_argument(
        "--out", metavar="DIR", help="where to write (default: ./export-RUN-FORMAT); must be new"
    )
    add_store_options(export)
    export.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from evalfleet.core.types import ConfigError
    from evalfleet.reports.export_inspect import inspect_missing

    if args.format == "inspect" and (why := inspect_missing()):
        print(f"error: {why}", file=sys.stderr)
        return 2
    out = Path(args.out or f"export-{args.run_id}-{args.format}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out} already exists and is not empty: name a new folder with --out")
    from evalfleet.reports.export_rows import gather_export

    export = gather_export(store_from(args), args.run_id, args.version)
    if args.format == "inspect":
        from evalfleet.reports.export_inspect import write_inspect_logs

        paths = write_inspect_logs(export, out)
        print(f"{len(paths)} inspect logs, {len(export.items)} samples: {out} (inspect view {out})")
    else:
        from evalfleet.reports.export_hf import write_hf_dataset

        rows = write_hf_dataset(export, out)
        print(f"{rows} rows: {out} (datasets.load_from_disk)")
    return 0
