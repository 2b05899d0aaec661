"""The storage server as `veil leak`'s attacker (docs/leak.md, "oram").

PRO-ORAM's threat model (and Path ORAM's): the server holds every slot and sees every storage
call, which slot of which region is read or written, by which enclave (PRO-ORAM's access and
shuffle enclaves are separate processes), how many bytes, and in what order requests arrive;
it sees no plaintext (slots are sealed) and not which block a request asked for. The secret is
which blocks the user reads. The plain encrypted store reads block i from slot i: the negative
control, which must leak.

The view comes from the engine's own access log (veil_oram::observe): per storage call the
request it happened during, the actor, the op, the region and the slot. The run is cut into
windows of `WINDOW` consecutive requests. Time is the server's logical clock (request order and
calls per request): wall-clock times are not recorded, so runs are reproducible for a seed.
"""

from __future__ import annotations

import numpy as np

from veil.core import ConfigError

__all__ = ["WINDOW", "BINS", "ENGINES", "PATTERNS", "secret_ids", "view", "run", "OBSERVER"]

WINDOW = 8  # requests per window
BINS = 32  # slot bins per op: a slot's position in its region, in 32 equal parts
N_BLOCKS = 256
BLOCK_SIZE = 64

ENGINES = {
    "proram": "PRO-ORAM: square-root ORAM, next epoch shuffled by a separate enclave beside the requests",
    "pathoram": "Path ORAM (Z = 4): every request reads and writes one root-to-leaf path",
    "plain": "plain encrypted store: block i in slot i (negative control: must leak)",
}

PATTERNS = {
    "uniform": "every read a block drawn uniformly",
    "hot": "90% of reads from a hot set (the first 1/16 of the blocks), the rest uniform",
    "repeat": "one block (block 0) read again and again",
    "fresh": "every read a block not read before in its cycle (a random order of all blocks, repeated)",
}

# Actor and op codes of veil_oram::storage (declaration order).
ACTORS = ("Init", "Access", "Shuffle", "PathOram", "Plain")
READ, WRITE = 0, 1
SHUFFLE = ACTORS.index("Shuffle")


