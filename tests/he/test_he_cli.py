"""The CLI turns bad he configs into one-line errors with exit status 2."""

import pytest


@pytest.mark.parametrize("body, msg", [
    ('network = "alexnet"', "network"),
    ('mode = "foo"', "unknown he.layout 'foo'"),
    ('margin = -1', "margin"),
])
def test_bad_network_config(tmp_path, veil_cli, body, msg):
    (tmp_path / "bad.toml").write_text(f'experiment = "he.network"\n{body}\n')
    r = veil_cli("run", "bad.toml", timeout=120)
    assert r.rc == 2
    assert msg in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_he_experiments_listed(veil_cli):
    r = veil_cli("list", timeout=120)
    assert r.rc == 0
    for name in ("he.digits", "he.network", "he.op_costs", "he.macs_per_mb"):
        assert name in r.out
