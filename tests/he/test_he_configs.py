"""Every shipped he config validates against its experiment."""

from pathlib import Path

import pytest

from veil.core.config import read_toml, validate
from veil.core.sweep import load_spec

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs" / "he").glob("*.toml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_validates(path):
    data = read_toml(path)
    if "grid" in data or "zip" in data or "base" in data:
        assert load_spec(path).configs
    else:
        exp = data.pop("experiment")
        validate(exp, data, str(path))


def test_there_are_configs():
    assert len(CONFIGS) >= 3
