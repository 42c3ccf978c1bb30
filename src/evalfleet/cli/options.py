"""The command line's run options, generated from the request model (`engine.run.request`).

Each field of `EvalRequest` is a flag: `--field-name`, or the names its `Flag` gives. Its help
is the field's description with the range, choices and default of the request's JSON schema
(what the Prefect UI form shows), so `--help` and the form say the same thing. Flags are
left unset by default: the request model fills in its own defaults. A few fields are set
together by one flag (`--dataset-path [BENCHMARK=]PATH`, `--base-url [MODEL=]URL`,
`--batch [MODEL]`), and each benchmark's options get `--BENCHMARK-OPTION` flags.
"""

from __future__ import annotations

import argparse
import functools
import typing
from typing import Any

from evalfleet.benchmarks import registry
from evalfleet.cli.benchmark_flags import add_benchmark_options, benchmark_options
from evalfleet.cli.field_flags import _base, help_text, schema_facts, split_list
from evalfleet.core import settings
from evalfleet.core.settings import flag_type
from evalfleet.core.types import UsageError
from evalfleet.engine.run.request import EndpointSpec, EvalRequest, Flag
from evalfleet.storage import open_store
from evalfleet.storage.base import Store

PREFIX = "request__"  # argparse dest of a request field
UNSET = None


def _flag(info) -> Flag:
    return next((m for m in info.metadata if isinstance(m, Flag)), Flag())


def flag_names(name: str, info) -> tuple[str, ...]:
    return _flag(info).names or ("--" + name.replace("_", "-"),)


def number_kind(base: type, facts: dict[str, Any]) -> settings.Kind:
    """What a numeric field takes, from its schema's bounds: its flag refuses the rest in
    one line with the range (`--max-in-flight takes a whole number from 1 to 65536, not
    '1e23'`), before the request is made."""
    above = "exclusiveMinimum" in facts
    low = facts.get("exclusiveMinimum", facts.get("minimum"))
    high = facts.get("maximum", facts.get("exclusiveMaximum"))
    return settings.number(base, low, high, above=above)


@functools.cache
def request_schema() -> dict[str, Any]:
    """The request's JSON schema (a few hundred milliseconds to make: made once)."""
    return EvalRequest.model_json_schema()


def field_flags() -> dict[str, str]:
    """Each request field that has a flag of its own, by its long flag: a refused value is
    told as the flag that gave it (`--max-cost-usd`, not `max_cost_usd`)."""
    return {
        name: next(n for n in flag_names(name, info) if n.startswith("--"))
        for name, info in EvalRequest.model_fields.items()
        if not _flag(info).composite
    }


def add_request_options(parser: argparse.ArgumentParser) -> None:
    """One flag per request field (composite ones as one flag each), then each benchmark's."""
    schema = request_schema()["properties"]
    fields = EvalRequest.model_fields
    for name, info in fields.items():
        flag = _flag(info)
        if flag.composite:
            continue
        facts = schema_facts(schema[name])
        base = _base(info.annotation)
        origin = typing.get_origin(base)
        kwargs: dict[str, Any] = {"dest": PREFIX + name, "default": UNSET}
        if base is bool:
            kwargs["action"] = "store_false" if facts.get("default") else "store_true"
            kwargs["help"] = help_text(flag.help or info.description, {})
            if facts.get("default") and not flag.help:
                raise TypeError(f"{name}: a flag turning it off needs a Flag(help=...) of its own")
        elif origin is list:
            kwargs.update(action="append", metavar=flag.metavar or "VALUE")
            kwargs["help"] = help_text(info.description, facts, repeatable=True)
        elif origin is dict:
            kwargs.update(action="append", metavar=flag.metavar or "KEY=VALUE")
            values = schema_facts(schema[name].get("additionalProperties") or {})
            described: str | None
            if values.keys() & {"minimum", "maximum"}:
                described = f"{info.description}, N {number_kind(int, values).expect}"
            else:
                described = info.description
            kwargs["help"] = help_text(described, facts) + " (repeatable)"
        else:
            if facts.get("choices"):
                kwargs["choices"] = facts["choices"]
            elif base in (int, float) and facts.keys() & {"maximum", "exclusiveMaximum"}:
                kwargs["type"] = flag_type(number_kind(base, facts))
            elif base in (int, float):  # no upper bound (a cost cap): the model says why
                kwargs["type"] = base
            kwargs["metavar"] = None if "choices" in kwargs else (flag.metavar or "VALUE")
            kwargs["help"] = help_text(info.description, facts)
        parser.add_argument(*flag_names(name, info), **kwargs)
    _add_composite_options(parser, fields, schema)
    add_benchmark_options(parser)


