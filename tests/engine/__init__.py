"""Tests of `engine/`."""
