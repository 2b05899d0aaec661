"""The three secrets can all live outside the data directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from conftest import default_sigint

from veil.oram.data import synthetic_block as synthetic


def test_key_token_and_tls_key_can_all_live_outside_the_data_directory(veil_cli, tmp_path):
    data, secure = tmp_path / "data", tmp_path / "secure"
    secure.mkdir()
    key, tok = secure / "oram.key", secure / "token"
    r = veil_cli("oram", "init", "--blocks", "16", "--block-size", "64", "--seed", "3", "--key-file", str(key),
                 "--token-file", str(tok), "--tls-dir", str(secure), str(data))
    assert r.rc == 0, r.err
    assert str(tok) in r.out and str(secure / "tls.key") in r.out
    assert not {"sealing.key", "client.token", "tls.key"} & {p.name for p in data.iterdir()}
    for p in (key, tok, secure / "tls.key"):
        assert p.stat().st_mode & 0o777 == 0o600, p
    # a second init may not overwrite them
    r = veil_cli("oram", "init", "--blocks", "16", "--block-size", "64", "--token-file", str(tok), str(tmp_path / "d2"))
    assert r.rc == 2 and "--token-file" in r.err and "already exists" in r.err
    p = subprocess.Popen([sys.executable, "-m", "veil.cli", "oram", "serve", str(data), "--port", "0", "--key-file",
                          str(key), "--token-file", str(tok), "--tls-dir", str(secure)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=os.environ.copy(), preexec_fn=default_sigint)
    try:
        line = p.stdout.readline()
        assert "serving" in line and "https://" in line, p.stderr.read() if p.poll() is not None else line
        url = line.split(" on ", 1)[1].split()[0]
        out = tmp_path / "b5"
        r = veil_cli("oram", "get", "5", "--url", url, "--token-file", str(tok), "--fingerprint",
                     (secure / "tls.fingerprint").read_text().strip(), "--out", str(out))
        assert r.rc == 0, r.err
        assert out.read_bytes() == synthetic(3, 5, 64)
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=20)
