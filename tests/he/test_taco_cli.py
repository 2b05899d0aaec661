"""Bad TACO input through the CLI: one line on stderr, exit status 2."""

import pytest


@pytest.mark.parametrize("args, msg", [
    (["design.pe_ntt=3"], "design.pe_ntt: 3 PEs is not a power of two"),
    (["design.pe_dyadic=16", "design.sram_dyadic=128"], "below the dyadic block's minimum of 384 bytes"),
    (["poly_degree=4096", "coeff_bits=[60,60]"], "exceeds 109 bits"),
    (["power_cap_mw=10"], "power_cap_mw = 10: no design draws this little power; the lowest reachable is 18.8 mW"),
    (["design.pe_foo=2"], "design.pe_foo: unknown knob"),
])
def test_bad_taco_input(tmp_path, veil_cli, args, msg):
    (tmp_path / "t.toml").write_text('experiment = "he.taco"\nfrontier = false\n')
    r = veil_cli("run", "t.toml", *args, timeout=300)
    assert r.rc == 2, r.err
    assert msg in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_one_design_evaluates(tmp_path, veil_cli):
    (tmp_path / "t.toml").write_text('experiment = "he.taco"\nfrontier = false\n'
                                     '[design]\npe_ntt = 16\npe_intt = 16\n')
    r = veil_cli("run", "t.toml", timeout=300)
    assert r.rc == 0, r.err
    assert "enc_ms" in r.out
