"""kill -9 during a shuffle and during a hand-over: the store reopens and serves every block."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from veil.oram.data import synthetic_block
from veil.oram.engine import native

READER = """
import sys
from veil import _native
s = _native.oram.Store.open(sys.argv[1], threads=2)
n, bs = int(sys.argv[2]), int(sys.argv[3])
print("open", flush=True)
k = 0
while True:
    i = (k * 37) % n
    d = s.read(i)
    assert d[:8] == i.to_bytes(8, "little"), (i, d[:8])
    k += 1
    if k % 50 == 0:
        print(k, flush=True)
"""


def start_reader(data, n, bs, failpoint=None):
    env = os.environ.copy()
    env.pop("VEIL_ORAM_FAILPOINT", None)
    if failpoint:
        env["VEIL_ORAM_FAILPOINT"] = failpoint
    return subprocess.Popen([sys.executable, "-c", READER, str(data), str(n), str(bs)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def check_all(data, n, bs, seed):
    s = native().Store.open(str(data), threads=2)
    for i in range(n):
        assert s.read(i) == synthetic_block(seed, i, bs), f"block {i} lost or wrong"


@pytest.mark.parametrize("failpoint", ["shuffle-stage2", "handover-before-state", "handover-after-state"])
def test_crash_at_each_point_of_the_epoch_switch(tmp_path, failpoint):
    n, bs = 200, 2048
    data = tmp_path / "d"
    native().Store.init(str(data), bs, n_blocks=n, seed=9, threads=2)
    p = start_reader(data, n, bs, failpoint)
    try:
        p.wait(timeout=60)
    finally:
        p.kill()
        out, err = p.communicate()
    assert p.returncode == -signal.SIGABRT, (p.returncode, err[-500:])
    assert f"failpoint {failpoint}" in err
    assert "open" in out  # it served before it died
    check_all(data, n, bs, 9)


def test_kill_9_at_random_times_loses_nothing(tmp_path):
    n, bs = 400, 32 * 1024
    data = tmp_path / "d"
    native().Store.init(str(data), bs, n_blocks=n, seed=4, threads=2)
    rng = random.Random(7)
    for _ in range(4):
        p = start_reader(data, n, bs)
        assert p.stdout.readline().strip() == "open", p.stderr.read()
        time.sleep(rng.uniform(0.2, 0.8))
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        err = p.stderr.read()
        p.stderr.close()
        assert "Error" not in err, err[-500:]
    check_all(data, n, bs, 4)
