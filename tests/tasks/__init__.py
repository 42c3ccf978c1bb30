"""Tests of `tasks/`."""
