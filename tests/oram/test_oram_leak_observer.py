"""The storage server as `veil leak`'s attacker: it records only what the server sees (storage
calls: op, region, slot, slot size, issuing enclave, request order), never block ids or data;
the plain store is the negative control and leaks, PRO-ORAM hides the hot set."""

from __future__ import annotations

import numpy as np

from veil.core.leak.analyse import analyse
from veil.oram.observer import BLOCK_SIZE, N_BLOCKS, OBSERVER, secret_ids, view

FIELDS = {"request", "actor", "op", "region", "slot", "slot_bytes", "region_slots"}


def test_view_holds_storage_calls_only():
    ids = secret_ids("hot", N_BLOCKS, 64, 3)
    for engine in ("proram", "pathoram", "plain"):
        v = view(engine, ids, 3)
        assert set(v) == FIELDS
        assert v["slot_bytes"] >= BLOCK_SIZE  # a sealed slot: the block plus its tag, never less
        assert set(np.unique(v["actor"])) <= {1, 2, 3, 4}  # access, shuffle, path, plain: no set-up


def test_oblivious_engines_show_the_same_call_shape_for_both_secrets():
    """Which blocks are read (the secret) changes neither how many calls each request makes nor
    their kinds: the only secret-dependent field left is the slot, whose law the tests check."""
    for engine in ("proram", "pathoram"):
        va = view(engine, secret_ids("uniform", N_BLOCKS, 64, 5), 5)
        vb = view(engine, secret_ids("repeat", N_BLOCKS, 64, 5), 5)
        for k in ("request", "actor", "op", "region"):
            assert np.array_equal(va[k], vb[k]), (engine, k)


def test_plain_store_shows_the_block_and_the_view_is_reproducible():
    ids = secret_ids("uniform", N_BLOCKS, 40, 7)
    v = view("plain", ids, 7)
    assert np.array_equal(v["slot"], ids)  # the negative control: slot i is block i
    w = view("proram", ids, 7)
    assert all(np.array_equal(w[k], view("proram", ids, 7)[k]) for k in ("request", "actor", "op", "slot"))


def test_plain_store_is_flagged_and_proram_is_not():
    plain = analyse(OBSERVER, "plain", "uniform", "hot", repeats=13, seed=1, size=64, power_trials=5)
    assert plain["negative_control"]
    sp = plain["families"]["spatial"]
    assert sp["leaks"] and sp["power"] >= 0.95
    pro = analyse(OBSERVER, "proram", "repeat", "fresh", repeats=13, seed=1, size=64, power_trials=5)
    assert pro["defence"] and not any(f["leaks"] for f in pro["families"].values())
    assert pro["families"]["spatial"]["detectable"]["effect"] is not None
