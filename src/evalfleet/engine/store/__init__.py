"""A run's files in the store: its manifest and plans, its heartbeat, its results read back,
and what a damaged file is named with."""
