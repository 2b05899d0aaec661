"""Shared fixtures of the he tests (imported by name: tests/conftest.py owns the name conftest)."""

import numpy as np
import pytest

from veil.he.layers import Conv, Dense, Network, Stage, SumPool, random_model


@pytest.fixture(scope="session")
def toy_model():
    """Small network that still exercises every layout path: several channel groups, the row
    swap, fused 1x1/3x3 filters, sum pooling and a fully connected layer split over rows."""
    net = Network("toy", "random", (12, 16, 16), (
        Stage(Conv("c1", 12, 30, 16, 16, 3, 1), maxpool=2),
        Stage(Conv("c2", 30, 20, 8, 8, 3, 1, k1_outputs=5)),
        Stage(SumPool("p", 20, 8, 8, 2, 2)),
        Stage(Dense("fc", 320, 40)),
        Stage(Dense("fc2", 40, 7), relu=False)), input_bits=8)
    return random_model(net, 2)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.fixture(scope="session")
def small_model():
    """Convolutions only, small enough that the masking baseline (one Galois key per distinct
    rotation step) stays quick."""
    net = Network("small", "random", (4, 8, 8), (
        Stage(Conv("c1", 4, 6, 8, 8, 3, 1)),
        Stage(Conv("c2", 6, 5, 8, 8, 3, 0)),
        Stage(SumPool("p", 5, 6, 6, 2, 2), relu=False)), input_bits=8)
    return random_model(net, 4)
