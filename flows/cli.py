"""The `evalfleet` command line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pydantic import ValidationError


def user_errors() -> tuple[type[Exception], ...]:
    """Errors that mean "your input is wrong": shown as one line, no traceback."""
    from benchmarks.zerobench import DatasetError
    from flows.plan import RunError
    from providers.registry import ConfigError
    from storage import StoreError

    return (ConfigError, DatasetError, RunError, StoreError, ValidationError)


def _model_limits(values: list[str] | None, flag: str) -> dict[str, int]:
    limits: dict[str, int] = {}
    for value in values or []:
        model, sep, number = value.rpartition("=")
        if not sep or not number.isdigit():
            raise SystemExit(f"error: {flag} takes MODEL=N, e.g. {flag} openai/gpt-4o=500")
        limits[model] = int(number)
    return limits


def _split_list(values: list[str] | None) -> list[str]:
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]


def _dataset_paths(values: list[str] | None) -> tuple[str | None, dict[str, str]]:
    """`PATH` applies to every benchmark; `BENCHMARK=PATH` to one."""
    from benchmarks.registry import TASKS

    default: str | None = None
    per_benchmark: dict[str, str] = {}
    for value in values or []:
        name, sep, path = value.partition("=")
        if sep and name in TASKS:
            per_benchmark[name] = path
        else:
            default = value
    return default, per_benchmark


def add_run_arguments(p: argparse.ArgumentParser) -> None:
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
        help="zerobench, zerobench_subquestions (default: both)",
    )
    p.add_argument("--limit", type=int, help="first N samples of each benchmark")
    p.add_argument(
        "--dataset-path",
        action="append",
        metavar="[BENCHMARK=]PATH",
        help="local dataset copy (save_to_disk dir or Parquet); "
        "BENCHMARK=PATH for one benchmark only (repeatable)",
    )
    p.add_argument(
        "--text-alternative",
        action="append",
        choices=["image", "audio"],
        dest="text_alternatives",
        help="send the benchmark's text stand-in instead of this media (OmniBench)",
    )
    p.add_argument(
        "--protocol", choices=["zerobench-paper", "sampled-k"], default="zerobench-paper"
    )
    p.add_argument("--epochs", type=int, default=5, help="sampled epochs (default 5)")
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=42, help="base seed; epoch e uses seed+e")
    p.add_argument("--max-tokens", type=int, default=16000)
    p.add_argument("--max-image-side", type=int, help="downscale images (1024 = upstream)")
    p.add_argument("--run-id", help="reuse to resume; default: a new timestamped id")
    p.add_argument("--store", default="./runs", help="./runs (default) or s3://bucket/prefix")
    p.add_argument("--s3-endpoint-url", default=os.environ.get("AWS_ENDPOINT_URL_S3"))
    p.add_argument(
        "--simulator-url",
        default=os.environ.get("EVALFLEET_SIMULATOR_URL"),
        help="where `evalfleet simulate` listens, for */sim-* models",
    )
    p.add_argument("--max-in-flight", type=int, default=256)
    p.add_argument("--workers", type=int, default=2, help="Ray worker actors")
    p.add_argument("--max-attempts", type=int, default=6)
    p.add_argument("--rpm", action="append", metavar="MODEL=N", help="requests/min limit")
    p.add_argument("--tpm", action="append", metavar="MODEL=N", help="tokens/min limit")
    p.add_argument(
        "--no-retry-errors",
        action="store_true",
        help="on resume, keep terminal errors instead of requesting them again",
    )


def request_from_args(args: argparse.Namespace):
    from flows.request import EvalRequest

    dataset_path, dataset_paths = _dataset_paths(args.dataset_path)
    fields = dict(
        models=_split_list(args.models),
        limit=args.limit,
        dataset_path=dataset_path,
        dataset_paths=dataset_paths,
        text_alternatives=args.text_alternatives or [],
        protocol=args.protocol,
        epochs=args.epochs,
        temperature=args.temperature,
        top_p=args.top_p,
        base_seed=args.seed,
        max_tokens=args.max_tokens,
        max_image_side=args.max_image_side,
        run_id=args.run_id,
        store=args.store,
        s3_endpoint_url=args.s3_endpoint_url,
        simulator_url=args.simulator_url,
        max_in_flight=args.max_in_flight,
        workers=args.workers,
        max_attempts=args.max_attempts,
        rpm=_model_limits(args.rpm, "--rpm"),
        tpm=_model_limits(args.tpm, "--tpm"),
    )
    benchmarks = _split_list(args.benchmarks)
    if benchmarks:
        fields["benchmarks"] = benchmarks
    if not fields["models"]:
        raise SystemExit("error: no model given: pass --model provider/model (e.g. openai/sim-0.5)")
    request = EvalRequest(**fields)
    return request.model_copy(update={"run_id": request.resolved_run_id()})


def cmd_run(args: argparse.Namespace) -> int:
    from flows.pipeline import run_pipeline

    request = request_from_args(args)
    run_pipeline(request, retry_errors=not args.no_retry_errors)
    return 0


def cmd_aggregate(args: argparse.Namespace) -> int:
    from flows.aggregate import aggregate
    from flows.tables import print_summary

    result = aggregate(run_id=args.run_id, store=args.store, s3_endpoint_url=args.s3_endpoint_url)
    print_summary(result)
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from flows.status import list_runs

    print(list_runs(args.store, s3_endpoint_url=args.s3_endpoint_url))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from flows.status import run_status

    table, bad = run_status(
        args.run_id, args.store, s3_endpoint_url=args.s3_endpoint_url, quarantine=args.quarantine
    )
    print(table.to_markdown(index=False))
    if bad:
        action = "moved to quarantine/" if args.quarantine else "pass --quarantine to set aside"
        print(f"{len(bad)} undecodable records count as missing ({action}):")
        for key in bad[:20]:
            print(f"  {key}")
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    from providers.simulator import cli as simulator_cli

    return simulator_cli.run(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from flows.demo import run_demo

    run_demo(store=args.store, run_id=args.run_id, s3_endpoint_url=args.s3_endpoint_url)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evalfleet",
        description="Evaluate models on hard multimodal benchmarks (Prefect + Ray).",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="evaluate, then aggregate (resumes an existing --run-id)")
    add_run_arguments(run)
    run.set_defaults(func=cmd_run)

    agg = sub.add_parser("aggregate", help="score a run and write its result tables")
    agg.add_argument("run_id")
    agg.add_argument("--store", default="./runs")
    agg.add_argument("--s3-endpoint-url", default=os.environ.get("AWS_ENDPOINT_URL_S3"))
    agg.set_defaults(func=cmd_aggregate)

    runs = sub.add_parser("runs", help="list the runs in a store with their progress")
    runs.add_argument("--store", default="./runs")
    runs.add_argument("--s3-endpoint-url", default=os.environ.get("AWS_ENDPOINT_URL_S3"))
    runs.set_defaults(func=cmd_runs)

    status = sub.add_parser("status", help="done / failed / stale / missing per model, benchmark")
    status.add_argument("run_id")
    status.add_argument("--store", default="./runs")
    status.add_argument("--s3-endpoint-url", default=os.environ.get("AWS_ENDPOINT_URL_S3"))
    status.add_argument(
        "--quarantine",
        action="store_true",
        help="move undecodable records aside so a resume requests them again",
    )
    status.set_defaults(func=cmd_status)

    sim = sub.add_parser("simulate", help="serve the provider simulator on 127.0.0.1")
    from providers.simulator import cli as simulator_cli

    simulator_cli.add_arguments(sim)
    sim.set_defaults(func=cmd_simulate)

    demo = sub.add_parser("demo", help="generate a small dataset, simulate two models, evaluate")
    demo.add_argument("--store", default="./runs")
    demo.add_argument("--run-id", default=None)
    demo.add_argument("--s3-endpoint-url", default=os.environ.get("AWS_ENDPOINT_URL_S3"))
    demo.set_defaults(func=cmd_demo)
    return parser


def one_line(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        problems = [
            f"{'.'.join(str(p) for p in err['loc']) or 'request'}: {err['msg']}"
            for err in exc.errors()
        ]
        return "invalid request: " + "; ".join(problems)
    return " ".join(str(exc).split())


def quiet_defaults() -> None:
    """No phoning home: the machines this runs on may have no internet at all."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def main(argv: Sequence[str] | None = None) -> int:
    quiet_defaults()
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except user_errors() as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "interrupted: completions stored so far are kept; re-run with the same "
            "--run-id to resume",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
