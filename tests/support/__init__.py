"""Helpers the tests share, and that perf/ scripts may import (the one way perf/ reaches into
tests/, as tests/architecture/test_layering.py states)."""
