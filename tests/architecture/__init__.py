"""Tests of the layout itself: which room imports which, and what stays out of whose."""
