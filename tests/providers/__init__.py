"""Tests of `providers/`."""
