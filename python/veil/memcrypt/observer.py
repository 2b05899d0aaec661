"""memcrypt's attackers: the memory bus, and a program timing its own loads.

The paper's attacker (Shi, Lee et al. 2007, §2) owns the bus between the chip and the SDRAM: it
sees every access's address and time and every byte that crosses (ciphertext chunks, MAC tags,
a line's copy of its nonce), and may rewrite memory (integrity is tested elsewhere). It does not
see plaintext, the on-chip FVT or the keys. A second attacker, outside the paper, is a program
on the same machine that times its own loads (a cache-timing attacker): it sees each of its load
fills' latency, nothing on the bus.

The secret is the data's values under a fixed access pattern: the same lines are filled and
written back at the same points, only the words differ. The stream is generated here from the
seed (addresses, kinds, which words a writeback changes: the public work) and the secret pattern
(the values, from their own generator); memory stays consistent (a fill reads what was last
written). The models are the crate's own: `veil-memcrypt`'s functional model puts the bytes on
the bus, its timing model the accesses and latencies (`bus.rs`).

Windows are cut by record index; per window the features are
- spatial: equal ciphertext chunks (two chunks of one record; a chunk equal to one seen earlier
  at another line) and chunks with an odd fingerprint (a ciphertext bit), the same for MAC tags;
- volume: SDRAM accesses to data lines, to bitmap lines, to other metadata (MAC, counter lines);
- temporal: mean gap between access commands and mean access duration (bus); for the `loads`
  observer, the mean latency of the program's load fills.
"""

from __future__ import annotations

import json
import zlib
from functools import lru_cache

import numpy as np

from veil import _native
from veil.core.leak.observer import Observer, Run, paired_p, register_observer

WINDOW = 50  # records per window
# Lines the program touches: 512 pages of 64 lines, four times the bitmap cache's 128 entries and
# the TLB's reach, so that bitmap lines are evicted (written back) and fetched during a run.
FOOTPRINT = 512 * 64
BITMAP_REGION = 1 << 58  # bitmap lines live here (crates/veil-memcrypt/src/secure.rs)
META_REGION = 1 << 59  # MAC lines (mac_store = separate) and counter lines

SETTINGS = {
    "direct": "the paper's scheme: AES-256 direct (OCB-like) mode, re-ordering, ciphertext and MAC speculation; "
              "a page's bitmap line is written only when a line's bitmap changed",
    "direct-bitmap-always": "as direct, but every writeback rewrites its page's bitmap line (bitmap_write_if_changed=false)",
    "direct-nospec": "AES-256 direct mode, no speculation, no re-ordering (no bitmap lines)",
    "direct-adaptive": "as direct-bitmap-always, with adaptive re-ordering (reorder_policy=adaptive: a page whose "
                       "recent fills hold no frequent values stops re-ordering and reading its bitmap line)",
    "counter": "counter mode (AES-CTR pads per line and counter), re-ordering, ciphertext and MAC speculation",
    "counter-nospec": "counter mode, no speculation, no re-ordering",
    "ecb": "negative control: AES-ECB of each 16-byte chunk under one key, no tweak and no MAC, on the bus "
           "(timing as direct-nospec)",
}
PATTERNS = {
    "frequent": "mostly frequent values: each word zero (50%), one of 8 small constants (30%) or random (20%)",
    "frequent-b": "the same distribution as frequent with other draws (a same-secret twin: must not be flagged)",
    "random": "every word uniform random (nothing for the FVT to hold)",
}
SMALL = np.array([1, 2, 3, 4, 8, 16, 255, 0xFFFF_FFFF], dtype=np.uint64)

_OVERRIDES = {
    "direct": {},
    "direct-bitmap-always": {"bitmap_write_if_changed": False},
    "direct-nospec": {"ct_speculation": False, "mac_speculation": False, "reorder": False},
    # The bitmap write rule's own leak closed, so that what volume shows is the switch's.
    "direct-adaptive": {"bitmap_write_if_changed": False, "reorder_policy": "adaptive"},
    "counter": {"mode": "counter"},
    "counter-nospec": {"mode": "counter", "ct_speculation": False, "mac_speculation": False, "reorder": False},
    "ecb": {"ct_speculation": False, "mac_speculation": False, "reorder": False},
}


