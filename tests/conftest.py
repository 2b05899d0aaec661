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


def assert_shapes_falsifiable(system: str, store: Path) -> dict[str, str]:
    """Every shape row of `system` that holds fails under some perturbation within the declared
    ranges or a named ablation (veil.core.explain.falsify); a shape nothing plausible can make fail
    must be marked self_check, so it is never counted as holding. Returns what falsified each."""
    from veil.core.explain import falsify
    from veil.core.store import ResultStore

    with ResultStore(store) as st:
        found = falsify(system, st)
    unfalsified = sorted(k for k, v in found.items() if v is None)
    assert not unfalsified, f"shapes no declared perturbation makes fail (mark them self_check): {unfalsified}"
    return found


class Relay:
    """A loopback TCP relay between a client and the server at `port`: an observer on the wire.
    Subclasses see every chunk through `forward(data, reply)`, which returns the bytes to pass on
    and whether to cut the connection after them."""

    def __init__(self, port: int):
        import socket
        import threading

        self.target = port
        self.lsock = socket.create_server(("127.0.0.1", 0))
        self.port = self.lsock.getsockname()[1]
        self.lock = threading.Lock()
        self.conns: list = []
        self.threads: list = []
        threading.Thread(target=self._accept, daemon=True).start()

    def forward(self, data: bytes, reply: bool) -> tuple[bytes, bool]:
        return data, False

    def _pump(self, a, b, reply: bool) -> None:
        try:
            while d := a.recv(65536):
                out, cut = self.forward(d, reply)
                b.sendall(out)
                if cut:
                    break
        except OSError:
            pass
        _shutdown(a, b)

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            u = socket.create_connection(("127.0.0.1", self.target))
            self.conns += [c, u]
            for args in ((c, u, False), (u, c, True)):
                t = threading.Thread(target=self._pump, args=args, daemon=True)
                t.start()
                self.threads.append(t)

    def close(self) -> None:
        self.lsock.close()
        _shutdown(*self.conns)
        for t in self.threads:
            t.join(5)
        for x in self.conns:
            x.close()


def _shutdown(*socks) -> None:
    import socket

    for x in socks:
        try:
            x.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
