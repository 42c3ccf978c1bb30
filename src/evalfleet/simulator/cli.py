"""Command line: ``python -m evalfleet.simulator.cli serve --answers FILE ...``.

``add_arguments`` and ``run`` let the main ``evalfleet`` command mount the same options as
``evalfleet simulate``. Command-line flags override the config file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from evalfleet.core.settings import flag_type, number
from evalfleet.simulator.answering import AnswerKey, AnswerKeyError
from evalfleet.simulator.config import (
    FAULT_KINDS,
    ConfigError,
    SimulatorConfig,
    config_from_dict,
    load_config,
)

if TYPE_CHECKING:  # the server (aiohttp, uvloop) loads only when the simulator serves
    from evalfleet.simulator.server import SimulatorServer


def _bounded(kind: type, low: float, high: float) -> Any:
    """A flag's type: a number in [low, high], else one line with the range."""
    return flag_type(number(kind, low, high))


DAY_MS = 86_400_000
SHARE = _bounded(float, 0, 1)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--answers", metavar="FILE", help="answer key (JSONL)")
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="simulator config (YAML or JSON; - reads JSON from standard input)",
    )
    parser.add_argument("--host", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=_bounded(int, 0, 65_535), help="port (default 8765; 0 picks a free one)"
    )
    parser.add_argument("--log", metavar="FILE", help="append one JSON line per request here")
    parser.add_argument(
        "--latency-ms", type=_bounded(float, 0, DAY_MS), help="fixed (or mean) latency"
    )
    parser.add_argument(
        "--latency-jitter-ms",
        type=_bounded(float, 0, DAY_MS),
        help="uniform jitter around the mean",
    )
    parser.add_argument("--rpm", type=_bounded(int, 1, 10**9), help="requests per minute per model")
    parser.add_argument("--tpm", type=_bounded(int, 1, 10**12), help="tokens per minute per model")
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="KIND=RATE",
        help=f"fault rate, repeatable; KIND is one of {', '.join(FAULT_KINDS)}",
    )
    parser.add_argument(
        "--fail-first-n",
        type=_bounded(int, 0, 1_000_000),
        help="fail the first N attempts of a request",
    )
    parser.add_argument("--fail-first-status", type=int, choices=[429, 500, 503, 529])
    parser.add_argument(
        "--hang-s", type=_bounded(float, 0.001, 86_400), help="how long a hang lasts"
    )
    parser.add_argument(
        "--seed",
        type=_bounded(int, -(2**63), 2**63 - 1),
        help="seed of fault draws and latency jitter",
    )
    parser.add_argument("--models", help="comma-separated model names for the list routes")
    parser.add_argument(
        "--reasoning-tokens",
        type=_bounded(int, 0, 10_000_000),
        help="reasoning tokens of think models",
    )
    parser.add_argument(
        "--unformatted-rate",
        type=SHARE,
        help="share of answers given in prose without the asked-for format (0-1)",
    )
    parser.add_argument(
        "--batch-completion-s",
        type=_bounded(float, 0, 30 * 86_400),
        help="seconds from a batch's create to its completion (0: done at the first poll)",
    )
    parser.add_argument(
        "--batch-line-failure-rate",
        type=SHARE,
        help="share of batch lines answered with a 500-class error (0-1)",
    )
    parser.add_argument(
        "--batch-state",
        metavar="FILE",
        help="keep files and batches in this JSON file, so a restarted simulator knows them",
    )
    parser.add_argument("--no-auth", action="store_true", help="accept requests without a key")


def build_config(args: argparse.Namespace) -> SimulatorConfig:
    """The config file (or defaults) with the command-line flags applied on top."""
    if args.config == "-":  # from the process that starts it: no file left behind
        config = _config_from_stdin()
    else:
        config = load_config(args.config) if args.config else SimulatorConfig()
    data: dict[str, Any] = config.model_dump(exclude_unset=False)
    for flag, name in (
        ("host", "host"),
        ("port", "port"),
        ("rpm", "requests_per_minute"),
        ("tpm", "tokens_per_minute"),
        ("seed", "seed"),
        ("reasoning_tokens", "reasoning_tokens"),
        ("unformatted_rate", "unformatted_rate"),
    ):
        if getattr(args, flag) is not None:
            data[name] = getattr(args, flag)
    if args.latency_ms is not None:
        data["latency"]["ms"] = args.latency_ms
    if args.latency_jitter_ms is not None:
        data["latency"].update(distribution="uniform", jitter_ms=args.latency_jitter_ms)
    for flag, name in (
        ("fail_first_n", "fail_first_n"),
        ("fail_first_status", "fail_first_status"),
        ("hang_s", "hang_s"),
    ):
        if getattr(args, flag) is not None:
            data["faults"][name] = getattr(args, flag)
    for item in args.fault:
        kind, sep, rate = item.partition("=")
        if not sep or kind not in FAULT_KINDS:
            raise ConfigError(f"--fault {item!r}: expected KIND=RATE with KIND in {FAULT_KINDS}")
        try:
            data["faults"][kind] = float(rate)
        except ValueError:
            raise ConfigError(f"--fault {item!r}: RATE must be a number") from None
    for flag, name in (
        ("batch_completion_s", "completion_s"),
        ("batch_line_failure_rate", "line_failure_rate"),
        ("batch_state", "state_path"),
    ):
        if getattr(args, flag) is not None:
            data["batch"][name] = getattr(args, flag)
    if args.models:
        data["models"] = [m.strip() for m in args.models.split(",") if m.strip()]
    if args.no_auth:
        data["require_auth"] = False
    return config_from_dict(data, source="command-line options")


def _config_from_stdin() -> SimulatorConfig:
    try:
        data = json.loads(sys.stdin.read() or "{}")
    except ValueError as err:
        raise ConfigError(f"cannot parse the config on standard input: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError("the config on standard input must be a JSON object")
    return config_from_dict(data, source="config on standard input")


async def _serve(server: SimulatorServer) -> None:
    url = await server.start()
    print(f"listening on {url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.stop()


def run(args: argparse.Namespace) -> int:
    import uvloop

    from evalfleet.simulator.server import SimulatorServer

    try:
        config = build_config(args)
        key = AnswerKey.load(args.answers) if args.answers else AnswerKey()
    except (ConfigError, AnswerKeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        server = SimulatorServer(config, key, args.log)
    except OSError as err:
        print(f"error: cannot open log {args.log}: {err.strerror or err}", file=sys.stderr)
        return 2
    try:
        uvloop.run(_serve(server))  # the simulator must not be the bottleneck of a benchmark
    except OSError as err:
        print(f"error: cannot serve on {config.host}:{config.port}: {err}", file=sys.stderr)
        return 1
    return 0


class _OneLineParser(argparse.ArgumentParser):
    """A malformed flag is one line (`error: argument --latency-ms: takes ...`), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = _OneLineParser(
        prog="python -m evalfleet.simulator.cli",
        description="Provider simulator: OpenAI, Anthropic and Gemini protocols on one port.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    add_arguments(commands.add_parser("serve", help="run the simulator until interrupted"))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0), or a malformed flag, told already
        return int(exc.code or 0)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