@lru_cache(maxsize=1)
def _defaults() -> dict:
    return json.loads(_native.memcrypt.defaults())


def _values(rng: np.random.Generator, pattern: str, n: int) -> np.ndarray:
    """`n` words drawn from the secret pattern."""
    rand = rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
    if pattern == "random":
        return rand
    u = rng.random(n)
    small = SMALL[rng.integers(0, len(SMALL), size=n)]
    return np.where(u < 0.5, np.uint64(0), np.where(u < 0.8, small, rand))


def stream(pattern: str, seed: int, size: int) -> list[list]:
    """The record stream: public work from `seed` alone, word values from (seed, pattern)."""
    pub = np.random.default_rng([seed, 1])
    sec = np.random.default_rng([seed, zlib.crc32(pattern.encode()), 2])
    kinds = pub.choice(3, size=size, p=[0.6, 0.1, 0.3])
    lines = pub.integers(0, FOOTPRINT, size=size)
    insts = pub.geometric(1 / 40, size=size)
    changed = pub.random((size, 8)) < 0.5  # which words a writeback rewrites
    memory: dict[int, np.ndarray] = {}
    out = []
    for i in range(size):
        line = int(lines[i])
        if line not in memory:  # laid down by the loader
            memory[line] = _values(sec, pattern, 8)
        if kinds[i] == 2:
            w = memory[line].copy()
            w[changed[i]] = _values(sec, pattern, int(changed[i].sum()))
            memory[line] = w
        out.append([int(kinds[i]), line, int(insts[i]), [int(x) for x in memory[line]]])
    return out


def bus_view(setting: str, pattern: str, seed: int, size: int, records: list | None = None) -> dict:
    """What crosses the bus, per record (and, apart, the program's load latencies); `records`:
    the stream of (pattern, seed, size) when already made."""
    cfg = {**_defaults(), **_OVERRIDES[setting], "warmup_records": 0, "pointer_dependences": False,
           "seed": int(seed)}
    run = {"config": cfg, "ecb": setting == "ecb", "records": records or stream(pattern, seed, size)}
    return json.loads(_native.memcrypt.bus_view(json.dumps(run)))


def _equalities(fps: list[list[int]], lines: np.ndarray) -> np.ndarray:
    """Per record: (pairs of equal chunks within it, chunks equal to one seen at another line,
    chunks whose fingerprint is odd). The last is a bit of the ciphertext: half the chunks
    whatever the plaintext under a pseudorandom scheme, so its share is where a bias of the
    values would show, and a feature into which an effect can be planted."""
    seen: dict[int, int] = {}
    out = np.zeros((len(fps), 3))
    for i, f in enumerate(fps):
        out[i, 0] = len(f) - len(set(f))
        out[i, 1] = sum(1 for x in f if seen.get(x, lines[i]) != lines[i])
        out[i, 2] = sum(x & 1 for x in f)
        for x in f:
            seen[x] = lines[i]
    return out


