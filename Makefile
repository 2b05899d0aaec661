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

.PHONY: setup system-deps trace-deps tracer run test test-rust test-python bench clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# Rebuild the extension whenever a crate or the package metadata changes.
$(STAMP): $(VENV)/bin/python $(RUST_SOURCES) $(PY_META)
	$(PIP) install --quiet "maturin>=1.7,<2"
	$(PIP) install --quiet --no-build-isolation -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

# Debian's redis-server is the ORAM remote store in the tests, which start it themselves on a free
# loopback port. Installed where we may (root with apt-get, as on CI). Where it cannot be, the Rust
# Redis test would fail: test-rust then sets VEIL_SKIP_REDIS and says loudly that it skipped.
system-deps:
	@command -v redis-server >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing redis-server (Debian package)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	  else echo "WARNING: redis-server is not installed and cannot be here: the oram Redis tests SKIP"; fi; }

# trace: Debian's valgrind (headers and static libraries the tracer tool is built against) and the
# programs of the workload suite. Installed where we may; elsewhere the trace tests skip and say why.
trace-deps:
	@missing=""; for c in valgrind bzip2 xz sqlite3 gcc; do command -v $$c >/dev/null 2>&1 || missing="$$missing $$c"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing valgrind bzip2 xz-utils sqlite3 gcc (Debian packages)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind bzip2 xz-utils sqlite3 gcc >/dev/null; \
	  else echo "note: not installed:$$missing (apt-get install valgrind bzip2 xz-utils sqlite3 gcc): trace tests will skip"; fi; fi

tracer: trace-deps
	@if command -v valgrind >/dev/null 2>&1; then $(MAKE) -s -C tracer; fi

run: setup tracer
	$(VEIL) reproduce --quick

test: setup system-deps tracer test-rust test-python

test-rust:
	@command -v redis-server >/dev/null 2>&1 || echo "WARNING: no redis-server: SKIPPING the oram Redis test (VEIL_SKIP_REDIS=1)"
	env $$(command -v redis-server >/dev/null 2>&1 || echo VEIL_SKIP_REDIS=1) cargo test --workspace --release -q

test-python: setup
	$(PY) -m pytest -q

bench: setup
	$(VEIL) bench

clean:
	rm -rf $(VENV) target report .veil
