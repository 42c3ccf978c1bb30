# One command to set up and run the demo, one to set up and run the tests.
# Needs only Python 3.11 and make: uv is bootstrapped from the package registry if missing;
# `make test` also installs Debian's chromium for the browser tests where it may.

PYTHON ?= python3
UV_VERSION := 0.13.8
UV := $(shell command -v uv 2>/dev/null || echo .bootstrap/bin/uv)
export UV_PYTHON_DOWNLOADS := never

.PHONY: install demo test test-fast browser lint perf up down clean docs

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

test: install browser
	.venv/bin/ruff check .
	.venv/bin/python -m pytest -q -n 2 --dist loadfile

# Everything but the tests marked slow (those that start Ray, a Prefect server, a browser or a
# subprocess stack), or that take over ten seconds: about a minute.
test-fast: install
	.venv/bin/ruff check .
	.venv/bin/python -m pytest -q -n 2 -m "not slow"

# The browser tests drive Debian's chromium through chromedriver (no browser download works
# here). Installed when this user may (root, or sudo without a password); otherwise those
# tests are skipped, each with a line saying what to install.
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" -eq 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	else echo "browser tests will be skipped: install chromium and chromium-driver"; exit 0; fi; \
	command -v apt-get >/dev/null || { echo "browser tests will be skipped: no apt-get"; exit 0; }; \
	echo "installing chromium and chromium-driver for the browser tests"; \
	$$sudo apt-get update -qq && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver \
		>/dev/null || echo "could not install chromium: the browser tests will be skipped"

up: install
	.venv/bin/evalfleet up $(ARGS)

down: install
	.venv/bin/evalfleet down

lint: install
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

perf: install
	.venv/bin/python perf/throughput.py

# The documentation site: the CLI reference generated from the request model, then mkdocs with
# --strict (a broken link or anchor, or a shell block without its runnable/skip mark, fails it)
# into site/ (git-ignored). Not --quiet: mkdocs then stops counting the warnings --strict
# fails on.
docs: install
	.venv/bin/python docs/gen_cli.py
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict

clean:
	rm -rf .venv .bootstrap demo-data site
