"""Python client of `veil oram serve`: pins the server's certificate, runs the key exchange,
fetches and decrypts blocks and files, and re-establishes its session after a server restart."""

from __future__ import annotations

import hashlib
import http.client
import ipaddress
import json
import os
import ssl
import urllib.parse
from pathlib import Path

from cryptography.exceptions import InvalidTag

from veil.core import ConfigError, VeilError
from veil.oram.protocol import (MAX_ID, MIN_TOKEN_CHARS, REPLY_HEAD, STATUS_INTEGRITY, STATUS_OK, STATUS_UNKNOWN,
                                Handshake, open_reply_epoch, read_request)

#: Attempts at one read whose reply was cut (reset, closed, timed out) before it arrived.
READ_ATTEMPTS = 3


class OramClientError(VeilError):
    pass


class OramRequestError(ConfigError):
    """The server refused the request as bad input (unknown block, wrong token, malformed)."""


class _Cut(OramClientError):
    """The connection failed before a reply arrived (the request may or may not have been served)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_token(token: str) -> None:
    if len(token) < MIN_TOKEN_CHARS:
        raise OramRequestError(f"access token of {len(token)} characters: at least {MIN_TOKEN_CHARS} required "
                               "(128 bits as hex; 'veil oram init' makes one)")


class EpochFile:
    """The highest store epoch seen, kept in a file (mode 0600) across runs and shared by the
    clients given the same path: a server whose store is older (a rolled-back copy) is refused.
    It only ever goes up: `raise_to` writes the larger of the file's value and its own, under an
    exclusive lock, by an atomic rename, so a client that saw less cannot lower it."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def read(self) -> int:
        try:
            return int(self.path.read_text().strip() or 0)
        except FileNotFoundError:
            return 0
        except (OSError, ValueError) as e:
            raise OramRequestError(f"epoch file {self.path}: unreadable ({e})") from None

    def raise_to(self, epoch: int) -> int:
        """Records `epoch` if it is above the file's; returns the file's value afterwards."""
        import fcntl

        lock = os.open(self.path.with_name(self.path.name + ".lock"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            have = self.read()
            if epoch <= have:
                return have
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(f"{epoch}\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            return epoch
        finally:
            os.close(lock)

    def write(self, epoch: int) -> None:
        self.raise_to(epoch)


def normalise_fingerprint(fp: str) -> str:
    f = fp.strip().replace(":", "").lower()
    if len(f) != 64 or any(ch not in "0123456789abcdef" for ch in f):
        raise OramRequestError(f"certificate fingerprint {fp!r}: expected 64 hex digits (SHA-256)")
    return f


class OramClient:
    """`url` is https://HOST:PORT with `fingerprint` (the SHA-256 of the server's certificate,
    printed by `veil oram init`), or http://HOST:PORT on a loopback address with
    insecure_plaintext=True. `epoch_file`: where the highest store epoch seen is kept, so that a
    store rolled back behind it is refused across runs (within one client it is always checked)."""

    def __init__(self, url: str, token: str, *, fingerprint: str | None = None, insecure_plaintext: bool = False,
                 timeout: float = 60.0, epoch_file: str | os.PathLike | None = None):
        u = urllib.parse.urlparse(url)
        if u.scheme not in ("https", "http") or not u.hostname:
            raise OramRequestError(f"server URL {url!r}: expected https://HOST:PORT")
        if u.scheme == "http" and not insecure_plaintext:
            raise OramRequestError(f"server URL {url!r}: plain http needs --insecure-plaintext")
        if u.scheme == "http" and not is_loopback(u.hostname):
            raise OramRequestError(f"server URL {url!r}: plain http only to a loopback address (without TLS one "
                                   "observed handshake lets anyone test token guesses offline)")
        if u.scheme == "https" and not fingerprint:
            raise OramRequestError("https needs the server's certificate fingerprint (--fingerprint or --data-dir)")
        check_token(token)
        try:
            port = u.port or (443 if u.scheme == "https" else 80)
        except ValueError:
            raise OramRequestError(f"server URL {url!r}: bad port") from None
        self.host, self.port, self.timeout, self.tls = u.hostname, port, timeout, u.scheme == "https"
        self.fingerprint = normalise_fingerprint(fingerprint) if self.tls else None
        self._hs_token = token
        self.conn: http.client.HTTPConnection | None = None
        self.counter = 0
        self.sessions_opened = 0
        self.retries = 0
        self.epoch_file = EpochFile(epoch_file) if epoch_file is not None else None
        self.highest_epoch = self.epoch_file.read() if self.epoch_file else 0
        try:
            self._handshake()
        except BaseException:
            self.close()
            raise

    # -- transport ----------------------------------------------------------------------------
    def _connect(self) -> http.client.HTTPConnection:
        if not self.tls:
            c = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            c.connect()
            return c
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        # trust comes from the pinned fingerprint, checked before anything is sent
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        c = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout, context=ctx)
        c.connect()
        der = c.sock.getpeercert(binary_form=True)
        got = hashlib.sha256(der or b"").hexdigest()
        if got != self.fingerprint:
            c.close()
            raise OramClientError(f"{self.host}:{self.port}: certificate SHA-256 {got} is not the pinned "
                                  f"{self.fingerprint}: refusing to talk to it")
        return c

    def _post(self, path: str, body: bytes, *, resend: bool = True) -> tuple[int, bytes]:
        """One request; with `resend` it goes again once on a fresh connection if the first
        failed (a kept-alive connection the server had closed). Without, a failure raises _Cut."""
        for attempt in (0, 1):
            try:
                if self.conn is None:
                    self.conn = self._connect()
                self.conn.request("POST", path, body=body, headers={"Content-Type": "application/octet-stream"})
                r = self.conn.getresponse()
                data = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.close()
                return r.status, data
            except OramClientError:
                raise
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                self.close()
                if not resend:
                    raise _Cut(f"{self.host}:{self.port}: {e or type(e).__name__}") from None
                if attempt:
                    raise OramClientError(f"{self.host}:{self.port}: {e or type(e).__name__}") from None
        raise AssertionError("unreachable")

    @staticmethod
    def _fail(path: str, status: int, data: bytes) -> VeilError:
        try:
            msg = json.loads(data)["error"]
        except (ValueError, KeyError, TypeError):
            msg = data[:200].decode(errors="replace")
        cls = OramRequestError if 400 <= status < 500 else OramClientError
        return cls(f"POST {path}: {status} {msg}")

    @staticmethod
    def _code(data: bytes) -> str:
        try:
            return json.loads(data).get("code", "")
        except (ValueError, AttributeError):
            return ""

    # -- protocol -----------------------------------------------------------------------------
    def _handshake(self) -> None:
        for attempt in range(READ_ATTEMPTS):
            # a fresh ephemeral key each try: the server refuses a hello it has seen (a replay)
            hs = Handshake(self._hs_token)
            try:
                status, data = self._post("/session", hs.hello(), resend=False)
                reply = json.loads(data) if status == 200 else None
                break
            except ValueError:
                self.close()  # a 200 whose JSON is cut short: the connection broke mid-reply
                if attempt == READ_ATTEMPTS - 1:
                    raise OramClientError(f"{self.host}:{self.port}: session reply cut short") from None
            except _Cut:
                if attempt == READ_ATTEMPTS - 1:
                    raise
        if status != 200:
            raise self._fail("/session", status, data)
        try:
            self.sid, self.key, info = hs.finish(reply)
        except (ValueError, KeyError, TypeError, InvalidTag) as e:
            raise OramClientError(f"session handshake failed: {e or type(e).__name__}") from None
        self.n_blocks, self.block_size, self.files = info["n_blocks"], info["block_size"], info["files"]
        # another client sharing the epoch file may have seen more since this one started
        if self.epoch_file is not None:
            self.highest_epoch = max(self.highest_epoch, self.epoch_file.read())
        self._check_epoch(int(info.get("epoch", 0)))
        self.counter = 0
        self.sessions_opened += 1

    def _check_epoch(self, epoch: int) -> None:
        """Refuses a store behind the highest epoch seen (in any reply, by any client sharing the
        epoch file); records a higher one."""
        if epoch < self.highest_epoch:
            self.close()
            raise OramClientError(f"the server's store is at epoch {epoch}, behind epoch {self.highest_epoch} "
                                  "already seen: a rolled-back copy, refused")
        if epoch > self.highest_epoch:
            self.highest_epoch = epoch
            if self.epoch_file is not None:
                self.highest_epoch = self.epoch_file.raise_to(epoch)

    def get(self, block_id: int) -> bytes:
        if not 0 <= block_id <= MAX_ID:
            raise OramRequestError(f"block id {block_id}: must be in 0..2^64-1")
        status, data, ctr = self._read(block_id)
        if status != 200:
            raise self._fail("/read", status, data)
        try:
            st, epoch, block = open_reply_epoch(self.key, self.sid, ctr, data)
        except InvalidTag:
            raise OramClientError(f"reply for block {block_id} fails authentication") from None
        # every reply carries the store's epoch, sealed: a rollback is seen mid-session too
        self._check_epoch(epoch)
        if st == STATUS_OK:
            return block
        if st == STATUS_UNKNOWN:
            raise OramRequestError(f"unknown block id {block_id}: the store holds blocks 0..{self.n_blocks}")
        if st == STATUS_INTEGRITY:
            raise OramClientError(f"block {block_id}: integrity check failed: the server's storage was modified")
        raise OramClientError(f"block {block_id}: storage failure on the server")

    def _read(self, block_id: int) -> tuple[int, bytes, int]:
        """(HTTP status, body, counter) of one read, retried on a cut reply and re-keyed once if
        the server no longer knows the session."""
        new_session, cuts = False, 0
        while True:
            # every attempt has a fresh counter: the server may have served (and counted) the
            # one whose reply was cut, and it accepts each counter once
            self.counter += 1
            ctr = self.counter
            try:
                status, data = self._post("/read", read_request(self.key, self.sid, ctr, block_id), resend=False)
                if status == 200 and len(data) != REPLY_HEAD + self.block_size + 16:
                    # every reply has this one size: a shorter one was cut on the way
                    self.close()
                    raise _Cut(f"{self.host}:{self.port}: reply of {len(data)} bytes cut short")
            except _Cut as e:
                cuts += 1
                self.retries += 1
                if cuts >= READ_ATTEMPTS:
                    raise OramClientError(f"{e} ({cuts} attempts)") from None
                continue
            if status == 401 and self._code(data) == "session" and not new_session:
                # the server restarted (or dropped this session): a new key exchange, then again
                new_session = True
                self._handshake()
                continue
            return status, data, ctr

    def manifest(self) -> dict:
        return {"n_blocks": self.n_blocks, "block_size": self.block_size, "files": self.files}

    def get_file(self, name: str) -> bytes:
        for f in self.files:
            if f["name"] == name or f["name"].rsplit("/", 1)[-1] == name:
                data = b"".join(self.get(f["first_block"] + i) for i in range(f["blocks"]))
                return data[: f["bytes"]]
        raise OramRequestError(f"no file named {name!r} in the store")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def __enter__(self) -> OramClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
