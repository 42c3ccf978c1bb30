"""The local stack and dry runs: `evalfleet up`, `down`, `demo` and `simulate`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pydantic import ValidationError

from evalfleet.core import settings
from evalfleet.core.settings import flag_type
from evalfleet.core.types import ConfigError

MAX_NODES = 64  # Ray nodes, or `prefect worker` processes, this machine starts


def add_commands(sub: argparse._SubParsersAction) -> None:
    from evalfleet.cli.demo import demo_choices
    from evalfleet.cli.options import add_history_option, add_store_options
    from evalfleet.simulator import cli as simulator_cli

    up = sub.add_parser(
        "up",
        help="start the local stack: Prefect server and UI, the deployments, optionally Ray",
        description="Start a Prefect server (UI included) on 127.0.0.1, serve the evalfleet "
        "deployments, and with --ray a Ray head every run shares. Idempotent: a second `up` "
        "reports what is running (given another --store or schedule, it restarts only the "
        "deployments). `evalfleet run` uses the stack while it is up.",
    )
    up.add_argument(
        "--port",
        type=flag_type(settings.number(int, 1, 65_535)),
        help="Prefect server port (default 4200, else a free one)",
    )
    up.add_argument("--ray", action="store_true", help="also start a shared Ray head")
    up.add_argument(
        "--ray-nodes",
        type=flag_type(settings.number(int, 0, MAX_NODES)),
        default=0,
        metavar="N",
        help="a Ray cluster of a head that hosts no work and N worker nodes, each its own "
        "`ray start --address` (implies --ray)",
    )
    up.add_argument(
        "--pool",
        action="store_true",
        help="run the deployments of deployments/prefect.yaml on the process work pool "
        "'evalfleet' with `prefect worker` processes, instead of one serve process",
    )
    up.add_argument(
        "--workers",
        type=flag_type(settings.number(int, 1, MAX_NODES)),
        default=2,
        metavar="N",
        help="with --pool: how many `prefect worker` processes (default 2)",
    )
    up.add_argument(
        "--store",
        help="default store of runs started from the UI (made absolute; default "
        "$EVALFLEET_STORE, else ./runs; a later `up` without it keeps the current one)",
    )
    up.add_argument(
        "--state-dir",
        help="where the stack keeps its state (default $EVALFLEET_STACK, else "
        "$EVALFLEET_HOME/stack, by default ~/.evalfleet/stack); `evalfleet run` finds a stack "
        "kept elsewhere only when EVALFLEET_STACK names its folder",
    )
    up.add_argument(
        "--reevaluate-request",
        metavar="FILE",
        help="JSON or YAML parameters of the scheduled reevaluation (providers, patterns, "
        "benchmarks, store, simulator_url, ...)",
    )
    when = up.add_mutually_exclusive_group()
    when.add_argument(
        "--reevaluate-every",
        type=flag_type(settings.REEVALUATE_EVERY_S.kind),
        metavar="SECONDS",
        help="reevaluate on this interval",
    )
    when.add_argument(
        "--reevaluate-cron",
        type=flag_type(settings.REEVALUATE_CRON.kind),
        metavar="CRON",
        help="reevaluate on this cron (default 0 3 * * *)",
    )
    up.set_defaults(func=cmd_up)

    down = sub.add_parser("down", help="stop the processes `evalfleet up` started, and no other")
    down.add_argument("--state-dir", help="as given to `evalfleet up`")
    down.set_defaults(func=cmd_down)

    sim = sub.add_parser(
        "simulate",
        help="serve the provider simulator on 127.0.0.1 (or write its answer key)",
        description="Serve the provider simulator. With --answers-for, write the answer key "
        "of a dataset instead (to --answers FILE, default answers.jsonl) and exit.",
    )
    simulator_cli.add_arguments(sim)
    sim.add_argument(
        "--answers-for",
        metavar="DATASET",
        help="write the answer key of the dataset at this path (a local copy in the upstream "
        "schema, as --dataset-path takes) for the benchmarks of -b, with their default "
        "options, then exit",
    )
    sim.add_argument(
        "--benchmark",
        "-b",
        action="append",
        metavar="NAME",
        help="with --answers-for: a benchmark the dataset is read as, repeatable (default: "
        "those a run runs when it names none)",
    )
    sim.set_defaults(func=cmd_simulate)

    demo = sub.add_parser("demo", help="generate a small dataset, simulate two models, evaluate")
    choices = demo_choices()
    demo.add_argument(
        "--benchmark",
        "-b",
        choices=choices,
        default=choices[0] if choices else None,
        help=f"which benchmark's demo (default {choices[0] if choices else 'none'})",
    )
    demo.add_argument(
        "--run-id",
        default=None,
        help="the demo run's id (default demo-BENCHMARK-DATE-TIME); the same id resumes it",
    )
    add_store_options(demo)
    add_history_option(demo)
    demo.set_defaults(func=cmd_demo)


def read_reevaluate_request(path: str) -> str:
    """Check the scheduled reevaluation's parameters now, not when the served process dies
    on them; returns the file's absolute path."""
    import yaml

    from evalfleet.cli.errors import one_line
    from evalfleet.engine.reevaluate import ReevaluateRequest

    path = os.path.abspath(path)
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(
            f"cannot read --reevaluate-request {path} ({type(exc).__name__}): give a JSON or "
            "YAML file of the reevaluate flow's parameters"
        ) from None
    if raw is not None and not isinstance(raw, dict):
        raise ConfigError(f"--reevaluate-request {path} must hold a mapping of parameters")
    try:
        ReevaluateRequest(**(raw or {}))
    except ValidationError as exc:
        raise ConfigError(f"--reevaluate-request {path}: {one_line(exc)}") from None
    return path


