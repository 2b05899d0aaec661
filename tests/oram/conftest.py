from __future__ import annotations

from typing import NamedTuple

import pytest

from veil.oram.engine import native


@pytest.fixture
def make_store(tmp_path):
    def make(n_blocks=64, block_size=256, name="store", seed=3):
        return native().Store.init(str(tmp_path / name), block_size, n_blocks=n_blocks, seed=seed, threads=2)

    return make


class Served(NamedTuple):
    url: str
    token: str
    fingerprint: str | None
    server: object
    store: object

    def client(self, **kw):
        from veil.oram.client import OramClient

        return OramClient(self.url, self.token, fingerprint=self.fingerprint,
                          insecure_plaintext=self.fingerprint is None, **kw)


@pytest.fixture
def server(make_store, tmp_path):
    """The Rust HTTP service over a store, on a free loopback port, TLS unless tls=False."""
    started = []

    def start(store=None, token="t0ken-for-tests-0123456789abcdef0123", tls=True, limits=None, **kw):
        store = store or make_store()
        fp = tls_dir = None
        if tls:
            d = tmp_path / f"tls{len(started)}"
            d.mkdir()
            fp, tls_dir = native().make_tls_identity(str(d)), str(d)
        kw.setdefault("log", "off")
        srv = store.serve(token, tls_dir=tls_dir, limits=limits, **kw)
        started.append(srv)
        return Served(f"{'https' if tls else 'http'}://127.0.0.1:{srv.port}", token, fp, srv, store)

    yield start
    for s in started:
        s.stop()


@pytest.fixture
def redis_server(tmp_path):
    """Debian's redis-server on a free port, started for the test; skips where not installed."""
    import shutil
    import socket
    import subprocess
    import time

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server not installed (apt-get install redis-server)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    d = tmp_path / "redis"
    d.mkdir()
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no", "--dir", str(d)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.02)
    yield f"127.0.0.1:{port}"
    p.kill()
    p.wait()

