# Veil: `make run` (set up, reproduce the papers quickly) and `make test` (set up, run all tests).
# Everything a fresh clone needs is installed from here; nothing by hand.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
VEIL   := $(VENV)/bin/veil
STAMP  := $(VENV)/.veil-installed
RUST_SOURCES := $(shell find crates -name '*.rs' -o -name Cargo.toml 2>/dev/null) Cargo.toml
PY_META := pyproject.toml
# maturin's build hook calls the `maturin` binary: the venv's bin must come first on PATH.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: setup run test test-rust test-python bench clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# Rebuild the extension whenever a crate or the package metadata changes.
$(STAMP): $(VENV)/bin/python $(RUST_SOURCES) $(PY_META)
	$(PIP) install --quiet "maturin>=1.7,<2"
	$(PIP) install --quiet --no-build-isolation -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(VEIL) reproduce --quick

test: setup test-rust test-python

test-rust:
	cargo test --workspace --release -q

test-python: setup
	$(PY) -m pytest -q

bench: setup
	$(VEIL) bench

clean:
	rm -rf $(VENV) target report .veil
