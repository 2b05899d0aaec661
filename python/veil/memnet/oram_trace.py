"""Derived traces for the ghost routing evaluation: a program trace cut to its first records
per thread (quick mode), and the same program behind the coarse-grain network ORAM
(secure_model.network_oram) as the memory system sees it: every access becomes the reads and
writes of one tree path of modules, placed at physical addresses (page_mapping = identity).

Files are written once, next to the source trace, under a name that carries the source's
content hash and the parameters; the memsys config names them as `trace`, whose content hash
keys the result store, so a changed derivation never reads back a stale result."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from veil.core import ConfigError
from veil.trace.format import LOAD_FILL, WRITEBACK, TraceReader, TraceWriter

from .secure_model import default_line_address, oram_tree_paths

DEFAULT_MAPPING = "RW:VL:CB:LY:CLL"
# Rows drawn for ORAM placements: any row works (the lookup inside a module is hidden); a small
# range keeps every address far inside the smallest module configuration.
ORAM_ROWS = 4096
CHUNK = 1 << 15


def _digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=8)
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def _out_dir(src: Path) -> Path:
    d = src.parent / "memnet-derived"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _atomic(out: Path, write) -> Path:
    if out.exists():
        return out
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    try:
        write(tmp)
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def trace_prefix(src: str | Path, per_thread: int) -> Path:
    """The first `per_thread` records of every thread of `src` (a quick-mode workload)."""
    src = Path(src)
    if per_thread < 1:
        raise ConfigError("trace prefix: per_thread must be >= 1")
    out = _out_dir(src) / f"{src.stem}.{_digest(src)}.first{per_thread}.trc"

    def write(tmp: Path) -> None:
        with TraceReader(src) as r:
            header = dict(r.header, derived=f"first {per_thread} records per thread of {src.name}")
            w = TraceWriter(tmp, header)
            seen: dict[int, int] = {}
            for chunk in r.chunks(CHUNK):
                keep = np.zeros(len(chunk), bool)
                for t in np.unique(chunk["thread"]):
                    idx = np.flatnonzero(chunk["thread"] == t)
                    room = max(0, per_thread - seen.get(int(t), 0))
                    keep[idx[:room]] = True
                    seen[int(t)] = seen.get(int(t), 0) + min(room, len(idx))
                w.write(chunk[keep])
            w.finish()

    return _atomic(out, write)


def oram_trace(src: str | Path, *, modules: int, seed: int, vaults: int = 16, layers: int = 4,
               address_mapping: str = DEFAULT_MAPPING) -> Path:
    """`src` behind the coarse-grain network ORAM: each record (a fill or a writeback) becomes
    the load fills of the modules on the path to a uniformly random leaf of the module tree,
    then a writeback to each of them. The first read carries the record's instruction gap.
    Leaves are fresh and uniform per access (that is what the position map's remapping gives
    an observer), drawn from `seed`. Addresses follow the default mapping, module = CB field."""
    if address_mapping != DEFAULT_MAPPING:
        raise ConfigError(f"address_mapping: the network ORAM trace places lines with the default {DEFAULT_MAPPING}, "
                          f"not '{address_mapping}'")
    src = Path(src)
    out = _out_dir(src) / f"{src.stem}.{_digest(src)}.oram{modules}v{vaults}l{layers}s{seed}.trc"
    paths = oram_tree_paths(modules)
    width = max(len(p) for p in paths)
    table = np.array([p + [p[-1]] * (width - len(p)) for p in paths], dtype=np.int64)
    lens = np.array([len(p) for p in paths], dtype=np.int64)

    def write(tmp: Path) -> None:
        rng = np.random.default_rng(seed)
        with TraceReader(src) as r:
            header = dict(r.header, derived=f"network ORAM over {modules} modules of {src.name}",
                          page_mapping="identity")
            w = TraceWriter(tmp, header)
            for chunk in r.chunks(CHUNK):
                n = len(chunk)
                leaf = rng.integers(0, len(paths), n)
                per = 2 * lens[leaf]
                rec = np.repeat(np.arange(n), per)
                start = np.repeat(np.cumsum(per) - per, per)
                pos = np.arange(len(rec)) - start
                plen = lens[leaf][rec]
                write_ = pos >= plen
                step = pos - write_ * plen
                module = table[leaf[rec], step]
                outr = np.zeros(len(rec), dtype=w.dtype)
                outr["thread"] = chunk["thread"][rec]
                outr["kind"] = np.where(write_, WRITEBACK, LOAD_FILL)
                first = pos == 0
                outr["insts"] = np.where(first, chunk["insts"][rec], 0)
                outr["llc_hits"] = np.where(first, chunk["llc_hits"][rec], 0)
                row = rng.integers(0, ORAM_ROWS, len(rec))
                vault = rng.integers(0, vaults, len(rec))
                layer = rng.integers(0, layers, len(rec))
                outr["addr"] = default_line_address(module, row, vault, layer, modules=modules,
                                                    vaults=vaults, layers=layers)
                w.write(outr)
            w.finish()

    return _atomic(out, write)
