"""The service's wire protocol (version 2), client side; the server is `veil_oram::http`.

* `K_auth = HMAC-SHA256(token, "veil-oram/1 auth")`: the token itself is never sent.
* Handshake, `POST /session` with `{"client_pub", "mac"}`: an ephemeral X25519 key and
  `HMAC(K_auth, "veil-oram/1 hello" || client_pub)`. The server returns its ephemeral key, a
  session id and a proof; `prk = HMAC(K_auth, X25519 secret)`, the session key is
  `HMAC(prk, "veil-oram/1 session" || transcript)`, the proof `HMAC(prk, "veil-oram/1 server" ||
  transcript)` with `transcript = client_pub || server_pub || sid`. Without an ephemeral private
  key an observer (or a replay of the hello) cannot get the session key, with or without TLS.
* `POST /read`, body `sid || counter (8, big-endian) || AES-256-GCM(id as u64 LE)`; the reply is
  `AES-256-GCM(status || epoch (8, big-endian) || B bytes)` whatever happened, so success, an
  unknown id and a failed storage check cannot be told apart on the wire. `epoch` is the
  store's count of epochs ended by requests, as durably recorded: it never goes down on an
  honest server and a restart does not advance it, so the client checks it on every reply
  (version 1's replies had no epoch; the key-derivation labels still say "veil-oram/1").
"""

from __future__ import annotations

import hashlib
import hmac
import json

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PROTOCOL = "veil-oram/2"
#: status byte and epoch before the block in every sealed reply
REPLY_HEAD = 1 + 8
#: Shortest access token either side accepts (128 bits as hex digits).
MIN_TOKEN_CHARS = 32
SID_LEN = 16
MAX_ID = (1 << 64) - 1
STATUS_OK, STATUS_UNKNOWN, STATUS_INTEGRITY, STATUS_STORAGE = 0, 1, 2, 3
_RAW = dict(encoding=serialization.Encoding.Raw, format=serialization.PublicFormat.Raw)


def _mac(key: bytes, *parts: bytes) -> bytes:
    return hmac.new(key, b"".join(parts), hashlib.sha256).digest()


def auth_key(token: str) -> bytes:
    return _mac(token.encode(), b"veil-oram/1 auth")


def _nonce(direction: int, counter: int) -> bytes:
    return bytes([direction, 0, 0, 0]) + counter.to_bytes(8, "big")


class Handshake:
    """The client's half of the key exchange."""

    def __init__(self, token: str):
        self.auth = auth_key(token)
        self._priv = X25519PrivateKey.generate()
        self.client_pub = self._priv.public_key().public_bytes(**_RAW)

    def hello(self) -> bytes:
        mac = _mac(self.auth, b"veil-oram/1 hello", self.client_pub)
        return json.dumps({"client_pub": self.client_pub.hex(), "mac": mac.hex()}).encode()

    def finish(self, reply: dict) -> tuple[bytes, bytes, dict]:
        """(sid, session key, store info) from the server's reply; ValueError if its proof is wrong."""
        sid, server_pub = bytes.fromhex(reply["session"]), bytes.fromhex(reply["server_pub"])
        if len(sid) != SID_LEN or len(server_pub) != 32:
            raise ValueError("malformed session reply")
        shared = self._priv.exchange(X25519PublicKey.from_public_bytes(server_pub))
        prk = _mac(self.auth, shared)
        transcript = self.client_pub + server_pub + sid
        if not hmac.compare_digest(_mac(prk, b"veil-oram/1 server", transcript), bytes.fromhex(reply["proof"])):
            raise ValueError("the server's proof is wrong: it does not hold this access token")
        key = _mac(prk, b"veil-oram/1 session", transcript)
        info = json.loads(AESGCM(key).decrypt(_nonce(3, 0), bytes.fromhex(reply["info"]), sid))
        return sid, key, info


def read_request(key: bytes, sid: bytes, counter: int, block_id: int) -> bytes:
    c = counter.to_bytes(8, "big")
    return sid + c + AESGCM(key).encrypt(_nonce(1, counter), block_id.to_bytes(8, "little"), b"req" + sid + c)


def open_reply_epoch(key: bytes, sid: bytes, counter: int, body: bytes) -> tuple[int, int, bytes]:
    """(status, store epoch, block) of a read reply; raises cryptography's InvalidTag if it was
    altered."""
    c = counter.to_bytes(8, "big")
    pt = AESGCM(key).decrypt(_nonce(2, counter), body, b"rep" + sid + c)
    return pt[0], int.from_bytes(pt[1:REPLY_HEAD], "big"), pt[REPLY_HEAD:]


def open_reply(key: bytes, sid: bytes, counter: int, body: bytes) -> tuple[int, bytes]:
    """(status, block) of a read reply; raises cryptography's InvalidTag if it was altered."""
    st, _, block = open_reply_epoch(key, sid, counter, body)
    return st, block
