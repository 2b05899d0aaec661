"""A store rolled back to an older copy is refused by a client that has seen a newer epoch: the
epoch is sealed into every reply, the shared epoch file only rises, and restarts of an old copy
do not advance it (the three attacks of issue 43)."""

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
    # 5 epochs ended by requests; the last one or two may not be durably recorded yet
    assert seen >= 2 and int(epochs.read_text()) == seen
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


def _init(veil_cli, path):
    assert veil_cli("oram", "init", "--blocks", "64", "--block-size", "64", "--seed", "3", str(path)).rc == 0
    return (path / "client.token").read_text().strip(), (path / "tls.fingerprint").read_text().strip()


def _serve(path, tok, port=0):
    store = native().Store.open(str(path), threads=2)
    return store, store.serve(tok, port=port, tls_dir=str(path), log="off")


def test_a_rollback_during_a_long_session_is_refused(veil_cli, tmp_path):
    """The session began at an old epoch; its replies since told of newer ones. A copy taken
    in between (newer than the handshake's epoch, older than the replies') is refused; with the
    epoch only in the handshake it was accepted."""
    live, mid = tmp_path / "live", tmp_path / "mid"
    tok, fp = _init(veil_cli, live)
    store, srv = _serve(live, tok)
    port = srv.port
    c = OramClient(f"https://127.0.0.1:{port}", tok, fingerprint=fp)
    at_handshake = c.highest_epoch
    for i in range(16):
        assert c.get(i) == synthetic(3, i, 64)
    srv.stop()
    del store
    shutil.copytree(live, mid)
    store, srv = _serve(live, tok, port)
    for i in range(48):  # a long session (re-keyed once, after the restart): 6 more epochs
        assert c.get(i % 64) == synthetic(3, i % 64, 64)
    assert c.highest_epoch >= at_handshake + 3
    srv.stop()
    del store
    rolled, srv = _serve(mid, tok, port)
    with pytest.raises(OramClientError, match="rolled-back copy"):
        c.get(1)
    c.close()
    srv.stop()


def test_the_epoch_file_only_rises(tmp_path):
    from veil.oram.client import EpochFile

    f = EpochFile(tmp_path / "e")
    assert f.read() == 0
    f.write(10)
    f.write(4)  # a client that saw less: the record stays
    assert f.read() == 10 and f.raise_to(7) == 10 and f.raise_to(12) == 12
    import threading

    threads = [threading.Thread(target=f.raise_to, args=(v,)) for v in (30, 17, 29, 5, 31, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert f.read() == 31


def test_a_client_that_saw_less_neither_lowers_the_record_nor_accepts_the_old_copy(veil_cli, tmp_path):
    live, old = tmp_path / "live", tmp_path / "old"
    tok, fp = _init(veil_cli, live)
    shutil.copytree(live, old)
    epochs = tmp_path / "shared.epoch"
    store, srv = _serve(live, tok)
    url = f"https://127.0.0.1:{srv.port}"
    port = srv.port
    laggard = OramClient(url, tok, fingerprint=fp, epoch_file=epochs)  # sees the start only
    with OramClient(url, tok, fingerprint=fp, epoch_file=epochs) as busy:
        for i in range(48):
            busy.get(i)
        recorded = busy.highest_epoch
    assert recorded >= 2 and int(epochs.read_text()) == recorded > laggard.highest_epoch
    srv.stop()
    del store
    rolled, srv = _serve(old, tok, port)
    # the laggard re-keys with the old copy: it reads the shared record first and refuses
    with pytest.raises(OramClientError, match="rolled-back copy"):
        laggard.get(1)
    laggard.close()
    assert int(epochs.read_text()) == recorded
    srv.stop()


def test_restarts_of_an_old_copy_do_not_walk_it_past_the_record(veil_cli, tmp_path):
    live, old = tmp_path / "live", tmp_path / "old"
    tok, fp = _init(veil_cli, live)
    shutil.copytree(live, old)
    epochs = tmp_path / "client.epoch"
    store, srv = _serve(live, tok)
    with OramClient(f"https://127.0.0.1:{srv.port}", tok, fingerprint=fp, epoch_file=epochs) as c:
        for i in range(24):
            c.get(i)
    srv.stop()
    del store
    recorded = int(epochs.read_text())
    assert recorded >= 1
    seen_by_fresh = set()
    for _ in range(2 * recorded + 6):  # more restarts than the old scheme needed to pass
        rolled, srv = _serve(old, tok)
        url = f"https://127.0.0.1:{srv.port}"
        with OramClient(url, tok, fingerprint=fp) as fresh:
            seen_by_fresh.add(fresh.highest_epoch)
        with pytest.raises(OramClientError, match="rolled-back copy"):
            OramClient(url, tok, fingerprint=fp, epoch_file=epochs)
        srv.stop()
        del rolled
    assert seen_by_fresh == {0}  # restarts without reads leave the old copy where it was
