# One command to set up and run the demo, one to set up and run the tests.
# Needs only Python 3.11 and make: uv is bootstrapped from the package registry if missing.

PYTHON ?= python3
UV_VERSION := 0.13.8
UV := $(shell command -v uv 2>/dev/null || echo .bootstrap/bin/uv)
export UV_PYTHON_DOWNLOADS := never

.PHONY: install demo test lint perf up down clean

install: $(UV)
	$(UV) sync --frozen

.bootstrap/bin/uv:
	$(PYTHON) -m venv .bootstrap
	.bootstrap/bin/python -m pip install --quiet "uv==$(UV_VERSION)"

demo: install
	.venv/bin/evalfleet demo

test: install
	.venv/bin/ruff check .
	.venv/bin/python -m pytest -q -n 2 --dist loadfile

up: install
	.venv/bin/evalfleet up $(ARGS)

down: install
	.venv/bin/evalfleet down

lint: install
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

perf: install
	.venv/bin/python perf/throughput.py

clean:
	rm -rf .venv .bootstrap demo-data
