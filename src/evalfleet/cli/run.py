"""`evalfleet run`: evaluate, then aggregate (resumes an existing --run-id); with --estimate,
only the expected tokens and cost."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from evalfleet.benchmarks import registry
from evalfleet.core.types import UsageError
from evalfleet.engine.run.request import EvalRequest

if TYPE_CHECKING:
    from evalfleet.api.result import RunResult


def add_commands(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser(
        "run",
        help="evaluate, then aggregate (resumes an existing --run-id)",
        description="Evaluate models on benchmarks, then write the tables. Ctrl-C stops "
        "cleanly (exit 130) and keeps everything stored; run again with the same --run-id "
        "to resume.",
    )
    from evalfleet.cli.options import add_history_option, add_request_options, add_store_options

    add_request_options(run)
    run.add_argument(
        "--subset",
        metavar="FILE",
        help="only the item ids in FILE (a subset a benchmark's curation command wrote), for "
        "every chosen benchmark that takes a subset",
    )
    run.add_argument(
        "--estimate",
        action="store_true",
        help="print the expected tokens and cost per model, benchmark and stage, then exit: "
        "nothing is sent and nothing written",
    )
    run.add_argument(
        "--no-retry-errors",
        action="store_true",
        help="on resume, keep terminal errors instead of requesting them again",
    )
    run.add_argument(
        "--allow-errors",
        action="store_true",
        help="exit 0 when items ended in errors (their records keep the error; by default such "
        "a run exits 5, its last line counting them)",
    )
    run.add_argument(
        "--full-stack",
        action="store_true",
        help="start a Ray head and a Prefect server even for a small run (by default a run "
        "whose --limit caps it at 200 items runs in this process, with the same results)",
    )
    add_history_option(run)
    run.set_defaults(func=cmd_run)

    judge = sub.add_parser(
        "judge",
        help="judge a stored run's answers with another judge model (nothing asked again)",
        description="Add a judge model to a run: it grades every stored answer its benchmark's "
        "judge reads, checkpointed, rate limited and priced like the first judge; the tables "
        "then give each judge's scores and how far the judges agree. The evaluated models are "
        "not asked again and their keys are not needed.",
    )
    judge.add_argument("run_id")
    judge.add_argument(
        "--judge",
        required=True,
        action="append",
        metavar="PROVIDER/MODEL",
        help="the judge (repeat for several: each grades in turn, each checkpointed)",
    )
    judge.add_argument(
        "--panel",
        choices=["majority"],
        help="the majority verdict of the run's judges (three or more, with those --judge "
        "adds) printed against the rules and the --labels slice; a run with three judges also "
        "has it as a scoring mode, {mode}@panel",
    )
    judge.add_argument(
        "--labels",
        metavar="FILE",
        help="a labelled slice (JSON Lines: model, sample_id, epoch, correct; 'demo': the "
        "slices shipped for the demos' runs): print each judge's accuracy and Cohen's kappa "
        "against it, with 95 %% intervals",
    )
    judge.add_argument(
        "--reuse-from",
        action="append",
        default=[],
        metavar="RUN",
        help="take the judgements this earlier run holds for the same judge, prompt and answer "
        "instead of asking again (repeatable; '*': any run of the store); never implicit",
    )
    judge.add_argument(
        "--simulator-url", metavar="URL", help="for a simulated judge (default: the run's)"
    )
    add_store_options(judge)
    add_history_option(judge)
    judge.set_defaults(func=cmd_judge)


def request_from_args(args: argparse.Namespace) -> EvalRequest:
    from evalfleet.cli.errors import one_line
    from evalfleet.cli.options import field_flags, request_fields

    fields = request_fields(args)
    if not fields.get("models"):
        raise UsageError("no model given: pass --model provider/model (e.g. openai/sim-0.5)")
    if args.subset:
        _apply_subset(args.subset, fields)
    try:
        request = EvalRequest(**fields)
    except ValidationError as exc:  # told by the flags that gave the values
        raise UsageError(one_line(exc, flags=field_flags())) from None
    return request.model_copy(update={"run_id": request.resolved_run_id()})


def _apply_subset(path: str, fields: dict[str, Any]) -> None:
    benchmarks = fields.get("benchmarks") or registry.default_names()
    takers = [b for b in benchmarks if "subset" in registry.get(b).options_model.model_fields]
    if not takers:
        names = [
            b.name for b in registry.all_benchmarks() if "subset" in b.options_model.model_fields
        ]
        others = f" (and/or {', '.join(names[1:])})" if len(names) > 1 else ""
        raise UsageError(
            f"--subset applies to benchmarks that take a subset: add --benchmark {names[0]}{others}"
        )
    options = fields.setdefault("benchmark_options", {})
    for name in takers:
        options.setdefault(name, {})["subset"] = os.path.abspath(path)


def cmd_run(args: argparse.Namespace) -> int:
    from evalfleet.api import run
    from evalfleet.cli.options import kept_flow_runs

    request = request_from_args(args)
    args.run_id = request.run_id  # the resume hint names it even when it was generated
    if args.estimate:
        return estimate(request, retry_errors=not args.no_retry_errors)
    kept = kept_flow_runs(args)
    result = run(
        request,
        retry_errors=not args.no_retry_errors,
        flow_runs_kept=kept,
        full_stack=args.full_stack,
    )
    code = print_run(result, args.run_id)
    if result.results is None:  # batch jobs left open: the poller writes the tables
        return code
    return print_end(result, result.results.tables, allow_errors=args.allow_errors, code=code)


def print_end(result: RunResult, tables: dict[str, Any], *, allow_errors: bool, code: int) -> int:
    """A run's last line: how many items ended in errors; the exit code (5 when some did)."""
    from evalfleet.cli.hints import resume_hint
    from evalfleet.cli.run_end import end_line

    run_id = result.run_id
    rerun = resume_hint(run_id, without=("--no-retry-errors", "--allow-errors"))
    line, code = end_line(
        run_id,
        tables,
        result.outcome.errors,
        allow_errors=allow_errors,
        rerun=rerun,
        code=code,
    )
    print(line)
    return code


