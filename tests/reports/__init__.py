"""Tests of `reports/`."""
