"""The HTTP service: authenticated, encrypted replies; bad input answered, server stays up;
many concurrent clients all get correct data."""

from __future__ import annotations

import http.client
import threading
import time
import urllib.parse

import pytest

from veil.oram.client import OramClient, OramRequestError
from veil.oram.server import Link
from veil.oram.data import synthetic_block as synthetic


def raw(url, method, path, headers=None, body=None):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    out = r.status, r.read()
    c.close()
    return out


def test_client_reads_blocks_and_replies_are_sealed(server):
    url, token, svc = server()
    c = OramClient(url, token)
    assert (c.n_blocks, c.block_size) == (64, 256)
    for i in (0, 63, 5, 5, 5):
        assert c.get(i) == synthetic(3, i, 256)
    # on the wire the block is AES-GCM under the session key: not the plaintext
    status, body = raw(url, "GET", "/block/9", {"Authorization": f"Bearer {token}", "X-Veil-Session": c.sid})
    assert status == 200 and len(body) == 12 + 256 + 16
    assert synthetic(3, 9, 256)[8:40] not in body
    c.close()


def test_bad_requests_get_clear_errors_and_the_server_stays_up(server):
    url, token, _ = server()
    with pytest.raises(OramRequestError, match="401 missing or wrong access token"):
        OramClient(url, "wrong")
    c = OramClient(url, token)
    with pytest.raises(OramRequestError, match="404 unknown block id 64"):
        c.get(64)
    auth = {"Authorization": f"Bearer {token}", "X-Veil-Session": c.sid}
    assert raw(url, "GET", "/block/xyz", auth)[0] == 400
    assert raw(url, "GET", "/block/" + "9" * 30, auth)[0] == 400
    assert raw(url, "GET", "/nope", auth)[0] == 404
    assert raw(url, "GET", "/block/1", {"Authorization": f"Bearer {token}", "X-Veil-Session": "forged"})[0] == 401
    assert raw(url, "GET", "/" + "a" * 5000, auth)[0] == 414
    assert raw(url, "POST", "/session", {"Authorization": f"Bearer {token}"}, body=b"x" * 10000)[0] == 413
    assert raw(url, "GET", "/health")[0] == 200
    assert c.get(3) == synthetic(3, 3, 256)
    c.close()


def test_tampered_storage_is_an_error_reply_not_data(server, make_store, tmp_path):
    store = make_store(n_blocks=16, block_size=64, name="t")
    url, token, _ = server(store)
    region, slot = store.debug_slot_of(2)
    p = tmp_path / "t" / f"region{region}.dat"
    b = bytearray(p.read_bytes())
    b[slot * 80 + 3] ^= 4
    p.write_bytes(b)
    with OramClient(url, token) as c:
        with pytest.raises(Exception, match="500 integrity check failed"):
            c.get(2)
        assert c.get(1) == synthetic(3, 1, 64)


def test_link_emulation_adds_transfer_time(server):
    url, token, _ = server(link=Link(mbps=1.0, latency_ms=20))
    with OramClient(url, token) as c:
        t0 = time.perf_counter()
        c.get(1)
        dt = time.perf_counter() - t0
    # 284 bytes at 1 Mbps = 2.3 ms, plus 20 ms latency
    assert dt >= 0.022


@pytest.fixture
def served_process(tmp_path, veil_cli):
    """`veil oram init` + `veil oram serve` in a separate process, as deployed."""
    import os
    import subprocess
    import sys

    data = tmp_path / "served"
    r = veil_cli("oram", "init", "--blocks", "4096", "--block-size", "64", "--seed", "3", str(data))
    assert r.rc == 0, r.err
    p = subprocess.Popen([sys.executable, "-m", "veil.cli", "oram", "serve", str(data), "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    line = p.stdout.readline()
    assert "serving" in line, p.stderr.read()
    url = line.strip().rsplit(" ", 1)[-1]
    yield url, (data / "client.token").read_text().strip(), data
    p.kill()
    p.wait()
    p.stdout.close()
    p.stderr.close()


def test_cli_get_fetches_a_block_and_reports_bad_input(served_process, veil_cli, tmp_path):
    url, token, data = served_process
    out = tmp_path / "b17"
    r = veil_cli("oram", "get", "17", "--url", url, "--data-dir", str(data), "--out", str(out))
    assert r.rc == 0, r.err
    assert out.read_bytes() == synthetic(3, 17, 64)
    r = veil_cli("oram", "get", "5000", "--url", url, "--data-dir", str(data))
    assert r.rc == 2 and "unknown block id 5000" in r.err and len(r.err.strip().splitlines()) == 1
    r = veil_cli("oram", "get", "1", "--url", url, "--token", "nope")
    assert r.rc == 2 and "wrong access token" in r.err
    r = veil_cli("oram", "get", "1", "--url", "ftp://x", "--token", "t")
    assert r.rc == 2 and "expected http://HOST:PORT" in r.err
    r = veil_cli("oram", "serve", str(data.parent / "nowhere"))
    assert r.rc == 2 and "no such data directory" in r.err


def test_cli_init_chunks_real_files(veil_cli, tmp_path):
    a = tmp_path / "a.bin"
    a.write_bytes(bytes(range(256)) * 21)  # 5376 bytes: 6 blocks of 1 KB
    b = tmp_path / "b.txt"
    b.write_text("hello oram\n")
    r = veil_cli("oram", "init", "--block-size", "1K", str(tmp_path / "files"), str(a), str(b))
    assert r.rc == 0, r.err
    assert "7 blocks" in r.out
    from veil.oram.engine import native
    import json

    s = native().Store.open(str(tmp_path / "files"))
    m = json.loads(s.manifest())
    assert [f["blocks"] for f in m["files"]] == [6, 1]
    got = b"".join(s.read(i) for i in range(6))[:5376]
    assert got == a.read_bytes()
    assert s.read(6)[:11] == b"hello oram\n"
    r = veil_cli("oram", "init", "--block-size", "1K", str(tmp_path / "files2"), str(tmp_path / "missing"))
    assert r.rc == 2 and "not a readable file" in r.err
    r = veil_cli("oram", "init", "--block-size", "0", str(tmp_path / "files3"), "--blocks", "3")
    assert r.rc == 2 and "must be positive" in r.err


@pytest.mark.slow
def test_32_concurrent_clients_1000_reads_each(served_process):
    url, token, _ = served_process
    errors, counts = [], [0] * 32

    def worker(k):
        try:
            with OramClient(url, token) as c:
                for j in range(1000):
                    i = (k * 7919 + j * 31) % 4096
                    if c.get(i) != synthetic(3, i, 64):
                        errors.append((k, j, i))
                    counts[k] += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((k, repr(e)))

    ths = [threading.Thread(target=worker, args=(k,)) for k in range(32)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(timeout=300)
    assert not errors, errors[:5]
    assert counts == [1000] * 32


def test_store_in_redis_via_the_cli(veil_cli, redis_server, tmp_path):
    data = tmp_path / "r"
    r = veil_cli("oram", "init", "--redis", redis_server, "--blocks", "50", "--block-size", "128", "--seed", "2",
                 str(data))
    assert r.rc == 0, r.err
    assert not (data / "region0.dat").exists() and (data / "backend.json").exists()
    from veil.oram.engine import native

    s = native().Store.open(str(data))
    for i in range(50):
        assert s.read(i) == synthetic(2, i, 128)
    s.record_log(True)
    s.read(3)
    assert [e[0] for e in s.drain_log()].count("Access") == 1
