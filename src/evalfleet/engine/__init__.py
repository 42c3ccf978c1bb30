"""The run without Prefect: a request resolved once into a run, planned, generated on Ray,
checkpointed, scored and aggregated. The Prefect flows (`flows/`) and the command line call
these same functions."""
