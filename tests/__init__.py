"""The evalfleet test suite. A package, so that `tests.support.helpers` is ours even though a
dependency (latex2sympy2) installs a top-level `tests` package of its own."""
