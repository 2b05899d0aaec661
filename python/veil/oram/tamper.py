"""The active storage attacker as `veil leak`'s observer `oram.tamper` (docs/leak.md, "oram").

PRO-ORAM's storage server may also write: it flips a bit of one slot it picks, then watches
what the client is told, request by request, from where a network or server-host observer
stands: each reply's HTTP status, its size in bytes and how long the request took. It sees no
plaintext (replies are sealed) and not which block a request asked for. The secret is whether
the user reads the block that sat in the tampered slot or other blocks. The attacker does not
know which block a slot holds; the observer names the block in the slot it flips
(`debug_slot_of`) only to set up the secret patterns, and that name never enters the view.

Settings: `service`, the constant-work HTTP service (docs/oram.md, "Integrity": a failed
storage check is answered with the same sealed 200 of 1 + 8 + B + 16 bytes after the same copies,
sealing and wait), run in this process on a loopback port without TLS (TLS adds the same bytes
to every reply); and `engine`, the negative control: the engine's own answer, as a service that
passed storage errors on would give it (Veil's did before the constant-work replies) — an error
naming the slot instead of a block, returned as soon as the check fails. Times are wall-clock
(`time.perf_counter_ns` around each round trip), so unlike `oram.server` a run is not
bit-reproducible for a seed: the public work and the secret are.
"""

from __future__ import annotations

import http.client
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from veil.core import ConfigError

__all__ = ["WINDOW", "SETTINGS", "PATTERNS", "TARGET", "n_blocks", "secret_ids", "replies", "features", "run", "OBSERVER"]

WINDOW = 4  # requests per window
MIN_BLOCKS = 1024
BLOCK_SIZE = 64
TAG = 16  # AES-GCM tag stored after each sealed block
TARGET = 0  # the block in the slot the attacker flips
TOKEN = "t0ken-for-the-tamper-observer-0123456789"

SETTINGS = {
    "service": "the HTTP service: every reply a sealed 200 of one size after the same work, a failed check included",
    "engine": "the engine's own answer: an error naming the slot, at once (negative control: must leak)",
}

PATTERNS = {
    "tampered": "every read asks for the block whose slot the attacker flipped",
    "other": "every read asks for a block drawn uniformly from the others",
}


def n_blocks(requests: int) -> int:
    """Store size for a run: PRO-ORAM's epoch is ceil(sqrt N) requests, so with N >= requests^2
    the whole run falls in the epoch whose slot was flipped (the next epoch re-seals every block
    into fresh slots, and a shuffle that meets the bad slot stops the store for both secrets)."""
    return max(MIN_BLOCKS, requests * requests)


def secret_ids(pattern: str, requests: int, seed: int) -> np.ndarray:
    """The block ids the user reads: the secret, never part of the view."""
    if pattern == "tampered":
        return np.full(requests, TARGET, dtype=np.int64)
    if pattern == "other":
        rng = np.random.default_rng([seed, 0x7A3])
        return rng.integers(1, n_blocks(requests), requests)  # every block but TARGET (= 0)
    raise ConfigError(f"pattern: unknown {pattern!r}; known: {', '.join(PATTERNS)}")


def _flip(store, root: Path) -> None:
    """The attacker's write: one bit of the slot now holding TARGET, on disk."""
    region, slot = store.debug_slot_of(TARGET)
    with open(root / f"region{region}.dat", "r+b") as f:
        f.seek(slot * (BLOCK_SIZE + TAG) + 3)
        b = f.read(1)[0]
        f.seek(slot * (BLOCK_SIZE + TAG) + 3)
        f.write(bytes([b ^ 4]))


def _engine(store, ids: np.ndarray) -> list[tuple[int, int, int]]:
    out = []
    for i in ids:
        t0 = time.perf_counter_ns()
        try:
            status, size = 200, len(store.read(int(i)))
        except RuntimeError as e:  # what a service passing the engine's error on would send
            status, size = 500, len(str(e).encode())
        out.append((status, size, time.perf_counter_ns() - t0))
    return out


def _service(store, ids: np.ndarray) -> list[tuple[int, int, int]]:
    from .protocol import Handshake, read_request

    srv = store.serve(TOKEN, log="off")
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=30)
    try:
        hs = Handshake(TOKEN)
        conn.request("POST", "/session", body=hs.hello())
        r = conn.getresponse()
        sid, key, _ = hs.finish(json.loads(r.read()))
        out = []
        for ctr, i in enumerate(ids, start=1):
            body = read_request(key, sid, ctr, int(i))
            t0 = time.perf_counter_ns()
            conn.request("POST", "/read", body=body)
            r = conn.getresponse()
            n = len(r.read())
            out.append((r.status, n, time.perf_counter_ns() - t0))
        return out
    finally:
        conn.close()
        srv.stop()


def replies(setting: str, ids: np.ndarray, seed: int) -> list[tuple[int, int, int]]:
    """What the attacker sees of reading `ids` after its flip: per request (status, reply bytes,
    nanoseconds from request to reply). Nothing else leaves this function."""
    from .engine import native

    if setting not in SETTINGS:
        raise ConfigError(f"setting: unknown {setting!r}; known: {', '.join(SETTINGS)}")
    d = tempfile.mkdtemp(prefix="veil-oram-tamper-")
    try:
        root = Path(d) / "store"
        store = native().Store.init(str(root), BLOCK_SIZE, n_blocks=n_blocks(len(ids)), seed=seed, threads=1)
        _flip(store, root)
        seen = (_service if setting == "service" else _engine)(store, ids)
        # dropping the last reference joins PRO-ORAM's background shuffle, which may still be
        # writing the next epoch's region: only then may the directory go
        del store
        return seen
    finally:
        shutil.rmtree(d, ignore_errors=True)


def features(seen: list[tuple[int, int, int]], requests: int) -> dict[str, np.ndarray]:
    """Per window of WINDOW requests: how much (replies not 200, reply bytes) and when (mean and
    largest request-to-reply time, microseconds). Replies carry no "where": no spatial family."""
    nw = requests // WINDOW
    a = np.asarray(seen[: nw * WINDOW], dtype=float).reshape(nw, WINDOW, 3)
    volume = np.stack([(a[:, :, 0] != 200).sum(axis=1), a[:, :, 1].sum(axis=1)], axis=1)
    us = a[:, :, 2] / 1e3
    temporal = np.stack([us.mean(axis=1), us.max(axis=1)], axis=1)
    return {"volume": volume, "temporal": temporal}


def run(setting: str, pattern: str, seed: int, size: int):
    from veil.core.leak.observer import Run

    if size < 2 * WINDOW:
        raise ConfigError(f"size: {size} requests; at least {2 * WINDOW} (two windows of {WINDOW})")
    seen = replies(setting, secret_ids(pattern, size, seed), seed)
    lat = np.asarray([s[2] for s in seen], dtype=float)
    return Run(features(seen, size), cost={"latency_us_per_request": float(lat.mean() / 1e3),
                                           "reply_bytes_per_request": float(np.mean([s[1] for s in seen]))})


def _register():
    from veil.core.leak.observer import Observer, register_observer

    return register_observer(Observer(
        system="oram", name="tamper",
        sees=("the active storage server: after flipping one bit of a slot it picks, per request the reply's HTTP "
              "status, its size in bytes and the time from request to reply (wall clock, loopback); not plaintext, "
              "not the block ids requested"),
        settings=SETTINGS, patterns=PATTERNS, run=run, leaky=("engine",), defences=("service",),
        default_size=32, table=tuple((s, "tampered", "other") for s in SETTINGS), table_size=32,
        min_size=2 * WINDOW))


OBSERVER = _register()
