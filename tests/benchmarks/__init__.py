"""Tests of `benchmarks/`: each benchmark scored as upstream, and the interface."""
