"""Each benchmark's options as flags of `evalfleet run` (`--omnibench-text-alternatives`,
`--datbench-capabilities`, ...), made from its options model, and read back into the
request's `benchmark_options`."""

from __future__ import annotations

import argparse
import functools
import typing
from typing import Any

from evalfleet.benchmarks import registry
from evalfleet.cli.field_flags import _base, help_text, schema_facts, split_list


def option_flag(benchmark: str, field: str) -> str:
    return f"--{benchmark.replace('_', '-')}-{field.replace('_', '-')}"


def _option_dest(benchmark: str, field: str) -> str:
    return f"bopt__{benchmark}__{field}"


def add_benchmark_options(parser: argparse.ArgumentParser) -> None:
    """One flag per field of each registered benchmark's options (`--omnibench-...`)."""
    for bench in registry.all_benchmarks():
        fields = bench.options_model.model_fields
        if not fields or bench.option_flags_from:
            continue
        variants = [b.name for b in registry.all_benchmarks() if b.option_flags_from == bench.name]
        title = f"{bench.name} options" + (f" (also {', '.join(variants)})" if variants else "")
        group = parser.add_argument_group(title, bench.description)
        schema = bench.options_model.model_json_schema()
        for field_name, info in fields.items():
            facts = schema_facts(_inline(schema, schema["properties"][field_name]))
            kwargs: dict[str, Any] = {"dest": _option_dest(bench.name, field_name), "default": None}
            annotation = _base(info.annotation)
            origin = typing.get_origin(annotation)
            if annotation is bool:
                kwargs.update(action="store_true", help=help_text(info.description, {}))
            elif origin is list:
                kwargs.update(action="append", metavar="VALUE[,VALUE]")
                kwargs["help"] = help_text(info.description, facts, repeatable=True)
            elif facts.get("choices"):
                kwargs.update(choices=facts["choices"], help=help_text(info.description, facts))
            else:
                kwargs.update(metavar="VALUE", help=help_text(info.description, facts))
            group.add_argument(option_flag(bench.name, field_name), **kwargs)


def _inline(schema: dict[str, Any], prop: dict[str, Any]) -> dict[str, Any]:
    """A property with its local `$ref` (an enum of its own) resolved."""
    ref = prop.get("$ref") or (prop.get("items") or {}).get("$ref")
    if not ref:
        return prop
    target = schema.get("$defs", {}).get(ref.split("/")[-1], {})
    return {**prop, **({"items": target} if "items" in prop else target)}


def benchmark_options(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Each benchmark's options from its flags; a value an option does not take is refused
    here, naming the flag and the values it takes (`--rome-tasks 'bogus' is not valid: ...`)."""
    options: dict[str, dict[str, Any]] = {}
    for bench in registry.all_benchmarks():
        flags = bench.option_flags_from or bench.name
        for field_name, info in bench.options_model.model_fields.items():
            value = getattr(args, _option_dest(flags, field_name), None)
            if value is None:
                continue
            if typing.get_origin(_base(info.annotation)) is list:
                value = split_list(value)
            options.setdefault(bench.name, {})[field_name] = value
        if bench.name in options:
            bench.options(options[bench.name], named=functools.partial(option_flag, flags))
    return _for_the_run(options, split_list(getattr(args, "request__benchmarks", None)))


def _for_the_run(options: dict[str, dict[str, Any]], chosen: list[str]) -> dict[str, Any]:
    """The options of benchmarks that share their flags (datbench and datbench_blind), kept
    for those of them the run names. Where it names none of them, all are kept: the request
    then refuses options of a benchmark it does not run."""
    groups: dict[str, list[str]] = {}
    for bench in registry.all_benchmarks():
        groups.setdefault(bench.option_flags_from or bench.name, []).append(bench.name)
    for names in groups.values():
        if any(name in chosen for name in names):
            for name in names:
                if name not in chosen:
                    options.pop(name, None)
    return options
