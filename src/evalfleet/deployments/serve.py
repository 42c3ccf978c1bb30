"""Serve evalfleet's flows as Prefect deployments: on demand from the UI, and on a schedule.

    python deployments/serve.py            # against PREFECT_API_URL (or an ephemeral server)

- `evaluate-and-aggregate/evaluate`: the whole job; the UI renders its request as a form.
- `aggregate/aggregate`: re-score a run and rewrite its tables.
- `judge/judge`: judge a run's stored answers with another judge model.
- `leaderboard/leaderboard`: rebuild the store's leaderboard (aggregate and reevaluate do too).
- `reevaluate/reevaluate`: look for new models every night and evaluate them.
- `reevaluate/rerun-ranked`: every Monday (schedule off until switched on), re-run each
  ranked model on its item set under a dated run id, then `drift` and its webhook
  (docs/weekly.md).
- `poll-batches/poll-batches`: collect the batch jobs of `--batch` runs that ended, send
  what follows them, aggregate the runs they complete (EVALFLEET_BATCH_POLL_EVERY_S, 300).

A crashed or failed flow run of these deployments can be retried from the UI (or with
`prefect flow-run retry ID`): the run resumes from the store and requests nothing twice.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalfleet.core import settings  # noqa: E402 - after the checkout is on the path


def reevaluate_schedule() -> dict:
    """EVALFLEET_REEVALUATE_EVERY_S (seconds) if set, else EVALFLEET_REEVALUATE_CRON."""
    every = settings.REEVALUATE_EVERY_S.get()
    return {"interval": every} if every else {"cron": settings.REEVALUATE_CRON.get()}


def reevaluate_request(model):
    """The reevaluation's parameters: EVALFLEET_REEVALUATE_REQUEST names a JSON or YAML file
    of them (which providers, patterns, benchmarks, store, ...); else the defaults."""
    import yaml

    path = settings.REEVALUATE_REQUEST.get()
    if not path:
        return model()
    return model(**(yaml.safe_load(Path(path).read_text()) or {}))


def reevaluate_parameters(model) -> dict:
    return reevaluate_request(model).model_dump(mode="json", exclude_none=True)


RANKED_CRON = "0 4 * * 1"  # Mondays 04:00 UTC, after the nightly reevaluation
RANKED_DESCRIPTION = (
    "Re-run every ranked model on its item set, then drift and its webhook (weekly, off "
    "by default)."
)


def ranked_parameters(model) -> dict:
    """The weekly re-run's parameters: the reevaluation's, in mode "ranked"."""
    asked = reevaluate_request(model).model_copy(update={"mode": "ranked"})
    return asked.model_dump(mode="json", exclude_none=True)


def build_deployments() -> list:
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
    from prefect.deployments.runner import EntrypointType
    from prefect.schedules import Cron

    from evalfleet.engine.reevaluate import ReevaluateRequest
    from evalfleet.flows.aggregate import aggregate
    from evalfleet.flows.judge import judge
    from evalfleet.flows.leaderboard import leaderboard
    from evalfleet.flows.limits import limits
    from evalfleet.flows.pipeline import evaluate_and_aggregate
    from evalfleet.flows.poll_batches import poll_batches
    from evalfleet.flows.reevaluate import reevaluate

    # entrypoints are module paths (evalfleet.flows.pipeline.evaluate_and_aggregate): found in
    # a checkout and in an installed wheel alike, whatever the working directory
    return [
        evaluate_and_aggregate.to_deployment(
            name="evaluate",
            description="Evaluate models on benchmarks, then aggregate (resumes a run id).",
            tags=["evalfleet"],
            entrypoint_type=EntrypointType.MODULE_PATH,
        ),
        aggregate.to_deployment(
            name="aggregate",
            description="Score a run's stored completions and write its tables.",
            tags=["evalfleet"],
            entrypoint_type=EntrypointType.MODULE_PATH,
        ),
        judge.to_deployment(
            name="judge",
            description="Judge a run's stored answers with another judge model.",
            tags=["evalfleet"],
            entrypoint_type=EntrypointType.MODULE_PATH,
        ),
        leaderboard.to_deployment(
            name="leaderboard",
            description="Every run of a store side by side: tables and plots.",
            tags=["evalfleet"],
            entrypoint_type=EntrypointType.MODULE_PATH,
        ),
        limits.to_deployment(
            name="limits",
            description="Retune a live run's rate limits and calls in flight (within seconds).",
            tags=["evalfleet"],
            entrypoint_type=EntrypointType.MODULE_PATH,
        ),
        reevaluate.to_deployment(
            name="reevaluate",
            # the fields left unset are left out: the server checks a deployment's parameters
            # against its form, whose optional fields take no null
            parameters={"request": reevaluate_parameters(ReevaluateRequest)},
            description="Evaluate models the providers list that were not evaluated before.",
            tags=["evalfleet", "scheduled"],
            entrypoint_type=EntrypointType.MODULE_PATH,
            # one at a time: two would both find the same new model and pay for it twice
            concurrency_limit=ConcurrencyLimitConfig(
                limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW
            ),
            **reevaluate_schedule(),
        ),
        reevaluate.to_deployment(
            name="rerun-ranked",
            parameters={"request": ranked_parameters(ReevaluateRequest)},
            description=RANKED_DESCRIPTION,
            tags=["evalfleet", "scheduled"],
            entrypoint_type=EntrypointType.MODULE_PATH,
            concurrency_limit=ConcurrencyLimitConfig(
                limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW
            ),
            # off until switched on in the UI (or `prefect deployment schedule resume`)
            schedules=[Cron(RANKED_CRON, active=False)],
        ),
        poll_batches.to_deployment(
            name="poll-batches",
            description="Collect ended batch jobs, send what follows, aggregate completed runs.",
            tags=["evalfleet", "scheduled"],
            entrypoint_type=EntrypointType.MODULE_PATH,
            interval=settings.BATCH_POLL_EVERY_S.get(),
            # one at a time: two would collect the same job
            concurrency_limit=ConcurrencyLimitConfig(
                limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW
            ),
        ),
    ]


def main() -> None:
    try:
        settings.check_all()  # one line, before a deployment is served with a bad setting
    except settings.SettingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    from prefect import serve

    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    serve(*build_deployments())


if __name__ == "__main__":
    main()
