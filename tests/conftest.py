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
