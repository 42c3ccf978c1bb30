"""The Prefect flows: `evaluate`, `aggregate`, `evaluate-and-aggregate`, `judge`,
`reevaluate`, `leaderboard` and `poll-batches`, each a thin wrapper over the engine
(`engine/`) and the reports (`reports/`); `control_plane` lends the engine a flow run's id,
progress and logs, and `in_process` runs a flow in the command's own process. The work they
wrap runs the same without Prefect."""
