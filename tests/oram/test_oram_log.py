"""The server's log names no block, slot or position unless the operator asks for it twice."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from conftest import default_sigint

from veil.oram.client import OramClientError


def _tamper(tmp_path, name, store, block):
    region, slot = store.debug_slot_of(block)
    with open(tmp_path / name / f"region{region}.dat", "r+b") as f:
        f.seek(slot * (64 + 16) + 3)
        c = f.read(1)
        f.seek(slot * (64 + 16) + 3)
        f.write(bytes([c[0] ^ 4]))


def _reads_of_a_tampered_block(server, make_store, tmp_path, log):
    store = make_store(n_blocks=16, block_size=64, name=f"log-{log}")
    s = server(store, log=log)
    _tamper(tmp_path, f"log-{log}", store, 2)
    with s.client() as c:
        for _ in range(3):
            with pytest.raises(OramClientError, match="integrity"):
                c.get(2)
        c.get(5)
    time.sleep(0.3)  # the log line is written off the reply's path


def _failure_lines(capfd):
    """The server's log lines but the one it writes at start (the descriptor limit)."""
    return [x for x in capfd.readouterr().err.splitlines() if "veil oram serve" in x and "descriptors:" not in x]


def test_default_level_logs_one_line_that_names_nothing(server, make_store, tmp_path, capfd):
    _reads_of_a_tampered_block(server, make_store, tmp_path, "info")
    lines = _failure_lines(capfd)
    assert len(lines) == 1, lines  # three failed reads, one line: repeats are not told apart
    assert "failed authentication" in lines[0]
    assert not re.search(r"\d", lines[0]) and "block" not in lines[0] and "slot" not in lines[0], lines[0]


def test_debug_level_names_block_and_slot(server, make_store, tmp_path, capfd):
    _reads_of_a_tampered_block(server, make_store, tmp_path, "debug")
    lines = _failure_lines(capfd)
    assert len(lines) == 3 and all("block 2" in x and "slot" in x for x in lines), lines


def test_cli_debug_log_needs_the_explicit_flag_and_warns(tmp_path, veil_cli):
    data = tmp_path / "s"
    assert veil_cli("oram", "init", "--blocks", "16", "--block-size", "64", str(data)).rc == 0
    r = veil_cli("oram", "serve", str(data), "--port", "0", "--log-level", "debug")
    assert r.rc == 2 and "--unsafe-debug-log" in r.err and len(r.err.strip().splitlines()) == 1
    p = subprocess.Popen([sys.executable, "-m", "veil.cli", "oram", "serve", str(data), "--port", "0",
                          "--log-level", "debug", "--unsafe-debug-log"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=os.environ.copy(), preexec_fn=default_sigint)
    try:
        assert "serving" in p.stdout.readline()
    finally:
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=20)
    assert "warning: --unsafe-debug-log" in err
