# One command to set up and run the demo, one to set up and run the tests.
# Needs only Python 3.11 and make: uv is bootstrapped from the package registry if missing.

PYTHON ?= python3
UV_VERSION := 0.13.8
UV := $(shell command -v uv 2>/dev/null || echo .bootstrap/bin/uv)
export UV_PYTHON_DOWNLOADS := never

.PHONY: install demo test lint perf up down clean

# Bytecode is compiled at install: where PYTHONDONTWRITEBYTECODE=1 (CI machines, containers)
# Python never caches it, and every process (a run, a Ray worker, the Prefect server) spent
# about 9 s compiling some 6,000 modules from source.
install: $(UV)
	$(UV) sync --frozen --compile-bytecode
	.venv/bin/python -m compileall -q -j 0 cli flows stack reports engine tasks providers simulator benchmarks storage metrics core deployments >/dev/null

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
