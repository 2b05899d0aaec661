"""The store through the bindings: correct data, one slot per request, tamper detection."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from veil.oram.data import synthetic_block as synthetic
from veil.oram.engine import native


def test_every_block_reads_back_across_epochs(make_store):
    s = make_store(n_blocks=100, block_size=96, seed=5)
    rng = random.Random(1)
    e0 = json.loads(s.stats())["epoch"]
    for _ in range(500):
        i = rng.randrange(100)
        assert s.read(i) == synthetic(5, i, 96)
    assert json.loads(s.stats())["epoch"] - e0 == 50  # T = 10 requests per epoch
    with pytest.raises(KeyError, match="unknown block id 100"):
        s.read(100)


# Chi-square over the 72 slots of a 64-block store (8 x 9 grid), 71 dof: 120 is the p = 2.5e-4 cut.
SLOTS, CHI2_CUT = 72, 120.0
EPOCHS = 200  # 1,600 reads, ~22 per slot: enough for the statistic to see a real bias (below)


def _chi2_uniform(slots_read) -> float:
    counts = np.bincount(slots_read, minlength=SLOTS)
    exp = len(slots_read) / SLOTS
    return float(((counts - exp) ** 2 / exp).sum())


def test_access_log_is_one_fresh_slot_per_request(make_store):
    s = make_store(n_blocks=64, block_size=32)
    t = 8
    s.record_log(True)
    s.drain_log()
    for _ in range(EPOCHS * t):
        s.read(7)  # worst case: one block again and again
    acc = [e for e in s.drain_log() if e[0] == "Access"]
    assert len(acc) == EPOCHS * t
    for k in range(EPOCHS):
        epoch = acc[k * t:(k + 1) * t]
        assert len({e[3] for e in epoch}) == t, "a slot was read twice in one epoch"
        assert len({e[2] for e in epoch}) == 1
    # slots read are spread uniformly over the 72 slots
    assert _chi2_uniform([e[3] for e in acc]) < CHI2_CUT


def test_uniformity_check_rejects_a_biased_store():
    """The statistic above, at the same sample size, on a store that reads a quarter of its slots
    twice as often (still T distinct slots per epoch): rejected (statistic ~230). At the old 80
    samples the same bias passed every time (statistic ~72, the cut is 120)."""
    rng = np.random.default_rng(1)
    w = np.ones(SLOTS)
    w[: SLOTS // 4] = 2.0
    w /= w.sum()
    biased = np.concatenate([rng.choice(SLOTS, 8, replace=False, p=w) for _ in range(EPOCHS)])
    assert _chi2_uniform(biased) > CHI2_CUT
    fair = np.concatenate([rng.choice(SLOTS, 8, replace=False) for _ in range(EPOCHS)])
    assert _chi2_uniform(fair) < CHI2_CUT


def test_flipped_bit_on_disk_is_reported(make_store, tmp_path):
    s = make_store(n_blocks=30, block_size=64, name="tamper")
    region, slot = s.debug_slot_of(4)
    path = tmp_path / "tamper" / f"region{region}.dat"
    raw = bytearray(path.read_bytes())
    raw[slot * (64 + 16) + 10] ^= 0x01
    path.write_bytes(raw)
    with pytest.raises(RuntimeError, match="integrity check failed"):
        s.read(4)
    assert s.read(5) == synthetic(3, 5, 64)


def test_missing_or_corrupt_store_is_a_clear_error(make_store, tmp_path):
    with pytest.raises(RuntimeError, match="no store here"):
        native().Store.open(str(tmp_path / "nothing"))
    make_store(name="s2")
    (tmp_path / "s2" / "proram.state").write_bytes(b"garbage that is long enough")
    with pytest.raises(RuntimeError, match="fails authentication"):
        native().Store.open(str(tmp_path / "s2"))
    with pytest.raises(ValueError, match="block size 0"):
        native().Store.init(str(tmp_path / "s3"), 0, n_blocks=4)
