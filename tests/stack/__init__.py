"""Tests of `stack/`."""
