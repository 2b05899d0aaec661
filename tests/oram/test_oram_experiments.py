"""The `oram.access` experiment: numbers that follow from the algorithms."""

from __future__ import annotations

import math

import pytest

from veil.core import ConfigError, load_systems
from veil.core.config import validate


def run(**kw):
    load_systems()
    from veil.oram.experiments import access

    return access(validate("oram.access", kw))


def test_proram_moves_one_slot_plus_its_share_of_three_shuffle_passes():
    n, b = 400, 512
    r = run(engine="proram", n_blocks=n, block_size=b, accesses=80, warmup=20)
    assert r["errors"] == 0
    t = 20
    cols = math.ceil(math.sqrt(n + t))
    slots = cols * math.ceil((n + t) / cols)
    slot = b + 16
    # 1 slot read by the access + (2 reads + 3 writes per slot: stage 2, stage 3 + next stage 1) / T
    want = slot + 5 * slots * slot / t
    assert r["bytes_per_access"] == pytest.approx(want, rel=0.06)
    assert r["epoch_len"] == t
    # the cache's measured peak: distinct blocks among an epoch's 20 uniform requests out of 400
    # (a repeat within an epoch is likely, P ~ 0.38; three in every epoch is not)
    assert t - 2 <= r["private_cache_blocks"] <= t
    # block buffers: the cache's peak, the slot being opened, one shuffle batch: whole groups (a
    # row or column of the grid each), as many as fit 2 MiB (BATCH_BYTES in shuffle.rs), at
    # least one and at most a stage's; here all 21 groups of 21 blocks of 512 bytes
    group = max(cols, slots // cols)
    batch = group * max(1, min(group, (2 << 20) // (group * b)))
    assert batch == 21 * 21
    assert r["private_block_bytes"] >= (r["private_cache_blocks"] + 1 + batch) * b
    assert r["private_block_bytes"] <= (t + 1 + batch) * b + 8 * batch
    assert r["position_map_bytes"] == 4 * slots
    # one window per epoch of the 80 timed requests: they tile the timed loop (read off the same
    # clock marks), so they add up to it however the scheduler split the time between requests
    assert len(r["server_ms_windows"]) == 80 // t
    assert sum(r["server_ms_windows"]) * t == pytest.approx(r["server_ms"] * 80, rel=1e-9)
    assert r["network_ms"] == pytest.approx(slot * 8 / 7e6 * 1e3)


def test_cache_shuffle_moves_one_slot_plus_its_share_of_one_pass():
    n, b, t = 400, 512, 20
    r = run(engine="proram", shuffle="cache", n_blocks=n, block_size=b, accesses=10 * t, warmup=10 * t)
    assert r["errors"] == 0
    assert r["cache_shuffles"] >= 10
    cols = math.ceil(math.sqrt(n + t))
    slots = cols * math.ceil((n + t) / cols)
    slot = b + 16
    # 1 slot read by the access + (1 read + 1 write per slot) / T, against the Clos shuffle's 5
    assert r["bytes_per_access"] == pytest.approx(slot + 2 * slots * slot / t, rel=0.06)


def test_an_unknown_shuffle_is_refused_naming_the_known_ones():
    with pytest.raises(ConfigError) as e:
        run(engine="proram", shuffle="melbourne", n_blocks=64, block_size=64)
    assert "clos" in str(e.value) and "cache" in str(e.value)


def test_pathoram_moves_two_paths_and_plain_one_slot():
    n, b = 256, 128
    p = run(engine="pathoram", n_blocks=n, block_size=b, accesses=40)
    levels = math.ceil(math.log2(n / 2)) + 1
    assert p["bytes_per_access"] == 2 * levels * (12 + 4 * (8 + b) + 16)
    q = run(engine="plain", n_blocks=n, block_size=b, accesses=40)
    assert q["bytes_per_access"] == b + 16
    assert p["errors"] == q["errors"] == 0


def test_file_backend_in_a_temporary_directory():
    r = run(engine="proram", n_blocks=64, block_size=512, accesses=24, backend="file")
    assert r["errors"] == 0 and r["storage_core_ms"] > 0


def test_bad_configs_are_one_line_errors():
    with pytest.raises(ConfigError, match="engine"):
        run(engine="melbourne", n_blocks=4, block_size=16)
    with pytest.raises(ConfigError, match="MiB of memory"):
        run(engine="proram", n_blocks=1 << 20, block_size=1 << 20)
    with pytest.raises(ConfigError, match="n_blocks"):
        run(engine="proram", n_blocks=0, block_size=16)
    with pytest.raises(ConfigError, match="pace_margin"):
        run(engine="proram", n_blocks=4, block_size=16, pace_margin=-0.5)


def test_redis_backend_started_by_the_test(redis_server):
    r = run(engine="proram", n_blocks=100, block_size=256, accesses=40, backend="redis", redis=redis_server)
    assert r["errors"] == 0 and r["accesses"] == 40
    q = run(engine="pathoram", n_blocks=100, block_size=256, accesses=20, backend="redis", redis=redis_server)
    assert q["errors"] == 0
    with pytest.raises(Exception, match="redis at 127.0.0.1:1"):
        run(engine="plain", n_blocks=4, block_size=16, backend="redis", redis="127.0.0.1:1")


def test_ctrl_c_stops_a_long_measured_run_with_130(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from pathlib import Path

    from conftest import default_sigint

    cfg = Path(__file__).resolve().parents[2] / "configs" / "oram" / "access.toml"
    p = subprocess.Popen([sys.executable, "-m", "veil.cli", "run", str(cfg), "n_blocks=1024", "block_size=4096",
                          "accesses=1000000", "backend=memory"], cwd=tmp_path,
                         env={**os.environ, "VEIL_STORE": str(tmp_path / "s.sqlite")},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    time.sleep(4)
    assert p.poll() is None, p.communicate()
    t0 = time.perf_counter()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert time.perf_counter() - t0 < 5, "Ctrl-C was not prompt"
    assert "Traceback" not in err
