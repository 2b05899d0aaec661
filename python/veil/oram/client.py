"""Python client of `veil oram serve`: opens a session, fetches and decrypts blocks and files."""

from __future__ import annotations

import http.client
import json
import urllib.parse

from cryptography.exceptions import InvalidTag

from veil.core import ConfigError, VeilError
from veil.oram.protocol import SESSION_HEADER, open_sealed, session_key


class OramClientError(VeilError):
    pass


class OramRequestError(ConfigError):
    """The server refused the request as bad input (unknown block, wrong token, malformed)."""


class OramClient:
    def __init__(self, url: str, token: str, timeout: float = 60.0):
        u = urllib.parse.urlparse(url)
        if u.scheme != "http" or not u.hostname:
            raise OramRequestError(f"server URL {url!r}: expected http://HOST:PORT")
        self.host, self.port, self.timeout = u.hostname, u.port or 80, timeout
        self.token = token
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            info = self._request("POST", "/session", session=False)
        except BaseException:
            self.conn.close()
            raise
        meta = json.loads(info)
        self.sid = meta["session"]
        self.n_blocks, self.block_size = meta["n_blocks"], meta["block_size"]
        self.key = session_key(token, self.sid)

    def _request(self, method: str, path: str, session: bool = True) -> bytes:
        headers = {"Authorization": f"Bearer {self.token}"}
        if session:
            headers[SESSION_HEADER] = self.sid
        for attempt in (0, 1):
            try:
                self.conn.request(method, path, headers=headers)
                r = self.conn.getresponse()
                body = r.read()
                break
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
                if attempt:
                    raise OramClientError(f"{method} {path}: {e}") from None
        if r.status != 200:
            try:
                msg = json.loads(body)["error"]
            except (ValueError, KeyError):
                msg = body[:200].decode(errors="replace")
            cls = OramRequestError if 400 <= r.status < 500 else OramClientError
            raise cls(f"{method} {path}: {r.status} {msg}")
        return body

    def _open(self, what: str, blob: bytes) -> bytes:
        try:
            return open_sealed(self.key, f"{self.sid}:{what}", blob)
        except InvalidTag:
            raise OramClientError(f"reply for {what} fails authentication") from None

    def get(self, block_id: int) -> bytes:
        return self._open(str(block_id), self._request("GET", f"/block/{int(block_id)}"))

    def manifest(self) -> dict:
        return json.loads(self._open("manifest", self._request("GET", "/manifest")))

    def get_file(self, name: str) -> bytes:
        for f in self.manifest()["files"]:
            if f["name"] == name or f["name"].rsplit("/", 1)[-1] == name:
                data = b"".join(self.get(f["first_block"] + i) for i in range(f["blocks"]))
                return data[: f["bytes"]]
        raise OramClientError(f"no file named {name!r} in the store")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> OramClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
