"""`evalfleet new benchmark NAME [--dir D]`: scaffold a benchmark package of its own."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_commands(sub: argparse._SubParsersAction) -> None:
    new = sub.add_parser("new", help="scaffold a package of your own (see docs/extending.md)")
    kinds = new.add_subparsers(dest="kind", required=True)
    bench = kinds.add_parser(
        "benchmark",
        help="a benchmark package: pyproject with its entry point, module, data, answer key, test",
    )
    bench.add_argument("name", help="the benchmark's name, a Python identifier")
    bench.add_argument("--dir", default=".", help="where to create the NAME folder (default: .)")
    bench.set_defaults(func=cmd_new_benchmark)


def cmd_new_benchmark(args: argparse.Namespace) -> int:
    from evalfleet.benchmarks.scaffold import write_scaffold

    folder = write_scaffold(args.name, Path(args.dir)).resolve()
    print(f"created {folder}")
    print(
        f"install it beside evalfleet (docs/extending.md): in the evalfleet checkout, "
        f"make plugin PLUGIN={folder}; for the uv tool, uv tool install --reinstall "
        f"EVALFLEET --with-editable {folder} (EVALFLEET: what you installed it from)"
    )
    return 0
