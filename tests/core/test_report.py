import json

from conftest import write


def test_reproduce_crypto_writes_report(veil_cli, tmp_path):
    r = veil_cli("reproduce", "crypto", "--quick", "--out", "rep")
    assert r.rc == 0, r.err + r.out
    index = (tmp_path / "rep" / "index.html").read_text()
    assert "crypto.html" in index and "Rows that fail" in index and "references.json" in index
    html = (tmp_path / "rep" / "crypto.html").read_text()
    assert "crypto: throughput of Veil" in html and "src='figures/crypto_throughput_vs_size.png'" in html
    assert "Veil / ref" in html and "data:image" not in html
    res = json.loads((tmp_path / "rep" / "results.json").read_text())
    for key in ("crypto/aes_ctr_gbps_1t", "crypto/aes_gcm_gbps_1t", "crypto/aes_gcm_vs_cryptography"):
        assert isinstance(res[key], float) and res[key] > 0, key
    assert res["veil/mode"] == "quick"
    figs = {p.name for p in (tmp_path / "rep" / "figures").iterdir()}
    assert {"crypto_throughput_vs_size.png", "crypto_throughput_vs_size.svg", "crypto_throughput_vs_size.csv",
            "crypto_vs_openssl.csv"} <= figs
    refs = json.loads((tmp_path / "rep" / "references.json").read_text())
    ratio = refs["crypto/aes_gcm_vs_cryptography"]
    assert ratio["source"].startswith("OpenSSL same run") and ratio["basis"] == "measured"
    assert ratio["verdict"] in ("within", "outside") and ratio["tolerance_rel"] > 0
    lo, hi = ratio["spread"]
    assert lo <= ratio["value"] <= hi
    # A second run reads every stored point back.
    again = veil_cli("reproduce", "crypto", "--quick", "--out", "rep")
    assert again.rc == 0 and "(0 computed" in again.out


def test_reproduce_into_unwritable_out(veil_cli, tmp_path):
    write(tmp_path / "blocker", "x")
    r = veil_cli("reproduce", "crypto", "--out", "blocker/sub")
    assert r.rc == 2 and "--out" in r.err and len(r.err.strip().splitlines()) == 1
