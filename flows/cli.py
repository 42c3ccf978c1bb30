"""The `evalfleet` command line."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.types import ConfigError, UsageError

DEFAULT_STORE = "./runs"


def user_errors() -> tuple[type[Exception], ...]:
    """Errors that mean "your input is wrong": shown as one line, no traceback."""
    from storage import StoreError

    return (ConfigError, StoreError, ValidationError)


def _model_limits(values: list[str] | None, flag: str) -> dict[str, int]:
    limits: dict[str, int] = {}
    for value in values or []:
        model, sep, number = value.rpartition("=")
        if not sep or not model or not number.isdigit():
            raise UsageError(f"{flag} takes MODEL=N, e.g. {flag} openai/gpt-4o=500 (got {value!r})")
        limits[model] = int(number)
    return limits


def _split_list(values: list[str] | None) -> list[str]:
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]


def _dataset_paths(values: list[str] | None) -> tuple[str | None, dict[str, str]]:
    """`PATH` applies to every benchmark; `BENCHMARK=PATH` to one."""
    from benchmarks import registry

    default: str | None = None
    per_benchmark: dict[str, str] = {}
    for value in values or []:
        name, sep, path = value.partition("=")
        if sep and name in registry.names():
            per_benchmark[name] = path
        else:
            default = value
    return default, per_benchmark


# --- benchmark options as flags ------------------------------------------------------------


def option_flag(benchmark: str, field: str) -> str:
    return f"--{benchmark.replace('_', '-')}-{field.replace('_', '-')}"


def _option_dest(benchmark: str, field: str) -> str:
    return f"bopt__{benchmark}__{field}"


def _add_benchmark_options(parser: argparse.ArgumentParser) -> None:
    """One flag per field of each registered benchmark's options (`--omnibench-...`)."""
    from benchmarks import registry

    for name in registry.names():
        bench = registry.get(name)
        fields = bench.options_model.model_fields
        if not fields or bench.option_flags_from:
            continue
        variants = [
            other for other in registry.names() if registry.get(other).option_flags_from == name
        ]
        title = f"{name} options" + (f" (also {', '.join(variants)})" if variants else "")
        group = parser.add_argument_group(title, bench.description)
        for field_name, info in fields.items():
            kwargs: dict[str, Any] = {
                "dest": _option_dest(name, field_name),
                "default": None,
                "help": info.description,
            }
            annotation = _unwrap_optional(info.annotation)
            origin = typing.get_origin(annotation)
            if annotation is bool:
                kwargs.update(action="store_true", default=None)
            elif origin is list:
                kwargs.update(action="append", metavar="VALUE[,VALUE]")
                (inner,) = typing.get_args(annotation)
                if typing.get_origin(inner) is typing.Literal:
                    kwargs["help"] += f" (repeatable; one of {', '.join(typing.get_args(inner))})"
            elif origin is typing.Literal:
                kwargs["choices"] = list(typing.get_args(annotation))
            else:
                kwargs["metavar"] = "VALUE"
            group.add_argument(option_flag(name, field_name), **kwargs)


