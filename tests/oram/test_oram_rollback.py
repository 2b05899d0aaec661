"""A store rolled back to an older copy is refused by a client that has seen a newer epoch."""

from __future__ import annotations

import shutil

import pytest

from veil.oram.client import OramClient, OramClientError
from veil.oram.data import synthetic_block as synthetic
from veil.oram.engine import native


def test_client_refuses_a_store_older_than_the_epoch_it_has_seen(veil_cli, tmp_path):
    live, old = tmp_path / "live", tmp_path / "old"
    assert veil_cli("oram", "init", "--blocks", "64", "--block-size", "64", "--seed", "3", str(live)).rc == 0
    shutil.copytree(live, old)  # the attacker's copy, as init left it
    tok = (live / "client.token").read_text().strip()
    fp = (live / "tls.fingerprint").read_text().strip()
    epochs = tmp_path / "client.epoch"

    store = native().Store.open(str(live), threads=2)
    srv = store.serve(tok, tls_dir=str(live), log="off")
    port = srv.port
    url = f"https://127.0.0.1:{port}"
    with OramClient(url, tok, fingerprint=fp, epoch_file=epochs) as c:
        for i in range(40):  # 5 epochs of T = 8 requests
            assert c.get(i) == synthetic(3, i, 64)
    c = OramClient(url, tok, fingerprint=fp, epoch_file=epochs)
    seen = c.highest_epoch
    assert seen >= 4 and int(epochs.read_text()) == seen
    assert epochs.stat().st_mode & 0o777 == 0o600
    srv.stop()
    del store

    # the old copy served on the same address: the running client re-keys and refuses it ...
    rolled = native().Store.open(str(old), threads=2)
    srv = rolled.serve(tok, port=port, tls_dir=str(old), log="off")
    with pytest.raises(OramClientError, match=rf"epoch \d+, behind epoch {seen} already seen: a rolled-back copy"):
        c.get(1)
    c.close()
    # ... and so does a new client that reads the epoch file
    with pytest.raises(OramClientError, match="rolled-back copy"):
        OramClient(url, tok, fingerprint=fp, epoch_file=epochs)
    # without the file (a client that has seen nothing) it is served: the check needs the record
    with OramClient(url, tok, fingerprint=fp) as fresh:
        assert fresh.get(1) == synthetic(3, 1, 64)
    srv.stop()