def cmd_judge(args: argparse.Namespace) -> int:
    from evalfleet.api import judge
    from evalfleet.cli.options import kept_flow_runs, store_from
    from evalfleet.engine.store.panel_record import check_panel_record, read_panel, record_panel
    from evalfleet.reports.judge_slice import check_panel, load_labels, panel_members

    judges = list(dict.fromkeys(args.judge))
    members = panel_members(store_from(args), args.run_id, judges)
    check_panel(args.panel, members)  # before any judge is asked: one line
    store = store_from(args)
    if args.panel:  # the run keeps one panel: another one is refused here, before money
        check_panel_record(store, args.run_id, args.panel, members)
    labels = load_labels(args.labels) if args.labels else None
    kept = kept_flow_runs(args)
    for name in judges:  # each in turn: each checkpointed, a rerun resumes it
        result = judge(
            args.run_id,
            name,
            store=store_from(args),
            simulator_url=args.simulator_url,
            flow_runs_kept=kept,
            reuse_from=args.reuse_from,
        )
        if result.note:  # nothing for the judge to grade
            print(result.note)
            return 0
    if args.panel:
        record_panel(store, args.run_id, args.panel, members)
    code = print_run(result, args.run_id, resume=False)
    recorded = read_panel(store, args.run_id)
    if recorded is not None:
        from evalfleet.engine.store.panel_record import panel_label

        print(f"\nthis run's judge panel: {panel_label(recorded)}")
    if labels is not None or args.panel:
        from evalfleet.reports.judge_slice import panel_text, slice_table, to_text

        panel = members if args.panel else None
        if panel:
            print()
            print(panel_text(store, args.run_id, panel))
        if labels is not None:
            print()
            print(to_text(slice_table(store, args.run_id, labels, panel), len(labels)))
    return code


def print_run(result: RunResult, run_id: str, *, resume: bool = True) -> int:
    """A run's tables, and how it ended: the exit code (3: the cost cap was reached)."""
    from evalfleet.cli.hints import resume_hint

    outcome = result.outcome
    if result.results is None:  # batch jobs left open: the poller writes the tables
        print(
            f"run {outcome.run_id}: {outcome.batch_jobs_open} batch jobs open; "
            f"`evalfleet batches poll --store {result.store}` (or the poll-batches "
            "deployment) collects them and writes the tables once they end"
        )
        return 0
    from evalfleet.reports.tables import print_result  # pandas: loaded once the run is done

    print_result(result.results.tables)
    if outcome.budget_reached:
        print(f"budget reached: {outcome.budget_reached}", file=sys.stderr)
        if resume:
            cap = outcome.finish_cap_usd
            how = f"--max-cost-usd {cap:g}" if cap else "a higher --max-cost-usd"
            hint = resume_hint(run_id, cap)
            print(f"to finish, rerun with {how}: {hint}", file=sys.stderr)
        return 3
    return 0


def estimate(request: EvalRequest, *, retry_errors: bool = True) -> int:
    """`evalfleet run --estimate`: the checks a run makes, then the table. Exit code 0."""
    from evalfleet.engine.prepare.estimate import estimate_run, format_estimate
    from evalfleet.engine.prepare.resolve import resolve

    run = resolve(request)
    print(format_estimate(run.run_id, estimate_run(run, retry_errors=retry_errors)))
    return 0
