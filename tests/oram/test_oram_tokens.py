"""Tokens of at least 128 bits, plaintext only on loopback, and handshakes that cannot push a
reading client out."""

from __future__ import annotations

import http.client
import json
import re

import pytest

from veil.oram.client import OramClient, OramRequestError
from veil.oram.data import synthetic_block as synthetic
from veil.oram.protocol import Handshake


def raw(url, method, path, body):
    host, port = url.split("//")[1].split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=10)
    c.request(method, path, body=body)
    r = c.getresponse()
    out = r.status, r.getheader("Content-Type"), r.read()
    c.close()
    return out


def test_init_makes_a_128_bit_token(veil_cli, tmp_path):
    data = tmp_path / "s"
    assert veil_cli("oram", "init", "--blocks", "8", "--block-size", "64", str(data)).rc == 0
    tok = (data / "client.token").read_text().strip()
    assert re.fullmatch(r"[0-9a-f]{32}", tok)  # 32 hex digits: 128 bits from the OS's CSPRNG
    assert (data / "client.token").stat().st_mode & 0o777 == 0o600


def test_short_tokens_are_refused_by_server_client_and_cli(make_store, server, veil_cli, tmp_path):
    store = make_store()
    with pytest.raises(ValueError, match="31 characters: at least 32"):
        store.serve("a" * 31, log="off")
    s = server(store)
    with pytest.raises(OramRequestError, match="at least 32"):
        OramClient(s.url, "4711", fingerprint=s.fingerprint)
    data = tmp_path / "d"
    assert veil_cli("oram", "init", "--blocks", "8", "--block-size", "64", str(data)).rc == 0
    r = veil_cli("oram", "serve", str(data), "--port", "0", env={"VEIL_ORAM_TOKEN": "4711"})
    assert r.rc == 2 and "4 characters, at least 32" in r.err and len(r.err.strip().splitlines()) == 1


def test_plaintext_only_on_loopback(make_store, veil_cli, tmp_path):
    store = make_store()
    tok = "t" * 32
    # refused before anything listens, so no non-loopback socket is ever opened here
    with pytest.raises(ValueError, match="only on a loopback address"):
        store.serve(tok, host="0.0.0.0", log="off")
    with pytest.raises(OramRequestError, match="only to a loopback address"):
        OramClient("http://192.0.2.1:8470", tok, insecure_plaintext=True)
    data = tmp_path / "d"
    assert veil_cli("oram", "init", "--blocks", "8", "--block-size", "64", str(data)).rc == 0
    r = veil_cli("oram", "serve", str(data), "--port", "0", "--host", "0.0.0.0", "--insecure-plaintext")
    assert r.rc == 2 and "only on a loopback address" in r.err and len(r.err.strip().splitlines()) == 1
    srv = store.serve(tok, host="127.0.0.1", log="off")  # loopback plaintext still serves
    with OramClient(f"http://127.0.0.1:{srv.port}", tok, insecure_plaintext=True) as c:
        assert c.get(1) == synthetic(3, 1, 256)
    srv.stop()


def test_handshakes_do_not_evict_a_reading_client(server, make_store):
    """A full session table: fresh or replayed-from-long-ago hellos open sessions nobody reads
    with; they go first, so the client that reads keeps its session (no new key exchange)."""
    s = server(make_store(), tls=False, max_sessions=2)
    with s.client() as c:
        assert c.get(1) == synthetic(3, 1, 256)
        for _ in range(5):
            # more new sessions than the table holds: least-recently-used would push c's out
            for _ in range(4):
                assert raw(s.url, "POST", "/session", Handshake(s.token).hello())[0] == 200
            assert c.get(2) == synthetic(3, 2, 256)
        assert c.sessions_opened == 1
    # an exact replay of a hello is refused outright
    hello = Handshake(s.token).hello()
    assert raw(s.url, "POST", "/session", hello)[0] == 200
    status, _, body = raw(s.url, "POST", "/session", hello)
    assert status == 401 and json.loads(body)["code"] == "replay"
