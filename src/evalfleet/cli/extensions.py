"""The subcommands benchmarks bring with them (`Benchmark.commands`): `evalfleet score rome`,
`evalfleet datbench select`, ... Nothing here names a benchmark."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from evalfleet.benchmarks import registry
from evalfleet.benchmarks.interface import Command, StoredResults
from evalfleet.core.types import Decoding


@dataclass
class Context:
    """The `benchmarks.interface.CommandContext` the command line lends a command."""

    results: StoredResults | None = None

    def ask_judge(
        self, model_id: str, prompts: list[str], decoding: Decoding, simulator_url: str | None
    ) -> list[str | None]:
        from evalfleet.engine.scoring.offline_judge import judge_prompts

        return judge_prompts(model_id, prompts, decoding, simulator_url=simulator_url)


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Mount each benchmark's commands along their paths (sharing the first word's group)."""
    from evalfleet.cli.options import add_store_options

    groups: dict[str, argparse._SubParsersAction] = {}
    for bench in registry.all_benchmarks():
        for command in bench.commands():
            where, name = sub, command.path[-1]
            if len(command.path) == 2:
                group = command.path[0]
                if group not in groups:
                    parser = sub.add_parser(group, help=command.group_help or command.help)
                    groups[group] = parser.add_subparsers(dest=f"{group}_command", required=True)
                where = groups[group]
            elif len(command.path) != 1:
                raise ValueError(f"{bench.name}: a command path has one or two words")
            parser = where.add_parser(
                name, help=command.help, description=command.description or command.help
            )
            command.arguments(parser)
            if command.reads_runs:
                add_store_options(parser)
            parser.set_defaults(func=_runner(command))


def _runner(command: Command):
    def run(args: argparse.Namespace) -> int:
        context = Context()
        if command.reads_runs:
            from evalfleet.cli.options import store_from
            from evalfleet.reports.stored_results import StoreResults

            context.results = StoreResults(store_from(args))
        return command.run(args, context)

    return run
