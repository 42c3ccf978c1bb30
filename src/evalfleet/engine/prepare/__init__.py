"""Before any request: read the data, resolve a request into a run (every check that can
fail before money is spent), plan what is left to ask, and price it."""
