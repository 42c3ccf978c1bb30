"""Serve evalfleet's flows as Prefect deployments: on demand from the UI, and on a schedule.

    python deployments/serve.py            # against PREFECT_API_URL (or an ephemeral server)

- `evaluate-and-aggregate/on-demand`: the whole job; the UI renders its request as a form.
- `aggregate/on-demand`: re-score a run and rewrite its tables.
- `reevaluate/nightly`: look for new models every night and evaluate them.

A crashed or failed flow run of these deployments can be retried from the UI (or with
`prefect flow-run retry ID`): the run resumes from the store and requests nothing twice.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

NIGHTLY_CRON = os.environ.get("EVALFLEET_REEVALUATE_CRON", "0 3 * * *")


def build_deployments() -> list:
    from flows.aggregate import aggregate
    from flows.pipeline import evaluate_and_aggregate
    from flows.reevaluate import ReevaluateRequest, reevaluate

    return [
        evaluate_and_aggregate.to_deployment(
            name="on-demand",
            description="Evaluate models on benchmarks, then aggregate (resumes a run id).",
            tags=["evalfleet"],
        ),
        aggregate.to_deployment(
            name="on-demand",
            description="Score a run's stored completions and write its tables.",
            tags=["evalfleet"],
        ),
        reevaluate.to_deployment(
            name="nightly",
            cron=NIGHTLY_CRON,
            parameters={"request": ReevaluateRequest().model_dump(mode="json")},
            description="Evaluate models the providers list that were not evaluated before.",
            tags=["evalfleet", "scheduled"],
        ),
    ]


def main() -> None:
    from prefect import serve

    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    serve(*build_deployments())


if __name__ == "__main__":
    main()
