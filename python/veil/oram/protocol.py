"""The service's wire protocol, shared by server and client.

A client proves it holds the access token and gets a session id; both sides derive the
session key as HMAC-SHA256(token, "veil-oram-session" || sid)[:16], so the key never crosses
the wire. Each reply is AES-GCM under that key, nonce || ciphertext || tag, with the request
(session, resource) as associated data so a reply cannot be replayed for another request.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SESSION_HEADER = "X-Veil-Session"
MAX_PATH = 256
MAX_BODY = 4096


def session_key(token: str, sid: str) -> bytes:
    return hmac.new(token.encode(), b"veil-oram-session" + sid.encode(), hashlib.sha256).digest()[:16]


def seal(key: bytes, aad: str, data: bytes) -> bytes:
    nonce = os.urandom(12)
    return nonce + AESGCM(key).encrypt(nonce, data, aad.encode())


def open_sealed(key: bytes, aad: str, blob: bytes) -> bytes:
    return AESGCM(key).decrypt(blob[:12], blob[12:], aad.encode())


def tokens_equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())
