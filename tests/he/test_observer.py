"""The evaluating server's view of an encrypted inference (python/veil/he/observer.py): what it
records, and that the input image reaches it neither in sizes and operations nor in time."""

from __future__ import annotations

import numpy as np

from veil.core.leak import aligned
from veil.core.leak.observer import observer
from veil.core.leak.power import plant_volume
from veil.he import observer as ho

ALPHA = 1e-3


def test_the_server_view_is_the_network_shape():
    assert observer("he", "server") is ho.OBSERVER
    a = ho.server_view("rr", "zeros", 1, 1)
    b = ho.server_view("rr", "saturated", 1, 1)
    assert len(a[0]) == len(ho.network().stages)
    assert all(set(layer) == set(ho.VOLUME + ho.TEMPORAL) for layer in a[0])
    # Sizes and operations are the same whatever the image: the public shape alone.
    assert [[l[f] for f in ho.VOLUME] for l in a[0]] == [[l[f] for f in ho.VOLUME] for l in b[0]]
    assert a[0][0]["bytes_in"] > 8192 * 2 * 2 * 8  # two 8192-coefficient polynomials, 2 primes
    assert not np.array_equal(ho.image("random", 1, 0, (4, 8, 8)), ho.image("random-b", 1, 0, (4, 8, 8)))


def test_input_image_is_not_seen_and_a_planted_timing_shift_is():
    """11 seed pairs of 3 inferences, random image against an all-black one: no family is
    flagged. The server time doubled in the black-image runs (planted) is flagged on the server's
    time per layer: the test has the power to see such a shift over the timing noise of 2 shared
    cores (20% to 2x between runs of one image, measured; a planted 10% shift was not caught)."""
    runs = []
    for s in range(1, 12):
        order = ("random", "zeros") if s % 2 else ("zeros", "random")
        r = {p: ho.OBSERVER.run("rr", p, s, 3) for p in order}
        runs.append((r["random"], r["zeros"]))
    for fam in ("volume", "temporal"):
        d = aligned.block_differences([x.features[fam] for x, _ in runs], [y.features[fam] for _, y in runs])
        p = aligned.signflip(d).p
        assert p == 1.0 if fam == "volume" else p > ALPHA, (fam, p)
    cols = list(range(0, runs[0][0].features["temporal"].shape[1], 2))  # server_s of each layer
    planted = [plant_volume(y.features["temporal"], 1.0, cols)[:, cols] for _, y in runs]
    d = aligned.block_differences([x.features["temporal"][:, cols] for x, _ in runs], planted)
    assert aligned.signflip(d).p < ALPHA