def cmd_up(args: argparse.Namespace) -> int:
    from evalfleet.stack.up import up

    scheduled = args.reevaluate_request or args.reevaluate_every or args.reevaluate_cron
    if args.pool and scheduled:
        raise ConfigError(
            "--reevaluate-* set the served deployments' schedule: with --pool, edit the "
            "schedules and parameters in deployments/prefect.yaml instead"
        )
    settings = {}
    if args.reevaluate_request:
        settings["EVALFLEET_REEVALUATE_REQUEST"] = read_reevaluate_request(args.reevaluate_request)
    if args.reevaluate_every:
        settings["EVALFLEET_REEVALUATE_EVERY_S"] = str(args.reevaluate_every)
    if args.reevaluate_cron:
        settings["EVALFLEET_REEVALUATE_CRON"] = args.reevaluate_cron
    _, lines = up(
        folder=args.state_dir,
        port=args.port,
        ray=args.ray,
        ray_nodes=args.ray_nodes,
        pool=args.pool,
        workers=args.workers,
        store=args.store,
        serve_settings=settings,
    )
    print("\n".join(lines))
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    """Exit 1 when a process of the stack is left running (each named with how to stop it)."""
    from evalfleet.stack.down import down

    stopped = down(args.state_dir)
    print("\n".join(stopped.lines))
    return 0 if stopped.complete else 1


def cmd_simulate(args: argparse.Namespace) -> int:
    from evalfleet.simulator import cli as simulator_cli

    if args.answers_for is None:
        if args.benchmark:
            raise ConfigError("-b chooses the benchmarks of --answers-for: give a dataset too")
        return simulator_cli.run(args)
    from evalfleet.benchmarks import registry
    from evalfleet.benchmarks.answer_key import write_answer_key

    benchmarks = args.benchmark or registry.default_names()
    for name in benchmarks:
        registry.get(name)  # an unknown one is one line naming the known ones
    path = Path(args.answers or "answers.jsonl").resolve()
    write_answer_key(os.path.abspath(args.answers_for), benchmarks, path)
    lines = len(path.read_text().splitlines())
    print(f"answer key of {args.answers_for} ({', '.join(benchmarks)}): {path}, {lines} entries")
    print(f"serve it with: evalfleet simulate --answers {path}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from evalfleet.cli.demo import run_demo
    from evalfleet.cli.options import kept_flow_runs
    from evalfleet.reports.tables import print_result

    result = run_demo(
        benchmark=args.benchmark,
        store=args.store,
        run_id=args.run_id,
        s3_endpoint_url=args.s3_endpoint_url,
        flow_runs_kept=kept_flow_runs(args),
    )
    if result.results is None:
        return 0
    print_result(result.results.tables)
    from evalfleet.cli.run import print_end

    return print_end(result, result.results.tables, allow_errors=False, code=0)
