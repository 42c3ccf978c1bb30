"""The run forms the Prefect UI draws from each served deployment's parameter schema: no
optional field offers a `null` branch (drawn as a tab saying 'Property is type "None"'), the
per-benchmark dataset paths are one text field per benchmark, and what a form leaves empty
(or an API caller sends as null) is still accepted by the server's validation and by the
flow. The schemas are Prefect's own (`to_deployment`), validated with Prefect's validator."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from evalfleet.benchmarks import registry

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def deployments() -> dict[str, object]:
    sys.path.insert(0, str(REPO / "deployments"))
    try:
        from serve import build_deployments
    finally:
        sys.path.remove(str(REPO / "deployments"))
    return {d.name: d for d in build_deployments()}


def test_deployments_are_named_for_what_they_do(deployments):
    """The Deployments page lists names alone that read without the flow column."""
    assert {name: d.flow_name for name, d in deployments.items()} == {
        "evaluate": "evaluate-and-aggregate",
        "aggregate": "aggregate",
        "judge": "judge",
        "leaderboard": "leaderboard",
        "limits": "limits",
        "reevaluate": "reevaluate",
        "rerun-ranked": "reevaluate",
        "poll-batches": "poll-batches",
    }


def test_no_form_offers_a_null_branch(deployments):
    for name, deployment in deployments.items():
        text = json.dumps(deployment._parameter_openapi_schema.model_dump())
        assert '"null"' not in text, name
        assert '"default": null' not in text, name


def test_optional_fields_are_plain_inputs_of_their_type(deployments):
    form = deployments["evaluate"]._parameter_openapi_schema.model_dump()
    fields = form["definitions"]["EvalRequest"]["properties"]
    assert fields["limit"] == {
        "description": "first N samples of each benchmark (of each capability for DatBench), in "
        "dataset order",
        "maximum": 100_000_000,
        "minimum": 1,
        "title": "Limit",
        "type": "integer",
    }
    assert fields["protocol"]["enum"] == ["zerobench-paper", "sampled-k", "greedy"]
    assert fields["protocol"]["type"] == "string" and "default" not in fields["protocol"]
    assert fields["run_id"]["pattern"] == "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
    assert fields["max_cost_usd"]["type"] == "number"
    options = fields["benchmark_options"]["properties"]["datbench"]["properties"]
    assert options["subset"]["type"] == "string" and "default" not in options["subset"]
    judge = deployments["judge"]._parameter_openapi_schema.model_dump()["properties"]
    assert judge["store"]["type"] == "string" and judge["store"]["default"] == ""


def test_dataset_paths_are_one_text_field_per_benchmark(deployments):
    form = deployments["evaluate"]._parameter_openapi_schema.model_dump()
    paths = form["definitions"]["EvalRequest"]["properties"]["dataset_paths"]
    assert paths["type"] == "object" and paths["additionalProperties"] is False
    assert list(paths["properties"]) == registry.names()
    assert {p["type"] for p in paths["properties"].values()} == {"string"}


def test_what_a_form_leaves_empty_is_valid(deployments):
    """Prefect's server validation (as on a flow run's creation) takes a form that omits the
    optional fields, and an API caller's explicit nulls; the request and flows read them."""
    from prefect.utilities.schema_tools import validate

    from evalfleet.engine.run.request import EvalRequest
    from evalfleet.flows.aggregate import aggregate

    form = deployments["evaluate"]._parameter_openapi_schema.model_dump()
    omitted = {
        "request": {
            "models": ["openai/sim-0.3"],
            "benchmarks": ["rome"],
            "dataset_paths": {"rome": "/data"},
        }
    }
    nulls = {"request": {"models": ["openai/sim-0.3"], "limit": None, "run_id": None}}
    assert validate(omitted, form) == []
    assert validate(nulls, form) == []
    below = {"request": {"models": ["openai/sim-0.3"], "limit": 0}}
    assert [(e.message, e.json_path) for e in validate(below, form)] == [
        ("0 is less than the minimum of 1", "$.request.limit")
    ]
    assert EvalRequest(**nulls["request"]).limit is None
    assert EvalRequest(**omitted["request"]).dataset_path_for("rome") == "/data"
    assert aggregate.validate_parameters({"run_id": "r", "store": None}) == {
        "run_id": "r",
        "store": "",
        "s3_endpoint_url": "",
    }


def test_each_deployments_parameters_pass_the_servers_check_at_creation(deployments):
    """The server checks a new deployment's parameters against its form without reading
    unset optional fields as nullable (unlike a flow run's): none of ours holds a null."""
    from prefect._internal.schemas.validators import validate_values_conform_to_schema

    for deployment in deployments.values():
        schema = deployment._parameter_openapi_schema.model_dump()
        validate_values_conform_to_schema(deployment.parameters, schema, ignore_required=True)
    assert deployments["reevaluate"].parameters["request"]["benchmarks"]
    assert "simulator_url" not in deployments["reevaluate"].parameters["request"]
