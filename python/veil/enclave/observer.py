"""enclave's attacker: the untrusted operating system.

The paper's threat model (Nye and Khan, SSE; SGX-like enclaves) trusts the enclave's code and
memory and nothing else: the OS schedules the enclave's threads, carries out every system call
the enclave makes (directly through an exit under EX-B, through an untrusted responder thread
under EX-L, through the SSE's responder under SSE), and sees what it is asked to do: each exit
and its time, each call's arguments and return values (how many bytes a `recv`, `read` or `send`
moves), the responders it wakes and the context switches it makes. It does not see enclave
memory or the enclave's computation, only how long the enclave takes between the calls.

The secret is what the enclave does for a request: which page it serves (a small or a large
file: the sizes the `read` and `send` calls carry) or a branch on a secret that adds enclave
computation and no call, or whether the enclave holds the page in its own memory (a cache hit
makes no file calls: a secret-dependent call pattern). Windows are request batches in order: window i is one run of the
simulator (`veil-enclave`, the calibrated Server workload of docs/enclave-model.md) serving
`REQUESTS` requests on `WORKERS` workers, its machine noise seeded from (seed, i, pattern). Per
window:
- volume: exits (ocalls and ecalls), system calls the OS carries out, bytes those calls move
  (recv's request, the header and the page sent, the page read), responder sleeps (wake-ups by
  the OS timer) and context switches;
- temporal: how long the batch took, and the OS's own time in the calls it carried out.
The SGX-like policy is observed (every call goes to the OS); under the SEV-like one the guest
kernel inside the enclave handles most calls and the hypervisor sees only device calls.
"""

from __future__ import annotations

import json
import zlib
from functools import lru_cache

import numpy as np

from veil import _native
from veil.core.leak.observer import Observer, Run, paired_p, register_observer

WORKERS = 2
REQUESTS = 4  # per window (two per worker)

SETTINGS = {
    "ex-b": "exit-based: every system call is an ocall out of the enclave and an ecall back (the negative control)",
    "ex-l": "exitless: calls posted to a shared buffer, carried out by untrusted responder threads",
    "sse": "SSE (hardware penalty variant): calls carried out by responders on the tile's security service engine",
}
_MODEL = {"ex-b": "ex-b", "ex-l": "ex-l", "sse": "sse-hp"}
PATTERNS = {
    "small-pages": "every request is for a 4 KB page",
    "small-pages-b": "the same secret as small-pages (a same-secret twin: other machine noise; must not be flagged)",
    "large-pages": "every request is for a 16 KB page",
    "branch-short": "a branch on a secret takes the short side: the enclave computes as calibrated",
    "branch-long": "the long side: 10% more enclave computation per request, no extra system call",
    "cache-miss": "every page is read from its file (ten system calls per request)",
    "cache-hit": "every page is held in enclave memory (four system calls: no open, fstat, lseek, read, close)",
}
_PAGE = {"small-pages": 4096, "small-pages-b": 4096}  # else 16 KB
_WORK = {"branch-long": 1.1}


@lru_cache(maxsize=1)
def _defaults() -> dict:
    return json.loads(_native.enclave.defaults())


def _excluded(setting: str, a: str, b: str) -> str | None:
    page = {a, b} <= {"small-pages", "small-pages-b", "large-pages"}
    branch = {a, b} <= {"branch-short", "branch-long"}
    cache = {a, b} <= {"cache-miss", "cache-hit"}
    if not (page or branch or cache):
        return f"{a!r} and {b!r} differ in more than one secret: compare page sizes, branch sides or cache hits"
    return None


def window_configs(setting: str, pattern: str, seed: int, size: int) -> list[dict]:
    d = _defaults()
    noise = zlib.crc32(pattern.encode())
    return [{**d, "model": _MODEL[setting], "policy": "sgx", "workers": WORKERS, "tiles": WORKERS, "requests": REQUESTS,
             "page_bytes": _PAGE.get(pattern, 16384), "cached_pages": pattern == "cache-hit",
             "work_scale": d["work_scale"] * _WORK.get(pattern, 1.0),
             "seed": int(np.random.default_rng([seed, i, noise]).integers(1, 2**31))} for i in range(size)]


def os_view(setting: str, pattern: str, seed: int, size: int) -> list[dict]:
    """Per window, what the OS sees (and nothing else of the simulator's result)."""
    cfgs = window_configs(setting, pattern, seed, size)
    out = []
    for c, r in zip(cfgs, json.loads(_native.enclave.simulate_many(json.dumps(cfgs)))):
        if "Err" in r:
            raise RuntimeError(f"enclave simulation: {r['Err']}")
        r = r.get("Ok", r)
        k = r["counters"]
        served = r["requests_completed"]
        out.append({
            "exits": k["ocalls"] + k["ecalls"],
            "syscalls": k["calls_local"] + k["calls_completed"],
            # recv returns the request, send takes the header and the page, read (when the page is
            # not cached) returns the page.
            "syscall_bytes": served * (c["http_request_bytes"] + c["header_bytes"]
                                       + (1 if c["cached_pages"] else 2) * c["page_bytes"]),
            "responder_sleeps": k["responder_sleeps"],
            "ctx_switches": k["ctx_switches"],
            "cycles": r["completion_cycles"],
            # EX-B's calls run on the worker's own core (its breakdown), the others' on responders.
            "os_call_cycles": (r["breakdown"]["syscall"] * WORKERS if setting == "ex-b"
                               else k["responder_syscall_cycles"]),
        })
    return out


VOLUME = ("exits", "syscalls", "syscall_bytes", "responder_sleeps", "ctx_switches")
TEMPORAL = ("cycles", "os_call_cycles")


def _run(setting: str, pattern: str, seed: int, size: int) -> Run:
    v = os_view(setting, pattern, seed, size)
    vol = np.array([[w[f] for f in VOLUME] for w in v], dtype=float)
    tim = np.array([[w[f] for f in TEMPORAL] for w in v], dtype=float)
    return Run({"volume": vol, "temporal": tim}, cost={"cycles": float(tim[:, 0].sum())})


OBSERVER = register_observer(Observer(
    system="enclave", name="os",
    sees="the untrusted OS (SGX-like policy): each exit and its time, every system call it carries out with the bytes "
         "its arguments and results move, the responders it wakes and the context switches it makes, and how long each "
         "batch of requests takes; not enclave memory or computation",
    settings=SETTINGS, patterns=PATTERNS, run=_run, leaky=("ex-b",), defences=("ex-l", "sse"), default_size=20,
    table=tuple((s, a, b) for s in SETTINGS for a, b in (("cache-miss", "cache-hit"), ("branch-short", "branch-long"))),
    table_size=8, min_size=2, excluded=_excluded))


def measure(setting: str, a: str, b: str, seeds: int = 11, size: int | None = None) -> dict[str, float]:
    """Exact sign-flip p per feature family over `seeds` seed pairs (run pair = unit)."""
    size = size or OBSERVER.default_size
    return paired_p([(_run(setting, a, s, size), _run(setting, b, s, size)) for s in range(1, seeds + 1)])


if __name__ == "__main__":  # python -m veil.enclave.observer
    for st in SETTINGS:
        for pa, pb in (("cache-miss", "cache-hit"), ("small-pages", "large-pages"), ("branch-short", "branch-long"),
                       ("small-pages", "small-pages-b")):
            ps = measure(st, pa, pb)
            print(f"enclave.os {st:5} {pa:12} vs {pb:13} " + "  ".join(f"{f} p={p:.4g}" for f, p in ps.items()))
