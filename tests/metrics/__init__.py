"""Tests of `metrics/`."""
