"""Tests of what is shipped: the wheel, installed outside the checkout."""
