"""`evalfleet run`: check everything up front, evaluate, then aggregate, as one Prefect flow."""

from __future__ import annotations

from typing import Any

from prefect import flow

from flows import plan as planning
from flows.aggregate import aggregate
from flows.evaluate import evaluate
from flows.request import EvalRequest
from flows.tables import print_summary
from storage import open_store


@flow(name="evaluate-and-aggregate", log_prints=True)
def evaluate_and_aggregate(request: EvalRequest, retry_errors: bool = True) -> dict[str, Any]:
    """The whole job: the flow a deployment or the UI starts."""
    evaluated = evaluate(request, retry_errors=retry_errors)
    return aggregate(
        run_id=evaluated["run_id"], store=request.store, s3_endpoint_url=request.s3_endpoint_url
    )


def run_pipeline(request: EvalRequest, *, retry_errors: bool = True) -> dict[str, Any]:
    """Fail fast with one line on bad input (before Prefect or Ray start), then run the flow."""
    store = open_store(request.store, s3_endpoint_url=request.s3_endpoint_url)
    planning.precheck(request, store)
    result = evaluate_and_aggregate(request, retry_errors=retry_errors)
    print_summary(result)
    return result
