"""`evalfleet datbench select | delta | blind-filter`: the curation steps as subcommands of
DatBench's own (`Benchmark.commands`)."""

from __future__ import annotations

import argparse

from evalfleet.benchmarks.interface import Command, CommandContext, StoredResults


def _results(context: CommandContext) -> StoredResults:
    """The store's runs, which the command line lends every command that reads runs."""
    if context.results is None:
        raise RuntimeError("a DatBench command that reads runs was given no store")
    return context.results


GROUP = "DatBench curation from a run: select, delta, blind-filter"
SCORING_HELP = "scoring mode to read (default: judge if the run has one, else default)"


def _select_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id")
    p.add_argument("--k", type=int, required=True, help="items per capability")
    p.add_argument(
        "--frontier-share",
        type=float,
        default=0.2,
        help="share of k kept for frontier items every model fails (default 0.2)",
    )
    p.add_argument(
        "--leave-one-out", action="store_true", help="capability score without the item itself"
    )
    p.add_argument("--scoring", help=SCORING_HELP)
    p.add_argument("--output", help="directory (default ./datbench-subset-RUN_ID)")
    p.add_argument("--seed", type=int, default=0, help="of the random baseline subsets")
    p.add_argument("--draws", type=int, default=1000, help="random baseline subsets")


def _select(args: argparse.Namespace, context: CommandContext) -> int:
    from evalfleet.benchmarks.datbench.curation import select_subset

    report = select_subset(
        _results(context),
        args.run_id,
        k=args.k,
        frontier_share=args.frontier_share,
        leave_one_out=args.leave_one_out,
        scoring=args.scoring,
        output=args.output,
        seed=args.seed,
        draws=args.draws,
    )
    for name, value in report.items():
        print(f"{name}={value}")
    print(f"evaluate the subset with: --benchmark datbench --subset {report['output']}/subset.json")
    return 0


def _delta_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id", help="the run with datbench (and datbench_blind)")
    p.add_argument("blind_run_id", nargs="?", help="the run with datbench_blind, if another")
    p.add_argument("--scoring", help=SCORING_HELP)
    p.add_argument("--output", help="also write the table as CSV here")


def _delta(args: argparse.Namespace, context: CommandContext) -> int:
    from evalfleet.benchmarks.datbench.curation import vision_delta

    table = vision_delta(
        _results(context), args.run_id, blind_run_id=args.blind_run_id, scoring=args.scoring
    )
    print(table.to_markdown(index=False, floatfmt=".4f"))
    if args.output:
        table.to_csv(args.output, index=False)
        print(f"written to {args.output}")
    return 0


def _blind_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id", help="a run with datbench_blind")
    p.add_argument(
        "--comparator",
        choices=["gt", "ge"],
        default="gt",
        help="remove when solved by > tau models (gt, default) or >= tau (ge)",
    )
    p.add_argument("--default-tau", type=int, help="tau for datasets the table does not name")
    p.add_argument("--scoring", help=SCORING_HELP)
    p.add_argument("--output", help="file (default ./datbench-blind-filter-RUN_ID.json)")


def _blind(args: argparse.Namespace, context: CommandContext) -> int:
    from evalfleet.benchmarks.datbench.curation import blind_solvable

    table, result = blind_solvable(
        _results(context),
        args.run_id,
        comparator=args.comparator,
        default_tau=args.default_tau,
        scoring=args.scoring,
        output=args.output,
    )
    shown = table.astype(object).where(table.notna(), "-")
    print(shown.to_markdown(index=False))
    print(f"models={result['models']} comparator={result['comparator']}")
    print(f"remove={len(result['remove'])} keep={len(result['ids'])}")
    if result["untested_datasets"]:
        untested = ", ".join(result["untested_datasets"])
        print(f"not filtered (no τ; pass --default-tau N): {untested}")
    print(f"written to {result['output']} (its ids work as a --subset file)")
    return 0


COMMANDS = [
    Command(
        path=("datbench", "select"),
        help="select a discriminative subset from the run's models (point-biserial r_pb)",
        description="Rank DatBench items by their point-biserial correlation over the run's "
        "models and select k per capability, frontier items first; writes subset.json (ids) "
        "and discrimination.parquet (r_pb of every item).",
        arguments=_select_arguments,
        run=_select,
        group_help=GROUP,
        reads_runs=True,
    ),
    Command(
        path=("datbench", "delta"),
        help="vision delta per capability: with-image minus blind accuracy, paired SE",
        arguments=_delta_arguments,
        run=_delta,
        group_help=GROUP,
        reads_runs=True,
    ),
    Command(
        path=("datbench", "blind-filter"),
        help="list items solved without the image by more than tau models (Table 7)",
        arguments=_blind_arguments,
        run=_blind,
        group_help=GROUP,
        reads_runs=True,
    ),
]
