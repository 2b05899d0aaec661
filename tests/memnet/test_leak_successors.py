"""The permutation-stream check's successor statistic, against a value counted by hand: a
stream whose positions are exactly uniform and whose blocks are all permutations, but whose
order is a fixed cycle, must be rejected by the successors alone."""

from __future__ import annotations

import pytest

from veil.core.leak import stats


def rotated_cycles(sources, m, blocks):
    """Per source, block j is the cycle 0, 1, ..., m-1 started at j mod m (offset 100)."""
    src, dst = [], []
    for s in sources:
        for j in range(blocks):
            src += [s] * m
            dst += [100 + (j + i) % m for i in range(m)]
    return src, dst


def test_successors_alone_reject_a_rotated_cycle():
    """M = 8 modules, 3 sources x 16 blocks: B = 48 blocks, each start 0..7 used 6 times.
    Positions: each module sits at each position B / M = 6 times, exactly the expected count,
    so the position chi-square is 0 and its p is 1. Successors: a block has M - 1 = 7
    consecutive pairs, 336 in all; a random arrangement puts each of the M (M - 1) = 56
    ordered pairs a != b there with probability 1 / 56, B / M = 6 expected each. The cycle
    uses only the 8 pairs (a, a+1 mod 8); a block misses the one that wraps past its end, so
    each occurs B - B / M = 42 times. Chi-square = 8 x (42 - 6)^2 / 6 + 48 x 6 = 1728 + 288
    = 2016 (in general B (M - 1)(M - 2)), on 56 - 1 = 55 degrees of freedom."""
    src, dst = rotated_cycles([0, 1, 2], 8, 16)
    r = stats.permutation_stream(src, dst, [0, 1, 2], list(range(100, 108)))
    d = r.detail
    assert d["blocks"] == 48 and d["non_permutation_blocks"] == 0 and d["foreign_destinations"] == 0
    assert d["positions_chi2"] == pytest.approx(0, abs=1e-9) and d["positions_p"] == pytest.approx(1.0)
    assert d["successors_chi2"] == pytest.approx(2016, rel=1e-12) and d["successors_df"] == 55
    assert r.p < 1e-100 and d["verdict"] == "not a uniform permutation stream", d
