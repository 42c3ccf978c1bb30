"""The `evalfleet` command line, one module per command group."""
