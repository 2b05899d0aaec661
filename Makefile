# Veil: `make run` (set up, reproduce the papers quickly) and `make test` (set up, run all tests).
# Everything a fresh clone needs is installed from here; nothing by hand.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
VEIL   := $(VENV)/bin/veil
STAMP  := $(VENV)/.veil-installed
TEST_STAMP := $(VENV)/.veil-test-installed
RUST_SOURCES := $(shell find crates -name '*.rs' -o -name Cargo.toml 2>/dev/null) Cargo.toml
PY_META := pyproject.toml
# maturin's build hook calls the `maturin` binary: the venv's bin must come first on PATH.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: setup setup-test system-deps trace-deps tracer run test test-rust test-python bench clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# What anything below builds with, since it builds without isolation: maturin for Veil's own
# extension; setuptools >= 70.1 (bdist_wheel built in) and wheel for a dependency shipped only as
# an sdist. `python -m venv` gives setuptools 65 and no wheel, which cannot build one.
BUILD_NEEDS := "maturin>=1.7,<2" "setuptools>=70.1" wheel

# Rebuild the extension whenever a crate or the package metadata changes. `make run` needs only
# the runtime dependencies; the test extra comes with `make test` and `make bench`.
$(STAMP): $(VENV)/bin/python $(RUST_SOURCES) $(PY_META)
	$(PIP) install --quiet --upgrade $(BUILD_NEEDS)
	$(PIP) install --quiet --no-build-isolation -e .
	touch $(STAMP)

setup: $(STAMP)

# The test extra (pyproject.toml), installed without rebuilding Veil. PyORAM 0.2.1 is an sdist that
# builds its cffi helper only when cffi is importable while it builds (else `import pyoram` fails
# although pip lists it): cffi first, then a check that imports the helper. A PyORAM built earlier
# without it (pip's wheel cache, an old venv) is rebuilt once from its sdist (never a wheel found elsewhere); if the helper still
# does not import, set-up fails here and says so.
TEST_REQS = $(shell $(PY) -c "import tomllib; print(' '.join(repr(r) for r in tomllib.load(open('pyproject.toml','rb'))['project']['optional-dependencies']['test']))" 2>/dev/null)
PYORAM_OK := $(PY) -c "import pyoram.util._virtual_heap_helper" 2>/dev/null
$(TEST_STAMP): $(STAMP)
	$(PIP) install --quiet "cffi>=1.0"
	$(PIP) install --quiet --no-build-isolation $(TEST_REQS)
	@$(PYORAM_OK) || { echo "PyORAM's cffi helper is missing: rebuilding PyORAM from source"; \
	  $(PIP) install --quiet --no-build-isolation --no-cache-dir --no-binary PyORAM --force-reinstall --no-deps "PyORAM>=0.2.1"; }
	@$(PYORAM_OK) || { echo "error: PyORAM installed but 'import pyoram.util._virtual_heap_helper' fails: its cffi helper did not build (needs cffi and a C compiler)"; exit 1; }
	touch $(TEST_STAMP)

setup-test: $(TEST_STAMP)

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

test: setup-test system-deps tracer test-rust test-python

test-rust:
	@command -v redis-server >/dev/null 2>&1 || echo "WARNING: no redis-server: SKIPPING the oram Redis test (VEIL_SKIP_REDIS=1)"
	env $$(command -v redis-server >/dev/null 2>&1 || echo VEIL_SKIP_REDIS=1) cargo test --workspace --release -q

test-python: setup-test
	$(PY) -m pytest -q

bench: setup-test
	$(VEIL) bench

clean:
	rm -rf $(VENV) target report .veil