def _unwrap_optional(annotation: Any) -> Any:
    """`X | None` -> X (a flag left out is None anyway)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(inner) == 1:
            return inner[0]
    return annotation


def _benchmark_options(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    from benchmarks import registry

    options: dict[str, dict[str, Any]] = {}
    for name in registry.names():
        flags = registry.get(name).option_flags_from or name
        for field_name, info in registry.get(name).options_model.model_fields.items():
            value = getattr(args, _option_dest(flags, field_name), None)
            if value is None:
                continue
            if typing.get_origin(_unwrap_optional(info.annotation)) is list:
                value = _split_list(value)
            options.setdefault(name, {})[field_name] = value
    return options


# --- run -----------------------------------------------------------------------------------


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    from benchmarks import registry
    from benchmarks.protocols import PROTOCOLS

    names = registry.names()
    p.add_argument(
        "--model",
        "-m",
        action="append",
        dest="models",
        metavar="PROVIDER/MODEL",
        help="model to evaluate (repeat, or comma-separate)",
    )
    p.add_argument(
        "--benchmark",
        "-b",
        action="append",
        dest="benchmarks",
        metavar="NAME",
        help=f"benchmark to run, repeatable: {', '.join(names)} "
        "(default: zerobench and zerobench_subquestions)",
    )
    p.add_argument("--limit", type=int, help="first N samples of each benchmark")
    p.add_argument(
        "--subset",
        metavar="FILE",
        help="only the item ids in FILE (from `evalfleet datbench select`), for every chosen "
        "benchmark that takes a subset (datbench, datbench_blind)",
    )
    p.add_argument(
        "--dataset-path",
        action="append",
        metavar="[BENCHMARK=]PATH",
        help="local dataset copy (save_to_disk dir, Parquet file or dir); "
        "BENCHMARK=PATH for one benchmark only (repeatable)",
    )
    p.add_argument(
        "--protocol",
        choices=list(PROTOCOLS),
        help="epoch protocol (default: each benchmark's own): "
        + "; ".join(f"{k}: {v}" for k, v in PROTOCOLS.items()),
    )
    p.add_argument(
        "--epochs",
        type=int,
        help="epochs; for zerobench-paper the sampled ones after the greedy one "
        "(default: each benchmark's own, ZeroBench 5)",
    )
    p.add_argument("--temperature", type=float, default=0.7, help="of sampled epochs")
    p.add_argument("--top-p", type=float, default=0.95, help="of sampled epochs")
    p.add_argument("--seed", type=int, default=42, help="base seed; epoch e uses seed+e")
    p.add_argument("--max-tokens", type=int, default=16000)
    p.add_argument("--max-image-side", type=int, help="downscale images (1024 = upstream)")
    p.add_argument(
        "--base-url",
        action="append",
        metavar="[MODEL=]URL",
        help="serve openai-compatible/NAME models from this OpenAI API root (vLLM, SGLang, a "
        "gateway), no registry entry needed; MODEL=URL for one model",
    )
    p.add_argument(
        "--api-key-env",
        action="append",
        metavar="[MODEL=]VAR",
        help="the variable holding that server's key (default: OPENAI_COMPATIBLE_API_KEY if "
        "set, else none)",
    )
    p.add_argument(
        "--modalities",
        action="append",
        metavar="[MODEL=]LIST",
        help="what that model takes, e.g. text,image (default: what the server's /v1/models "
        "says, else text,image)",
    )
    p.add_argument(
        "--judge-model",
        metavar="PROVIDER/MODEL",
        help="LLM judge for benchmarks that have one (ZeroBench fallback parser, ...)",
    )
    p.add_argument("--run-id", help="reuse to resume; default: a new timestamped id")
    p.add_argument(
        "--extend",
        action="store_true",
        help="let an existing run id grow: more models or more epochs",
    )
    p.add_argument(
        "--estimate",
        action="store_true",
        help="print the expected tokens and cost per model, benchmark and stage, then exit: "
        "nothing is sent and nothing written",
    )
    p.add_argument("--store", default=DEFAULT_STORE, help="./runs (default) or s3://bucket/prefix")
    p.add_argument("--s3-endpoint-url", default=os.environ.get("AWS_ENDPOINT_URL_S3"))
    p.add_argument(
        "--simulator-url",
        default=os.environ.get("EVALFLEET_SIMULATOR_URL"),
        help="where `evalfleet simulate` listens, for */sim-* models",
    )
    p.add_argument("--max-in-flight", type=int, default=256)
    p.add_argument("--workers", type=int, default=2, help="Ray worker actors")
    p.add_argument(
        "--max-attempts", type=int, default=6, help="attempts per item (429s counted apart)"
    )
    p.add_argument("--rpm", action="append", metavar="MODEL=N", help="requests/min limit")
    p.add_argument("--tpm", action="append", metavar="MODEL=N", help="tokens/min limit")
    p.add_argument(
        "--timeout-s", type=float, help="per-attempt timeout of every call (default: registry's)"
    )
    p.add_argument(
        "--batch",
        action="append",
        nargs="?",
        const="*",
        metavar="MODEL",
        help="ask through the providers' batch APIs (half price): every model, or MODEL "
        "(repeatable)",
    )
    p.add_argument(
        "--batch-retry",
        choices=("batch", "online"),
        default="batch",
        help="where a failed or expired batch line is asked again",
    )
    p.add_argument("--batch-poll-s", type=float, default=30.0, help="seconds between polls")
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="with --batch: submit and return; `evalfleet batches poll` collects the jobs",
    )
    p.add_argument(
        "--max-cost-usd",
        type=float,
        metavar="USD",
        help="cap on the run's spend (stored records included); a rerun with a higher cap resumes",
    )
    p.add_argument(
        "--no-retry-errors",
        action="store_true",
        help="on resume, keep terminal errors instead of requesting them again",
    )
    _add_benchmark_options(p)


def request_from_args(args: argparse.Namespace):
    from flows.request import EvalRequest

    dataset_path, dataset_paths = _dataset_paths(args.dataset_path)
    benchmarks = _split_list(args.benchmarks)
    options = _benchmark_options(args)
    if args.subset:
        _apply_subset(args.subset, benchmarks, options)
    fields: dict[str, Any] = dict(
        models=_split_list(args.models),
        benchmark_options=options,
        limit=args.limit,
        dataset_path=dataset_path,
        dataset_paths=dataset_paths,
        protocol=args.protocol,
        epochs=args.epochs,
        temperature=args.temperature,
        top_p=args.top_p,
        base_seed=args.seed,
        max_tokens=args.max_tokens,
        max_image_side=args.max_image_side,
        judge_model=args.judge_model,
        run_id=args.run_id,
        extend=args.extend,
        store=args.store,
        s3_endpoint_url=args.s3_endpoint_url,
        simulator_url=args.simulator_url,
        max_in_flight=args.max_in_flight,
        workers=args.workers,
        max_attempts=args.max_attempts,
        rpm=_model_limits(args.rpm, "--rpm"),
        tpm=_model_limits(args.tpm, "--tpm"),
        max_cost_usd=args.max_cost_usd,
        timeout_s=args.timeout_s,
        batch="*" in (args.batch or []),
        batch_models=[m for m in (args.batch or []) if m != "*"],
        batch_retry=args.batch_retry,
        batch_wait=not args.no_wait,
        batch_poll_s=args.batch_poll_s,
    )
    if benchmarks:
        fields["benchmarks"] = benchmarks
    if not fields["models"]:
        raise UsageError("no model given: pass --model provider/model (e.g. openai/sim-0.5)")
    fields["endpoints"] = _endpoints(args, [*fields["models"], args.judge_model or ""])
    request = EvalRequest(**fields)
    return request.model_copy(update={"run_id": request.resolved_run_id()})


def _per_model(values: list[str] | None, flag: str, models: list[str]) -> dict[str, str]:
    """`VALUE` for every openai-compatible model, `MODEL=VALUE` for one."""
    out: dict[str, str] = {}
    adhoc = [m for m in models if m.startswith("openai-compatible/")]
    for value in values or []:
        model, sep, rest = value.partition("=")
        if sep and model in models:
            out[model] = rest
        else:
            if not adhoc:
                raise UsageError(
                    f"{flag} applies to openai-compatible/NAME models: pass -m "
                    "openai-compatible/NAME"
                )
            out.update(dict.fromkeys(adhoc, value))
    return out


def _endpoints(args: argparse.Namespace, models: list[str]) -> dict[str, dict[str, Any]]:
    urls = _per_model(args.base_url, "--base-url", models)
    keys = _per_model(args.api_key_env, "--api-key-env", models)
    kinds = _per_model(args.modalities, "--modalities", models)
    for model in (*keys, *kinds):
        if model not in urls:
            raise UsageError(f"{model} has no --base-url: --api-key-env and --modalities need one")
    return {
        model: {
            "base_url": url,
            "api_key_env": keys.get(model),
            "modalities": _split_list([kinds[model]]) if model in kinds else None,
        }
        for model, url in urls.items()
    }


def _apply_subset(path: str, benchmarks: list[str], options: dict[str, dict[str, Any]]) -> None:
    from benchmarks import registry

    takers = [b for b in benchmarks if "subset" in registry.get(b).options_model.model_fields]
    if not takers:
        raise UsageError(
            "--subset applies to benchmarks that take a subset: add --benchmark datbench "
            "(and/or datbench_blind)"
        )
    absolute = os.path.abspath(path)
    for name in takers:
        options.setdefault(name, {})["subset"] = absolute


def cmd_run(args: argparse.Namespace) -> int:
    from flows.launch import run_request
    from flows.tables import print_result

    request = request_from_args(args)
    args.run_id = request.run_id  # the resume hint names it even when it was generated
    if getattr(args, "estimate", False):
        from flows.estimate import estimate_request

        return estimate_request(request, retry_errors=not args.no_retry_errors)
    result = run_request(request, retry_errors=not args.no_retry_errors)
    if result.get("batch_jobs_open"):
        print(
            f"run {result['run_id']}: {result['batch_jobs_open']} batch jobs open; "
            f"`evalfleet batches poll --store {request.store}` (or the poll-batches "
            "deployment) collects them and writes the tables once they end"
        )
        return 0
    print_result(result)
    if result.get("budget_reached"):
        from flows.launch import resume_hint

        print(f"budget reached: {result['budget_reached']}", file=sys.stderr)
        print(
            f"to finish, rerun with a higher --max-cost-usd: {resume_hint(args.run_id)}",
            file=sys.stderr,
        )
        return 3
    return 0


def cmd_aggregate(args: argparse.Namespace) -> int:
    from flows.aggregate import aggregate_run
    from flows.tables import print_result

    print_result(aggregate_run(args.run_id, args.store, args.s3_endpoint_url))
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from flows.status import list_runs

    print(list_runs(args.store, s3_endpoint_url=args.s3_endpoint_url))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from flows.status import batch_status, run_status

    table, bad = run_status(
        args.run_id, args.store, s3_endpoint_url=args.s3_endpoint_url, quarantine=args.quarantine
    )
    print(table.to_markdown(index=False))
    jobs = batch_status(args.run_id, args.store, s3_endpoint_url=args.s3_endpoint_url)
    if not jobs.empty:
        print("\nbatch jobs")
        print(jobs.to_markdown(index=False))
    if bad:
        action = "moved to quarantine/" if args.quarantine else "the next run moves them aside"
        print(f"{len(bad)} undecodable records count as missing ({action}):")
        for key in bad[:20]:
            print(f"  {key}")
    return 0


def cmd_batches_poll(args: argparse.Namespace) -> int:
    from flows.batches import poll_store

    report = poll_store(args.store, args.s3_endpoint_url)
    if not report:
        print(f"no batch jobs open in {args.store}")
    for run_id, outcome in report.items():
        left = outcome["batch_jobs_open"]
        state = "aggregated" if outcome.get("aggregated") else f"{left} jobs open"
        print(f"run {run_id}: {outcome['batch']} — {state}")
    return 0


def cmd_score_rome(args: argparse.Namespace) -> int:
    """Score ROME predictions made elsewhere, writing what upstream's evaluate.py writes."""

    from benchmarks.rome.judge import RomeJudge
    from benchmarks.rome.offline import read_annotations, read_predictions, score_predictions
    from benchmarks.rome.scoring import dumps

    annotations = read_annotations(Path(args.annotations))
    predictions = read_predictions(Path(args.predictions))
    judge = None
    if args.judge_model:
        from flows.offline_judge import judge_prompts

        def judge(prompts: list[str]) -> list[str | None]:
            return judge_prompts(
                args.judge_model, prompts, RomeJudge.decoding, simulator_url=args.simulator_url
            )

    scores, updated = score_predictions(
        annotations,
        predictions,
        mode=args.scoring,
        tracker=args.tracker_type,
        subtracker=args.tracker_subtype,
        judge=judge,
        judge_parse=args.judge_parse,
    )
    out = Path(args.output) if args.output else Path(args.predictions).resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    (out / "scores.json").write_bytes(dumps(scores))
    (out / "updated_predictions.json").write_bytes(dumps(updated))
    print(f"final_score {scores['final_score']}, accuracy {scores['accuracy']}: written to {out}")
    return 0


