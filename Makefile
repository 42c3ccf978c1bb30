# One command to set up and run the demo, one to set up and run the tests.
# Needs only Python (3.11 to 3.13) and make: uv is bootstrapped from the package registry if
# missing; `make test` also installs Debian's chromium for the browser tests where it may.

# The Python of the default environment (.venv): the distribution's own python3 where it is
# 3.11 to 3.13, else the first python3 on PATH (`make install PYTHON=/path/to/python` picks
# another). Debian's and Ubuntu's are built with PGO and LTO and link libpython statically;
# pyenv's default build does neither: on this project's 2-core machine `sum(range(3*10**7))`
# takes 0.16 s in the first and 0.39 s in the second, and `import prefect` 1.2 against 1.4
# CPU-s. Every process of a run, the Prefect server and the suite is Python.
SYSTEM_PYTHON := $(shell /usr/bin/python3 -c 'import sys; print((3, 11) <= sys.version_info[:2] <= (3, 13))' 2>/dev/null)
PYTHON ?= $(if $(filter True,$(SYSTEM_PYTHON)),/usr/bin/python3,python3)
UV_VERSION := 0.13.8
UV := $(shell command -v uv 2>/dev/null || echo .bootstrap/bin/uv)
export UV_PYTHON_DOWNLOADS := never

# Another Python of this machine, in an environment of its own: `make test-fast
# PYTHON_VERSION=3.13` installs into .venv-3.13 and tests there. Unset: python3, in .venv.
# The interpreter is named by its path: pyenv's shims answer only for the active version, and
# uv stops at the first shim that fails.
PYTHON_VERSION ?=
PYENV_ROOT ?= $(HOME)/.pyenv
ifeq ($(PYTHON_VERSION),)
VENV := .venv
VENV_PYTHON := $(PYTHON)
else
VENV := .venv-$(PYTHON_VERSION)
candidates := $(wildcard $(PYENV_ROOT)/versions/$(PYTHON_VERSION).*/bin/python$(PYTHON_VERSION)) \
	$(wildcard /usr/local/bin/python$(PYTHON_VERSION) /usr/bin/python$(PYTHON_VERSION))
INTERPRETER := $(firstword $(foreach p,$(candidates),$(shell $(p) -c 'import sys' 2>/dev/null && echo $(p))))
ifeq ($(INTERPRETER),)
$(error no Python $(PYTHON_VERSION) on this machine (looked in $(PYENV_ROOT)/versions, /usr/local/bin and /usr/bin))
endif
VENV_PYTHON := $(INTERPRETER)
export UV_PROJECT_ENVIRONMENT := $(VENV)
endif

.PHONY: install demo test test-fast browser lint perf up down clean python docs plugin

# Bytecode is compiled at install: where PYTHONDONTWRITEBYTECODE=1 (CI machines, containers)
# Python never caches it, and every process (a run, a Ray worker, the Prefect server) spent
# about 9 s compiling some 6,000 modules from source.
install: $(UV)
	UV_PYTHON=$(VENV_PYTHON) $(UV) sync --frozen --inexact --compile-bytecode
	$(VENV)/bin/python -m compileall -q -j 0 src/evalfleet >/dev/null

.bootstrap/bin/uv:
	python3 -m venv .bootstrap
	.bootstrap/bin/python -m pip install --quiet "uv==$(UV_VERSION)"

demo: install
	$(VENV)/bin/evalfleet demo

# The slowest 25 tests are listed at the end, then the CPU-seconds of the costliest files
# (tests/support/cpu_by_file.py): where the suite's time and CPU go. Three workers on two
# cores: most tests wait on the processes they start (Ray, Prefect, the simulator), so a worker
# waiting leaves the CPU to another; a fourth took as long (1,581 s against 1,565 s, the same
# CPU-seconds) and its extra load made waits run out. The host's speed is printed beside the
# time, to compare a run with another host's (the suite's budget: 12 minutes where that line
# takes 0.8 s in python3), then the same line in the suite's own interpreter.
test: install browser
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	@python3 -c "import time; t = time.perf_counter(); sum(range(3*10**7)); print(f'host speed: sum(range(3*10**7)) in {time.perf_counter() - t:.2f} s (python3, the budget\'s reference)')"
	@$(VENV)/bin/python -c "import os, sys, time; t = time.perf_counter(); sum(range(3*10**7)); print(f'the same line in the suite\'s Python ({os.path.realpath(sys.executable)}): {time.perf_counter() - t:.2f} s')"
	@start=$$(date +%s); $(VENV)/bin/python tests/support/cpu_busy.py start .cpu-busy; \
		$(VENV)/bin/python -m pytest -q -n 3 --dist loadfile --durations=25; code=$$?; \
		echo "make test: pytest took $$(( $$(date +%s) - start )) s"; \
		$(VENV)/bin/python tests/support/cpu_busy.py end .cpu-busy; exit $$code

# Everything but the tests marked slow (those that start Ray, a Prefect server, a browser or a
# subprocess stack), or that take over ten seconds: about a minute.
test-fast: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/python -m pytest -q -n 2 -m "not slow"

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
	$(VENV)/bin/evalfleet up $(ARGS)

down: install
	$(VENV)/bin/evalfleet down

# A benchmark package of your own beside evalfleet, editable (docs/extending.md):
# `make plugin PLUGIN=path/to/mybench`, the path absolute or relative to this folder. Every
# target keeps it (`install` syncs with --inexact). With UNINSTALL=1 it removes the package
# named like the folder (what `evalfleet new benchmark NAME` makes).
plugin: install
	@test -n "$(PLUGIN)" || { echo "error: name the package: make plugin PLUGIN=path/to/mybench" >&2; exit 2; }
ifdef UNINSTALL
	$(UV) pip uninstall --python $(VENV)/bin/python $(notdir $(abspath $(PLUGIN)))
else
	$(UV) pip install --python $(VENV)/bin/python -e $(PLUGIN)
endif

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

perf: install
	$(VENV)/bin/python perf/throughput.py

# The interpreter `install` uses (fails, saying so, where PYTHON_VERSION names none here).
python:
	@echo $(shell command -v $(VENV_PYTHON))

# The documentation site: the CLI reference generated from the request model, then mkdocs with
# --strict (a broken link or anchor, or a shell block without its runnable/skip mark, fails it)
# into site/ (git-ignored). Not --quiet: mkdocs then stops counting the warnings --strict
# fails on.
docs: install
	.venv/bin/python docs/gen_cli.py
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict

clean:
	rm -rf .venv .venv-* .bootstrap demo-data site
