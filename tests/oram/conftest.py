from __future__ import annotations

import threading

import pytest

from veil.oram.engine import native
from veil.oram.server import Link, OramService, make_handler


@pytest.fixture
def make_store(tmp_path):
    def make(n_blocks=64, block_size=256, name="store", seed=3):
        return native().Store.init(str(tmp_path / name), block_size, n_blocks=n_blocks, seed=seed, threads=2)

    return make


@pytest.fixture
def server(make_store):
    """A running service on a free port: yields (url, token, service)."""
    from http.server import ThreadingHTTPServer

    started = []

    def start(store=None, link=None, token="t0ken"):
        store = store or make_store()
        svc = OramService(store, token, link or Link())
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(svc))
        httpd.daemon_threads = True
        th = threading.Thread(target=httpd.serve_forever, daemon=True)
        th.start()
        started.append(httpd)
        host, port = httpd.server_address[:2]
        return f"http://{host}:{port}", token, svc

    yield start
    for h in started:
        h.shutdown()
        h.server_close()


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