def _add_composite_options(parser: argparse.ArgumentParser, fields, schema) -> None:
    def described(name: str) -> str:
        return fields[name].description

    parser.add_argument(
        "--dataset-path",
        action="append",
        dest="dataset_path",
        metavar="[BENCHMARK=]PATH",
        help=f"{described('dataset_path')}; BENCHMARK=PATH: {described('dataset_paths')} "
        "(repeatable)",
    )
    endpoint = EndpointSpec.model_fields
    for flag, field_name, metavar in (
        ("--base-url", "base_url", "[MODEL=]URL"),
        ("--api-key-env", "api_key_env", "[MODEL=]VAR"),
        ("--modalities", "modalities", "[MODEL=]LIST"),
    ):
        parser.add_argument(
            flag,
            action="append",
            dest=field_name,
            metavar=metavar,
            help=f"for openai-compatible/NAME models ({described('endpoints')}): "
            f"{endpoint[field_name].description}; MODEL=VALUE for one model (repeatable)",
        )
    parser.add_argument(
        "--batch",
        action="append",
        nargs="?",
        const="*",
        metavar="MODEL",
        help=f"{described('batch')}; with MODEL: {described('batch_models')} (repeatable)",
    )


def request_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The request fields the command line gave (left-out flags are not fields here)."""
    fields: dict[str, Any] = {}
    for name, info in EvalRequest.model_fields.items():
        value = getattr(args, PREFIX + name, UNSET)
        if value is UNSET:
            continue
        origin = typing.get_origin(_base(info.annotation))
        if origin is list:
            value = split_list(value)
        elif origin is dict:
            prop = request_schema()["properties"][name]
            bounds = schema_facts(prop.get("additionalProperties") or {})
            value = model_limits(value, flag_names(name, info)[0], number_kind(int, bounds))
        fields[name] = value
    default_path, per_benchmark = _dataset_paths(args.dataset_path)
    if default_path is not None:
        fields["dataset_path"] = default_path
    if per_benchmark:
        fields["dataset_paths"] = per_benchmark
    options = benchmark_options(args)
    if options:
        fields["benchmark_options"] = options
    if args.batch:
        fields["batch"] = "*" in args.batch
        fields["batch_models"] = [m for m in args.batch if m != "*"]
    models = [*fields.get("models", []), fields.get("judge_model") or ""]
    endpoints = _endpoints(args, models)
    if endpoints:
        fields["endpoints"] = endpoints
    return fields


def model_limits(
    values: list[str] | None, flag: str, kind: settings.Kind | None = None
) -> dict[str, int]:
    """`MODEL=N` pairs; `kind` bounds N (a value out of it is refused with the range)."""
    limits: dict[str, int] = {}
    for value in values or []:
        model, sep, number = value.rpartition("=")
        if not sep or not model or not number.isdigit():
            raise UsageError(f"{flag} takes MODEL=N, e.g. {flag} openai/gpt-4o=500 (got {value!r})")
        if kind is not None:
            try:
                kind.read(number)
            except ValueError:
                raise UsageError(
                    f"{flag} {model}=N takes N {kind.expect}, not {number!r}"
                ) from None
        limits[model] = int(number)
    return limits


def _dataset_paths(values: list[str] | None) -> tuple[str | None, dict[str, str]]:
    """`PATH` applies to every benchmark; `BENCHMARK=PATH` to one."""
    default: str | None = None
    per_benchmark: dict[str, str] = {}
    for value in values or []:
        name, sep, path = value.partition("=")
        if sep and name in registry.names():
            per_benchmark[name] = path
        else:
            default = value
    return default, per_benchmark


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
            "modalities": split_list([kinds[model]]) if model in kinds else None,
        }
        for model, url in urls.items()
    }


# --- the store -------------------------------------------------------------------------------


def add_store_options(parser: argparse.ArgumentParser) -> None:
    """--store and --s3-endpoint-url, described as the request describes them."""
    fields = EvalRequest.model_fields
    parser.add_argument("--store", metavar="URL", help=fields["store"].description)
    parser.add_argument(
        "--s3-endpoint-url", metavar="URL", help=fields["s3_endpoint_url"].description
    )


def store_from(args: argparse.Namespace) -> Store:
    """The store the command's --store names (else $EVALFLEET_STORE, else ./runs), opened."""
    return open_store(args.store, s3_endpoint_url=args.s3_endpoint_url)


# --- the temporary Prefect server's history --------------------------------------------------


def add_history_option(parser: argparse.ArgumentParser) -> None:
    """--keep-flow-runs: how much history the temporary Prefect server keeps (read as
    $EVALFLEET_KEEP_FLOW_RUNS is)."""
    kept = settings.KEEP_FLOW_RUNS
    parser.add_argument(
        "--keep-flow-runs",
        metavar="N",
        type=flag_type(kept.kind),
        help="when no stack runs, the command's own Prefect server keeps the newest N flow "
        "runs in $EVALFLEET_HOME/prefect-runs.db and deletes older ones "
        f"({kept.kind.expect}; default ${kept.name}, else {kept.default})",
    )


def kept_flow_runs(args: argparse.Namespace) -> int | None:
    """--keep-flow-runs (None: the environment's or the default)."""
    return getattr(args, "keep_flow_runs", None)
