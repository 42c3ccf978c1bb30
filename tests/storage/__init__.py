"""Tests of `storage/`."""
