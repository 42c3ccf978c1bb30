"""The Prefect flows: `evaluate`, `aggregate`, `evaluate-and-aggregate`, `reevaluate`,
`leaderboard` and `poll-batches`, each a thin wrapper over the engine (`engine/`) and the
reports (`reports/`). The work they wrap runs the same without Prefect."""
