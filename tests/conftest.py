from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest


def default_sigint() -> None:
    """preexec_fn for a child that a test stops with SIGINT: a shell starts background jobs (and so
    a test run started with `&`) with SIGINT ignored, and a child would inherit that and never see
    the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass
class CliResult:
    rc: int
    out: str
    err: str


@pytest.fixture
def store_path(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "store" / "results.sqlite"
    monkeypatch.setenv("VEIL_STORE", str(path))
    return path


@pytest.fixture
def veil_cli(tmp_path, store_path):
    """Runs `veil ...` in a subprocess, as a user would, inside tmp_path."""

    def run(*args: str, timeout: float = 300, env: dict | None = None) -> CliResult:
        full_env = {**os.environ, "VEIL_STORE": str(store_path), **(env or {})}
        p = subprocess.run([sys.executable, "-m", "veil.cli", *args], cwd=tmp_path, env=full_env,
                           capture_output=True, text=True, timeout=timeout)
        return CliResult(p.returncode, p.stdout, p.stderr)

    return run


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def one_line_error(r: CliResult, *needles: str) -> None:
    """Bad input: exit 2, exactly one line on stderr naming the problem, never a traceback."""
    assert r.rc == 2, (r.rc, r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert "Traceback" not in r.err
    for n in needles:
        assert n in lines[0], lines[0]


def assert_verdicts(refs: dict, expected: dict[str, str]) -> None:
    """Each row key's verdict in references.json is the expected one (a shape's holds / fails)."""
    got = {k: refs[k]["verdict"] for k in expected}
    assert got == expected, got


def assert_inverted_shapes_fail(system: str, store: Path, out: Path, expected: dict[str, str]) -> None:
    """Re-runs a system's quick reproducer in this process with every shape predicate negated
    (its points come back from the store) and shows that the shape checks of `expected` then
    fail: they test the model's results, not a constant."""
    import json

    from veil.core.report import reproduce
    from veil.core.rows import inverted_shapes
    from veil.core.store import ResultStore

    with ResultStore(store) as st, inverted_shapes():
        sections, _ = reproduce([system], out, st, quick=True, jobs=1, log=lambda *_: None)
    assert sections[0].error is None, sections[0].error
    assert sections[0].computed == 0, "the inverted run should read every point from the store"
    with pytest.raises(AssertionError):
        assert_verdicts(json.loads((out / "references.json").read_text()), expected)