def cmd_datbench_select(args: argparse.Namespace) -> int:
    from flows.datbench_tools import select_subset

    report = select_subset(
        args.run_id,
        args.store,
        k=args.k,
        frontier_share=args.frontier_share,
        leave_one_out=args.leave_one_out,
        scoring=args.scoring,
        output=args.output,
        s3_endpoint_url=args.s3_endpoint_url,
        seed=args.seed,
        draws=args.draws,
    )
    for name, value in report.items():
        print(f"{name}={value}")
    print(f"evaluate the subset with: --benchmark datbench --subset {report['output']}/subset.json")
    return 0


def cmd_datbench_delta(args: argparse.Namespace) -> int:
    from flows.datbench_tools import vision_delta

    table = vision_delta(
        args.run_id,
        args.store,
        blind_run_id=args.blind_run_id,
        scoring=args.scoring,
        s3_endpoint_url=args.s3_endpoint_url,
    )
    print(table.to_markdown(index=False, floatfmt=".4f"))
    if args.output:
        table.to_csv(args.output, index=False)
        print(f"written to {args.output}")
    return 0


def cmd_datbench_blind_filter(args: argparse.Namespace) -> int:
    from flows.datbench_tools import blind_solvable

    table, result = blind_solvable(
        args.run_id,
        args.store,
        comparator=args.comparator,
        default_tau=args.default_tau,
        scoring=args.scoring,
        output=args.output,
        s3_endpoint_url=args.s3_endpoint_url,
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


def _datbench_parsers(sub: argparse._SubParsersAction) -> None:
    datbench = sub.add_parser(
        "datbench", help="DatBench curation from a run: select, delta, blind-filter"
    )
    tools = datbench.add_subparsers(dest="tool", required=True)
    scoring_help = "scoring mode to read (default: judge if the run has one, else default)"

    select = tools.add_parser(
        "select",
        help="select a discriminative subset from the run's models (point-biserial r_pb)",
        description="Rank DatBench items by their point-biserial correlation over the run's "
        "models and select k per capability, frontier items first; writes subset.json (ids) "
        "and discrimination.parquet (r_pb of every item).",
    )
    select.add_argument("run_id")
    select.add_argument("--k", type=int, required=True, help="items per capability")
    select.add_argument(
        "--frontier-share",
        type=float,
        default=0.2,
        help="share of k kept for frontier items every model fails (default 0.2)",
    )
    select.add_argument(
        "--leave-one-out",
        action="store_true",
        help="capability score without the item itself",
    )
    select.add_argument("--scoring", help=scoring_help)
    select.add_argument("--output", help="directory (default ./datbench-subset-RUN_ID)")
    select.add_argument("--seed", type=int, default=0, help="of the random baseline subsets")
    select.add_argument("--draws", type=int, default=1000, help="random baseline subsets")
    _store_arguments(select)
    select.set_defaults(func=cmd_datbench_select)

    delta = tools.add_parser(
        "delta",
        help="vision delta per capability: with-image minus blind accuracy, paired SE",
    )
    delta.add_argument("run_id", help="the run with datbench (and datbench_blind)")
    delta.add_argument("blind_run_id", nargs="?", help="the run with datbench_blind, if another")
    delta.add_argument("--scoring", help=scoring_help)
    delta.add_argument("--output", help="also write the table as CSV here")
    _store_arguments(delta)
    delta.set_defaults(func=cmd_datbench_delta)

    blind = tools.add_parser(
        "blind-filter",
        help="list items solved without the image by more than tau models (Table 7)",
    )
    blind.add_argument("run_id", help="a run with datbench_blind")
    blind.add_argument(
        "--comparator",
        choices=["gt", "ge"],
        default="gt",
        help="remove when solved by > tau models (gt, default) or >= tau (ge)",
    )
    blind.add_argument("--default-tau", type=int, help="tau for datasets the table does not name")
    blind.add_argument("--scoring", help=scoring_help)
    blind.add_argument("--output", help="file (default ./datbench-blind-filter-RUN_ID.json)")
    _store_arguments(blind)
    blind.set_defaults(func=cmd_datbench_blind_filter)


def cmd_simulate(args: argparse.Namespace) -> int:
    from simulator import cli as simulator_cli

    return simulator_cli.run(args)


def cmd_leaderboard(args: argparse.Namespace) -> int:

    from flows.leaderboard import shown_columns, update
    from flows.tables import markdown

    board, where = update(args.store, args.s3_endpoint_url)
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


def read_reevaluate_request(path: str) -> str:
    """Check the scheduled reevaluation's parameters now, not when the served process dies
    on them; returns the file's absolute path."""
    import yaml

    from flows.reevaluate import ReevaluateRequest

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
    from flows.stack import up

    store = args.store
    if store and not store.startswith("s3://"):
        store = os.path.abspath(store)
    settings = {}
    if args.reevaluate_request:
        settings["EVALFLEET_REEVALUATE_REQUEST"] = read_reevaluate_request(args.reevaluate_request)
    if args.reevaluate_every:
        settings["EVALFLEET_REEVALUATE_EVERY_S"] = str(args.reevaluate_every)
    if args.reevaluate_cron:
        settings["EVALFLEET_REEVALUATE_CRON"] = args.reevaluate_cron
    _, lines = up(
        folder=args.state_dir, port=args.port, ray=args.ray, store=store, serve_settings=settings
    )
    print("\n".join(lines))
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    from flows.stack import down

    print("\n".join(down(args.state_dir)))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from flows.demo import run_demo
    from flows.tables import print_result

    result = run_demo(
        benchmark=args.benchmark,
        store=args.store,
        run_id=args.run_id,
        s3_endpoint_url=args.s3_endpoint_url,
    )
    print_result(result)
    return 0


def _store_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", default=DEFAULT_STORE, help="./runs (default) or s3://bucket/prefix")
    p.add_argument("--s3-endpoint-url", default=os.environ.get("AWS_ENDPOINT_URL_S3"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evalfleet",
        description="Evaluate models on hard multimodal benchmarks (Prefect + Ray).",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser(
        "run",
        help="evaluate, then aggregate (resumes an existing --run-id)",
        description="Evaluate models on benchmarks, then write the tables. Ctrl-C stops "
        "cleanly (exit 130) and keeps everything stored; run again with the same --run-id "
        "to resume.",
    )
    add_run_arguments(run)
    run.set_defaults(func=cmd_run)

    agg = sub.add_parser("aggregate", help="score a run and write its result tables")
    agg.add_argument("run_id")
    _store_arguments(agg)
    agg.set_defaults(func=cmd_aggregate)

    runs = sub.add_parser("runs", help="list the runs in a store with their progress")
    _store_arguments(runs)
    runs.set_defaults(func=cmd_runs)

    status = sub.add_parser("status", help="done / failed / stale / missing per model, benchmark")
    status.add_argument("run_id")
    _store_arguments(status)
    status.add_argument(
        "--quarantine",
        action="store_true",
        help="move undecodable records aside now (a resume also does it)",
    )
    status.set_defaults(func=cmd_status)

    batches = sub.add_parser("batches", help="batch jobs (--batch runs)")
    batches_sub = batches.add_subparsers(dest="action", required=True)
    poll = batches_sub.add_parser(
        "poll",
        help="one round for every run of a store with open jobs: collect the jobs that "
        "ended, send what follows, aggregate the runs completed",
    )
    _store_arguments(poll)
    poll.set_defaults(func=cmd_batches_poll)

    score = sub.add_parser("score", help="score predictions made elsewhere (ROME)")
    score_sub = score.add_subparsers(dest="benchmark", required=True)
    rome = score_sub.add_parser(
        "rome",
        help="write scores.json and updated_predictions.json as ROME's evaluate.py does",
        description="Score a ROME predictions file (one object, an array, or an object keyed "
        "by question_id; JSON or JSON lines) against the annotations.",
    )
    rome.add_argument("--annotations", required=True, help="ROME annotations (e.g. test.json)")
    rome.add_argument("--predictions", required=True, help="predictions to score")
    rome.add_argument(
        "--scoring", choices=["upstream", "fixed"], default="upstream", help="rule mode"
    )
    rome.add_argument("--tracker-type", default="task", help="bucket field (default task)")
    rome.add_argument("--tracker-subtype", default=None, help="sub-bucket field")
    rome.add_argument(
        "--judge-model", metavar="PROVIDER/MODEL", help="judge every prediction with this model"
    )
    rome.add_argument(
        "--judge-parse",
        choices=["upstream", "robust"],
        default="upstream",
        help="upstream's verdict parse (default) or the last 'Judgement: 0|1'",
    )
    rome.add_argument("--simulator-url", default=os.environ.get("EVALFLEET_SIMULATOR_URL"))
    rome.add_argument("--output", help="directory for the two files (default: beside predictions)")
    rome.set_defaults(func=cmd_score_rome)

    _datbench_parsers(sub)

    board = sub.add_parser(
        "leaderboard",
        help="every run of a store side by side: tables and plots under leaderboard/",
        description="Keep the latest complete result per (model, benchmark, scoring) of every "
        "run in the store, rank them, and write Parquet, CSV, Markdown, PNG plots and an HTML "
        "page under {store}/leaderboard/.",
    )
    _store_arguments(board)
    board.add_argument("--open", action="store_true", help="open the HTML page (print its path)")
    board.set_defaults(func=cmd_leaderboard)

    up = sub.add_parser(
        "up",
        help="start the local stack: Prefect server and UI, the deployments, optionally Ray",
        description="Start a Prefect server (UI included) on 127.0.0.1, serve the evalfleet "
        "deployments, and with --ray a Ray head every run shares. Idempotent: a second `up` "
        "reports what is running (given another --store or schedule, it restarts only the "
        "deployments). `evalfleet run` uses the stack while it is up.",
    )
    up.add_argument("--port", type=int, help="Prefect server port (default 4200, else a free one)")
    up.add_argument("--ray", action="store_true", help="also start a shared Ray head")
    up.add_argument(
        "--store",
        help="default store of runs started from the UI (made absolute; default "
        "$EVALFLEET_STORE, else ./runs; a later `up` without it keeps the current one)",
    )
    up.add_argument(
        "--state-dir",
        help="where the stack keeps its state (default $EVALFLEET_STACK, else ~/.evalfleet/stack)",
    )
    up.add_argument(
        "--reevaluate-request",
        metavar="FILE",
        help="JSON or YAML parameters of the scheduled reevaluation (providers, patterns, "
        "benchmarks, store, simulator_url, ...)",
    )
    when = up.add_mutually_exclusive_group()
    when.add_argument(
        "--reevaluate-every", type=float, metavar="SECONDS", help="reevaluate on this interval"
    )
    when.add_argument(
        "--reevaluate-cron", metavar="CRON", help="reevaluate on this cron (default 0 3 * * *)"
    )
    up.set_defaults(func=cmd_up)

    down = sub.add_parser("down", help="stop the processes `evalfleet up` started, and no other")
    down.add_argument("--state-dir", help="as given to `evalfleet up`")
    down.set_defaults(func=cmd_down)

    sim = sub.add_parser("simulate", help="serve the provider simulator on 127.0.0.1")
    from simulator import cli as simulator_cli

    simulator_cli.add_arguments(sim)
    sim.set_defaults(func=cmd_simulate)

    from flows.demo import DEMOS

    demo = sub.add_parser("demo", help="generate a small dataset, simulate two models, evaluate")
    demo.add_argument(
        "--benchmark",
        "-b",
        choices=list(DEMOS),
        default="zerobench",
        help="which benchmark's demo (default zerobench; datbench runs with and without images)",
    )
    demo.add_argument("--store", default=DEFAULT_STORE)
    demo.add_argument("--run-id", default=None)
    demo.add_argument("--s3-endpoint-url", default=os.environ.get("AWS_ENDPOINT_URL_S3"))
    demo.set_defaults(func=cmd_demo)
    return parser


def one_line(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "request"
            message = str(err.get("ctx", {}).get("error") or err["msg"])
            problems.append(f"{where}: {message}")
        return "invalid request: " + "; ".join(problems)
    return " ".join(str(exc).split())


def quiet_defaults() -> None:
    """No phoning home: the machines this runs on may have no internet at all."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def main(argv: Sequence[str] | None = None) -> int:
    quiet_defaults()
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a malformed flag (2)
        return int(exc.code or 0)
    from flows.outcome import Interrupted

    try:
        return args.func(args)
    except user_errors() as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        from flows.interrupts import STOP
        from flows.launch import resume_hint

        print(f"{exc}", file=sys.stderr)
        run_id = getattr(args, "run_id", None)
        if run_id:
            print(f"resume with: {resume_hint(run_id)}", file=sys.stderr)
        return STOP.exit_code
    except KeyboardInterrupt:
        print("interrupted: everything stored so far is kept", file=sys.stderr)
        return 130
    except RuntimeError as exc:
        from flows.services import ServiceError

        if not isinstance(exc, ServiceError):
            raise
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
