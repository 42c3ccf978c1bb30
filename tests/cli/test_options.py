"""The run options are the request model's fields: the parser and the request's JSON schema
(what the Prefect UI form renders) agree on every flag, default, range and choice list, and
a command line builds the request the form would."""

from __future__ import annotations

import argparse

import pytest
from pydantic import ValidationError

from evalfleet.benchmarks import registry
from evalfleet.cli.field_flags import schema_facts
from evalfleet.cli.main import build_parser
from evalfleet.cli.options import PREFIX, flag_names
from evalfleet.cli.run import request_from_args
from evalfleet.engine.run.request import EvalRequest, Flag
from evalfleet.storage import store_url


def run_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["run"]


def own_flag_fields() -> dict[str, object]:
    return {
        name: info
        for name, info in EvalRequest.model_fields.items()
        if not any(getattr(m, "composite", False) for m in info.metadata)
    }


def test_every_field_has_its_flag_and_the_flags_agree_with_the_schema():
    schema = EvalRequest.model_json_schema()["properties"]
    actions = {a.dest: a for a in run_parser()._actions}
    checked = 0
    for name, info in own_flag_fields().items():
        action = actions[PREFIX + name]
        facts = schema_facts(schema[name])
        assert action.option_strings[0] == flag_names(name, info)[0]
        assert action.default is None  # left out: the request's own default applies
        own = next((m.help for m in info.metadata if isinstance(m, Flag) and m.help), None)
        assert (own or info.description) in action.help.replace("%%", "%"), name
        if isinstance(action, argparse._AppendAction) and facts.get("choices"):
            assert f"one or more of {', '.join(facts['choices'])}" in action.help, name
        elif facts.get("choices"):
            assert list(action.choices) == facts["choices"], name
        else:
            assert action.choices is None, name
        default = facts.get("default")
        if default not in (None, [], {}, False, True):
            shown = ", ".join(default) if isinstance(default, list) else str(default)
            assert f"(default: {shown})" in action.help, name
        for key, sign in (("minimum", ">="), ("maximum", "<="), ("exclusiveMinimum", ">")):
            if key in facts:
                assert f"{sign} {facts[key]}" in action.help, (name, key)
        checked += 1
    assert checked == 30  # every field but the composite ones (dataset paths, endpoints, ...)


def test_a_flag_that_turns_a_field_off_says_what_the_flag_does():
    """`--no-wait` read "wait for the batch jobs...; off: submit and return": the field's
    meaning, backwards for the flag. Every generated flag for a field on by default has a
    help of its own."""
    actions = {a.dest: a for a in run_parser()._actions}
    negated = {
        name: actions[PREFIX + name]
        for name, info in own_flag_fields().items()
        if info.annotation is bool and info.default is True
    }
    assert list(negated) == ["batch_wait"]
    action = negated["batch_wait"]
    assert (action.option_strings, action.const) == (["--no-wait"], False)
    assert action.help == (
        "submit the batch jobs and return at once; `evalfleet batches poll` (or the "
        "poll-batches deployment) collects them and writes the tables"
    )


def test_the_numbers_the_help_shows_are_the_requests_defaults():
    """Spelled out for the fields people set most: one definition, two views."""
    actions = {a.dest: a for a in run_parser()._actions}
    expected = {
        "temperature": "(default: 0.7)",
        "top_p": "(default: 0.95)",
        "max_tokens": "(default: 16000)",
        "workers": "(default: 2)",
        "max_in_flight": "(default: 256)",
        "base_seed": "(default: 42)",
        "max_attempts": "(default: 6)",
        "batch_retry": "(default: batch)",
    }
    for name, text in expected.items():
        assert text in actions[PREFIX + name].help, name
        assert text == f"(default: {EvalRequest.model_fields[name].default})"
    assert actions[PREFIX + "benchmarks"].help.endswith(
        f"(default: {', '.join(registry.default_names())})"
    )
    assert actions[PREFIX + "protocol"].choices == ["zerobench-paper", "sampled-k", "greedy"]
    assert actions[PREFIX + "batch_retry"].choices == ["batch", "online"]


def test_left_out_flags_give_the_request_its_own_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("EVALFLEET_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["run", "-m", "openai/sim-0.5", "--run-id", "r1"])
    given = request_from_args(args)
    plain = EvalRequest(models=["openai/sim-0.5"], run_id="r1")
    assert given == plain
    assert given.store == str(tmp_path / "runs")


def test_each_flag_reaches_its_field():
    args = build_parser().parse_args(
        ["run", "-m", "openai/sim-0.5,anthropic/sim-0.6", "-b", "omnibench", "--limit", "3"]
        + ["--temperature", "0.2", "--top-p", "0.5", "--seed", "7", "--max-tokens", "99"]
        + ["--epochs", "2", "--protocol", "greedy", "--run-id", "x", "--extend"]
        + ["--rpm", "openai/sim-0.5=60", "--tpm", "openai/sim-0.5=6000", "--no-wait"]
        + ["--batch", "--batch-retry", "online", "--max-retry-seconds", "30"]
        + ["--omnibench-text-alternatives", "audio", "--dataset-path", "omnibench=/d"]
    )
    request = request_from_args(args)
    assert request.models == ["openai/sim-0.5", "anthropic/sim-0.6"]
    assert (request.benchmarks, request.limit, request.epochs) == (["omnibench"], 3, 2)
    assert (request.temperature, request.top_p, request.base_seed) == (0.2, 0.5, 7)
    assert (request.max_tokens, request.protocol, request.run_id) == (99, "greedy", "x")
    assert request.extend is True and request.batch_wait is False and request.batch is True
    assert (request.rpm, request.tpm) == ({"openai/sim-0.5": 60}, {"openai/sim-0.5": 6000})
    assert (request.batch_retry, request.max_retry_seconds) == ("online", 30.0)
    assert request.benchmark_options == {"omnibench": {"text_alternatives": ["audio"]}}
    assert request.dataset_paths == {"omnibench": "/d"} and request.dataset_path is None


@pytest.mark.parametrize("value", ["3", "-0.1"])
def test_the_form_and_the_command_line_refuse_the_same_out_of_range_value(value, capsys):
    from evalfleet.cli.main import main

    assert main(["run", "-m", "openai/sim-0.5", "--temperature", value, "--estimate"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: --temperature takes a number from 0 to 2, not '{value}' "
        "(`evalfleet run --help` lists the options)"
    )
    bound = "less than or equal to 2" if value == "3" else "greater than or equal to 0"
    with pytest.raises(ValidationError, match=bound):  # the form's bounds are the flag's
        EvalRequest(models=["openai/sim-0.5"], temperature=float(value))


def test_one_store_resolution(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVALFLEET_STORE", raising=False)
    assert store_url() == str(tmp_path / "runs")
    assert store_url("here") == str(tmp_path / "here")
    monkeypatch.setenv("EVALFLEET_STORE", str(tmp_path / "team"))
    assert store_url() == str(tmp_path / "team")
    assert store_url("s3://bucket/p") == "s3://bucket/p"
    assert EvalRequest(models=["openai/sim-0.5"]).store == str(tmp_path / "team")
