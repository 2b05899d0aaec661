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
def toy():
    """The toy system of `veil explain`'s and the row checks' known-answer tests (tests/explain_toy.py),
    registered afresh and taken out again."""
    import importlib

    import explain_toy

    importlib.reload(explain_toy)
    explain_toy.CALLS.clear()
    yield explain_toy
    explain_toy.unregister()
    from veil.core.rowcheck import CHECKS

    CHECKS.pop("toy", None)


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


def assert_shapes_falsifiable(system: str, store: Path, refs: dict | None = None,
                              checks: set[str] | None = None) -> dict[str, str]:
    """Every shape row of `system` that holds fails under some perturbation within the declared
    ranges or a named ablation; a shape nothing plausible can make fail must be marked self_check,
    so it is never counted as holding. Returns what falsified each.

    Where the system declares per-row evaluators (`python/veil/<system>/rowchecks.py`,
    veil.core.rowcheck) each runs at the nominal values and under its rows' declared perturbations,
    at its reduced sizes: the rows must hold at the nominal values there (else the reduction
    changed their truth) and fail under the perturbation. Otherwise the whole reproducer is
    re-run at each end of each range (veil.core.explain.falsify: slow; toy systems only). With a
    report's references.json (`refs`), each evaluated row's nominal value must be the report's.
    `checks`: only the evaluators of these names (a cheap subset; the rest run behind
    `python -m veil.core.rowcheck SYSTEM`)."""
    from veil.core.rowcheck import load_checks
    from veil.core.store import ResultStore

    with ResultStore(store) as st:
        if load_checks(system):
            from veil.core.rowcheck import falsify, render

            found = falsify(system, st, checks=checks)
            if refs is not None:
                import math

                differ = {k: (f.value, refs[k]["value"]) for k, f in found.items() if k in refs and not (
                    f.value == refs[k]["value"] or math.isclose(f.value, refs[k]["value"], rel_tol=1e-9))}
                assert not differ, f"evaluators whose nominal value is not the report's: {differ}"
                missing = sorted(k for k in found if k not in refs)
                assert not missing, f"evaluated rows the report does not have (a key drifted): {missing}"
            # a row with a declared flip must hold at the nominal values (else the evaluator's sizes
            # changed its truth), unless the report itself has it failing (a finding)
            declared = {k for k in found if any(c.flip_for(k) is not None for c in load_checks(system))}
            not_holding = sorted(k for k in declared if found[k].nominal != "holds"
                                 and (refs is None or refs.get(k, {}).get("verdict") == "holds"))
            assert not not_holding, (f"rows that do not hold at the nominal values under their evaluator's "
                                     f"reduced sizes: {not_holding}\n{render(found)}")
            unfalsified = sorted(k for k, f in found.items() if f.nominal == "holds" and f.flipped_by is None)
            assert not unfalsified, (f"shapes no declared perturbation makes fail (mark them self_check): "
                                     f"{unfalsified}\n{render(found)}")
            return {k: f.flipped_by for k, f in found.items() if f.flipped_by}
        from veil.core.explain import falsify as falsify_by_reproducer

        found_r = falsify_by_reproducer(system, st)
    unfalsified = sorted(k for k, v in found_r.items() if v is None)
    assert not unfalsified, f"shapes no declared perturbation makes fail (mark them self_check): {unfalsified}"
    return found_r


def assert_shapes_covered(system: str, refs: dict) -> None:
    """Every shape row of `system` in a report's references.json that holds has a per-row
    evaluator (veil.core.rowcheck) to show it can fail; a row that cannot is a self-check."""
    from veil.core.rowcheck import load_checks

    checks = load_checks(system)
    bare = sorted(k for k, r in refs.items() if k.startswith(f"{system}/") and r.get("shape")
                  and r["verdict"] == "holds" and not any(c.covers(k) for c in checks))
    assert not bare, f"holding shape rows with no row check (declare one, or mark them self_check): {bare}"


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
