"""`veil oram serve`: the PRO-ORAM store behind HTTP.

Requests are served by a thread per connection; the store releases the GIL while it reads, and
its access component takes requests one at a time (the paper's single access enclave), so
concurrent clients queue there. Every bad request gets a JSON error and the server stays up.
"""

from __future__ import annotations

import json
import re
import secrets
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from veil.oram.protocol import MAX_BODY, MAX_PATH, SESSION_HEADER, seal, session_key, tokens_equal

TOKEN_FILE = "client.token"


def read_or_make_token(data_dir: Path) -> str:
    p = data_dir / TOKEN_FILE
    if p.exists():
        return p.read_text().strip()
    tok = secrets.token_hex(16)
    p.touch(mode=0o600)
    p.write_text(tok + "\n")
    return tok


class Link:
    """Emulated link: each reply waits latency + size / bandwidth before it is sent."""

    def __init__(self, mbps: float = 0.0, latency_ms: float = 0.0):
        self.mbps, self.latency_ms = mbps, latency_ms

    def delay(self, nbytes: int) -> None:
        s = self.latency_ms / 1e3 + (nbytes * 8 / (self.mbps * 1e6) if self.mbps > 0 else 0.0)
        if s > 0:
            time.sleep(s)


class OramService:
    def __init__(self, store, token: str, link: Link | None = None):
        self.store = store
        self.token = token
        self.link = link or Link()
        self.sessions: dict[str, bytes] = {}
        self.lock = threading.Lock()
        self.manifest = json.loads(store.manifest())

    def new_session(self) -> str:
        sid = secrets.token_hex(16)
        with self.lock:
            if len(self.sessions) > 100_000:
                self.sessions.clear()
            self.sessions[sid] = session_key(self.token, sid)
        return sid


_BLOCK = re.compile(r"^/block/([0-9]{1,20})$")


def make_handler(svc: OramService):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "veil-oram"

        def log_message(self, fmt, *args):  # quiet: one line per request is too much at 32 clients
            pass

        def setup(self):
            super().setup()
            # headers and body go out in two writes: without this, Nagle's algorithm holds the
            # body until the client's delayed ACK (tens of ms per request on keep-alive)
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _send(self, code: int, body: bytes, ctype: str = "application/octet-stream") -> None:
            svc.link.delay(len(body))
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, code: int, msg: str) -> None:
            self._send(code, json.dumps({"error": msg}).encode(), "application/json")

        def _auth(self) -> bool:
            h = self.headers.get("Authorization", "")
            if not h.startswith("Bearer ") or not tokens_equal(h[7:].strip(), svc.token):
                self._error(401, "missing or wrong access token")
                return False
            return True

        def _checked(self) -> bool:
            if len(self.path) > MAX_PATH:
                self._error(414, f"request path longer than {MAX_PATH} bytes")
                return False
            try:
                n = int(self.headers.get("Content-Length", "0") or 0)
            except ValueError:
                self._error(400, "malformed Content-Length")
                return False
            if n > MAX_BODY:
                self._error(413, f"request body of {n} bytes above {MAX_BODY}")
                self.close_connection = True
                return False
            if n:
                self.rfile.read(n)
            return True

        def do_POST(self):
            if not self._checked():
                return
            if self.path != "/session":
                return self._error(404, f"no such endpoint: POST {self.path}")
            if not self._auth():
                return
            sid = svc.new_session()
            body = {"session": sid, "n_blocks": svc.manifest["n_blocks"], "block_size": svc.manifest["block_size"]}
            self._send(200, json.dumps(body).encode(), "application/json")

        def do_GET(self):
            if not self._checked():
                return
            if self.path == "/health":
                return self._send(200, b"ok\n", "text/plain")
            if not self._auth():
                return
            sid = self.headers.get(SESSION_HEADER, "")
            with svc.lock:
                key = svc.sessions.get(sid)
            if key is None:
                return self._error(401, "unknown session: POST /session first")
            if self.path == "/manifest":
                return self._send(200, seal(key, f"{sid}:manifest", json.dumps(svc.manifest).encode()))
            m = _BLOCK.match(self.path)
            if not m:
                return self._error(400 if self.path.startswith("/block/") else 404,
                                   f"malformed request: GET {self.path[:64]} (expected /block/<id>)")
            bid = int(m.group(1))
            try:
                data = svc.store.read(bid)
            except KeyError as e:
                return self._error(404, str(e).strip("'\""))
            except RuntimeError as e:  # tampering or storage failure: reported, never served as data
                return self._error(500, str(e))
            self._send(200, seal(key, f"{sid}:{bid}", data))

    return Handler


def serve(store, token: str, host: str = "127.0.0.1", port: int = 0, link: Link | None = None,
          ready=None) -> None:
    svc = OramService(store, token, link)
    httpd = ThreadingHTTPServer((host, port), make_handler(svc))
    httpd.daemon_threads = True
    if ready is not None:
        ready(httpd)
    try:
        httpd.serve_forever()
    finally:
        httpd.server_close()