def secret_ids(pattern: str, n: int, requests: int, seed: int) -> np.ndarray:
    """The block ids the user reads: the secret, never part of the view."""
    rng = np.random.default_rng([seed, 0x1D5])
    if pattern == "uniform":
        return rng.integers(0, n, requests)
    if pattern == "hot":
        hot = max(1, n // 16)
        return np.where(rng.random(requests) < 0.9, rng.integers(0, hot, requests), rng.integers(0, n, requests))
    if pattern == "repeat":
        return np.zeros(requests, dtype=np.int64)
    if pattern == "fresh":
        cycles = -(-requests // n)
        return np.concatenate([rng.permutation(n) for _ in range(cycles)])[:requests]
    raise ConfigError(f"pattern: unknown {pattern!r}; known: {', '.join(PATTERNS)}")


def view(engine: str, ids: np.ndarray, seed: int, n_blocks: int = N_BLOCKS, block_size: int = BLOCK_SIZE) -> dict:
    """What the server sees of reading `ids`: one array per field of a storage call, plus the
    slot size and each region's slot count (public geometry)."""
    from .engine import native

    try:
        req, actor, op, region, index, slot, extents = native().observe(engine, n_blocks, block_size, seed,
                                                                         [int(i) for i in ids])
    except ValueError as e:
        raise ConfigError(str(e)) from None
    return {"request": np.asarray(req, dtype=np.int64), "actor": np.frombuffer(bytes(actor), dtype=np.uint8).astype(np.int64),
            "op": np.frombuffer(bytes(op), dtype=np.uint8).astype(np.int64), "region": np.asarray(region, dtype=np.int64),
            "slot": np.asarray(index, dtype=np.int64), "slot_bytes": int(slot),
            "region_slots": np.asarray(extents, dtype=np.int64)}


def features(v: dict, requests: int) -> dict:
    """Per window of WINDOW requests: where (request-path reads and writes per slot bin), how much
    (calls and bytes) and when (calls per request, how recently each slot read was read before)."""
    nw = requests // WINDOW
    w = v["request"] // WINDOW
    keep = w < nw
    path = keep & (v["actor"] != SHUFFLE)
    shuf = keep & (v["actor"] == SHUFFLE)
    extent = np.maximum(v["region_slots"][v["region"]], 1)
    b = np.minimum(v["slot"] * BINS // extent, BINS - 1)
    cols = v["op"] * BINS + b
    spatial = np.zeros((nw, 2 * BINS))
    np.add.at(spatial, (w[path], cols[path]), 1)
    volume = np.zeros((nw, 5))
    for c, m in enumerate((path & (v["op"] == READ), path & (v["op"] == WRITE), shuf & (v["op"] == READ),
                           shuf & (v["op"] == WRITE))):
        np.add.at(volume[:, c], w[m], 1)
    volume[:, 4] = volume[:, :4].sum(axis=1) * v["slot_bytes"]
    # When: calls per request (the server's clock advances with them) and, per read on the
    # request path, how many requests ago that slot was last read (first reads count apart).
    per_req = np.bincount(v["request"][path], minlength=nw * WINDOW)[: nw * WINDOW].reshape(nw, WINDOW)
    temporal = np.zeros((nw, 4))
    temporal[:, 0] = per_req.mean(axis=1)
    temporal[:, 1] = per_req.max(axis=1)
    last: dict[tuple[int, int], int] = {}
    reads = np.flatnonzero(path & (v["op"] == READ))
    gaps = np.zeros(nw)
    firsts = np.zeros(nw)
    n_reads = np.zeros(nw)
    for i in reads:
        key = (int(v["region"][i]), int(v["slot"][i]))
        r = int(v["request"][i])
        wi = r // WINDOW
        n_reads[wi] += 1
        if key in last:
            gaps[wi] += np.log1p(r - last[key])
        else:
            firsts[wi] += 1
        last[key] = r
    repeats = n_reads - firsts
    temporal[:, 2] = np.divide(gaps, repeats, out=np.zeros(nw), where=repeats > 0)
    temporal[:, 3] = np.divide(firsts, n_reads, out=np.zeros(nw), where=n_reads > 0)
    return {"spatial": spatial, "volume": volume, "temporal": temporal}


def run(setting: str, pattern: str, seed: int, size: int):
    from veil.core.leak.observer import Run

    if size < 2 * WINDOW:
        raise ConfigError(f"size: {size} requests; at least {2 * WINDOW} (two windows of {WINDOW})")
    ids = secret_ids(pattern, N_BLOCKS, size, seed)
    v = view(setting, ids, seed)
    f = features(v, size)
    calls = len(v["request"])
    return Run(f, counts=("spatial",), cost={"storage_bytes_per_request": calls * v["slot_bytes"] / size,
                                             "storage_calls_per_request": calls / size})


def _register():
    from veil.core.leak.observer import Observer, register_observer

    return register_observer(Observer(
        system="oram", name="server",
        sees=("the storage server: every storage call (read or write, region, slot, slot size in bytes, which "
              "enclave issued it) in request order; not plaintext, not the block ids requested, not wall-clock "
              "times (its clock here is request order and calls per request)"),
        settings=ENGINES, patterns=PATTERNS, run=run, leaky=("plain",), defences=("proram", "pathoram"),
        default_size=256,
        table=tuple((e, a, b) for e in ENGINES for a, b in (("uniform", "hot"), ("repeat", "fresh"))),
        table_size=128, min_size=2 * WINDOW))


OBSERVER = _register()

# The active attacker (tamper a slot, watch the replies) lives in its own module; `veil leak`
# imports only this one, so importing it here registers `oram.tamper` too.
from veil.oram import tamper as _tamper  # noqa: E402,F401
