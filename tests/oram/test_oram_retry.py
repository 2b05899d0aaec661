"""A read whose reply was cut is retried with a fresh counter; the server takes counters out of
order within its window, each once."""

from __future__ import annotations

import http.client
import json

from conftest import Relay
from veil.oram.data import synthetic_block as synthetic
from veil.oram.protocol import STATUS_OK, Handshake, open_reply, read_request


class Cutter(Relay):
    """A loopback relay that cuts the first `cuts` read replies after 20 bytes (the server has
    served the read and counted its counter; the client gets a broken reply)."""

    def __init__(self, port: int, cuts: int, marker: bytes = b"application/octet-stream"):
        self.cuts, self.marker = cuts, marker
        super().__init__(port)

    def forward(self, data, reply):
        if reply and self.marker in data:
            with self.lock:
                cut = self.cuts > 0
                self.cuts -= cut
            if cut:
                return data[:20], True
        return data, False


def test_a_cut_reply_is_retried_transparently(server):
    from veil.oram.client import OramClient

    s = server(tls=False)
    cut = Cutter(s.server.port, cuts=2)
    with OramClient(f"http://127.0.0.1:{cut.port}", s.token, insecure_plaintext=True) as c:
        assert c.get(7) == synthetic(3, 7, 256)  # cut once, retried
        assert c.get(8) == synthetic(3, 8, 256)  # cut again, retried
        assert c.get(9) == synthetic(3, 9, 256)
        assert c.retries == 2 and c.sessions_opened == 1
    cut.close()


def test_a_cut_handshake_reply_is_retried_with_a_fresh_hello(server):
    """The server has seen (and would refuse again) the first hello: the retry draws a new key."""
    from veil.oram.client import OramClient

    s = server(tls=False)
    cut = Cutter(s.server.port, cuts=1, marker=b"application/json")
    with OramClient(f"http://127.0.0.1:{cut.port}", s.token, insecure_plaintext=True) as c:
        assert c.get(3) == synthetic(3, 3, 256)
        assert c.sessions_opened == 1 and cut.cuts == 0
    cut.close()


def _read(url, key, sid, ctr, block):
    host, port = url.split("//")[1].split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=10)
    c.request("POST", "/read", body=read_request(key, sid, ctr, block))
    r = c.getresponse()
    out = r.status, r.read()
    c.close()
    return out


def test_counters_out_of_order_within_the_window_are_served_once(server):
    s = server(tls=False)
    hs = Handshake(s.token)
    c = http.client.HTTPConnection("127.0.0.1", s.server.port, timeout=10)
    c.request("POST", "/session", body=hs.hello())
    sid, key, _ = hs.finish(json.loads(c.getresponse().read()))
    c.close()
    for ctr in (5, 3, 4, 70):
        status, body = _read(s.url, key, sid, ctr, 1)
        assert status == 200 and open_reply(key, sid, ctr, body) == (STATUS_OK, synthetic(3, 1, 256))
    for ctr in (3, 70, 6):  # 3 and 70 again; 6 is 64 behind 70, outside the window
        status, body = _read(s.url, key, sid, ctr, 1)
        assert status == 401 and json.loads(body)["code"] == "replay", ctr
    assert _read(s.url, key, sid, 7, 1)[0] == 200  # 63 behind: inside