def _windows(x: np.ndarray, reduce: str = "sum") -> np.ndarray:
    n = (len(x) // WINDOW) * WINDOW
    w = x[:n].reshape(n // WINDOW, WINDOW, -1)
    return w.sum(axis=1) if reduce == "sum" else w.mean(axis=1)


def bus_features(view: dict, lines: np.ndarray) -> dict[str, np.ndarray]:
    ct = _equalities(view["ct"], lines)
    tags = _equalities(view["tags"], lines)
    acc = view["accesses"]
    counts = np.zeros((len(acc), 3))
    first = np.full(len(acc), np.nan)
    dur = np.zeros(len(acc))
    for i, a in enumerate(acc):
        for t, ln, done in a:
            counts[i, 0 if ln < BITMAP_REGION else 1 if ln < META_REGION else 2] += 1
            dur[i] += done - t
        if a:
            first[i] = min(t for t, _, _ in a)
    # The gap from the previous record's first command to this one's (records with no access
    # inherit the last time: a gap of 0), and the mean duration of the accesses.
    t = np.maximum.accumulate(np.nan_to_num(first, nan=0.0))
    gaps = np.diff(t, prepend=0.0)
    per = np.where(counts.sum(axis=1) > 0, dur / np.maximum(counts.sum(axis=1), 1), 0.0)
    return {"spatial": _windows(np.hstack([ct, tags])), "volume": _windows(counts),
            "temporal": _windows(np.column_stack([gaps, per]), "mean")}


def _run_bus(setting: str, pattern: str, seed: int, size: int) -> Run:
    recs = stream(pattern, seed, size)
    view = bus_view(setting, pattern, seed, size, recs)
    lines = np.array([r[1] for r in recs])
    acc = [a for per in view["accesses"] for a in per]
    cost = {"cycles": max((d for _, _, d in acc), default=0.0), "accesses": float(len(acc))}
    return Run(bus_features(view, lines), counts=("volume",), cost=cost)


def _run_loads(setting: str, pattern: str, seed: int, size: int) -> Run:
    recs = stream(pattern, seed, size)
    view = bus_view(setting, pattern, seed, size, recs)
    lat = np.array(view["load_latency"])
    is_load = np.array([r[0] == 0 for r in recs], dtype=float)
    n = (len(lat) // WINDOW) * WINDOW
    tot = lat[:n].reshape(-1, WINDOW).sum(axis=1)
    cnt = np.maximum(is_load[:n].reshape(-1, WINDOW).sum(axis=1), 1)
    return Run({"temporal": (tot / cnt)[:, None]}, cost={"mean_load_cycles": float(lat.sum() / max(is_load.sum(), 1))})


OBSERVER = register_observer(Observer(
    system="memcrypt", name="bus",
    sees="the memory bus between chip and SDRAM (paper §2): every SDRAM access's line address and times (data, "
         "bitmap, MAC and counter lines), the ciphertext chunks and MAC tags that cross (as equality classes) and each "
         "line's copy of its nonce; not the plaintext, the FVT, the keys or the core's load latencies",
    settings=SETTINGS, patterns=PATTERNS, run=_run_bus, leaky=("ecb",),
    defences=("direct", "direct-bitmap-always", "direct-nospec", "direct-adaptive", "counter", "counter-nospec"),
    default_size=2000,
    table=tuple((s, "frequent", "random") for s in ("ecb", "direct", "direct-bitmap-always", "direct-nospec")),
    table_size=1000, min_size=2 * WINDOW, paired_seed=True))

LOADS = register_observer(Observer(
    system="memcrypt", name="loads",
    sees="a program on the same core timing its own load fills (beyond the paper's bus attacker): the latency of "
         "each of its L2 load misses, averaged per window; nothing on the bus",
    settings=SETTINGS, patterns=PATTERNS, run=_run_loads, leaky=(),
    defences=("direct-nospec", "counter-nospec"), default_size=2000,
    table=(("direct", "frequent", "random"),),
    table_size=1000, min_size=2 * WINDOW, paired_seed=True))


def measure(obs: Observer, setting: str, a: str, b: str, seeds: int = 11, size: int | None = None) -> dict[str, float]:
    """Exact sign-flip p per feature family over `seeds` seed pairs (run pair = unit)."""
    size = size or obs.default_size
    return paired_p([(obs.run(setting, a, s, size), obs.run(setting, b, s, size)) for s in range(1, seeds + 1)])


if __name__ == "__main__":  # python -m veil.memcrypt.observer: every setting, frequent vs random and the twin
    for o in (OBSERVER, LOADS):
        for st in SETTINGS:
            for pa, pb in (("frequent", "random"), ("frequent", "frequent-b")):
                ps = measure(o, st, pa, pb)
                print(f"{o.system}.{o.name:5} {st:21} {pa} vs {pb:10} " + "  ".join(f"{f} p={p:.4g}" for f, p in ps.items()))
