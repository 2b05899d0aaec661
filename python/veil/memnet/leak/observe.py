"""What the adversary records from one run, and the per-window features it computes.

`observe(config)` runs the memory system (Rust `veil_memnet::observe`) and returns every
channel traversal and every injection as numpy arrays; `windows(obs, length)` cuts them into
windows of `length` cycles and counts, per window, the two feature families:

- spatial (the paper's threat model: *where* packets go): packets per (CPU, next destination)
  per block of PACKETS consecutive CPU packets, and packets per channel per block of
  TRAVERSALS consecutive channel traversals. Blocks are cut by count, not by cycle, so they
  compare where packets go independently of when: a secret that only changes the program's
  rate moves every packet in time but leaves block k holding the same packets (cycle windows,
  cut to the shorter run, compared different phases of the program: a rate-only secret
  with whole-run destination shares equal to TV 0.0001 was flagged spatially at the floor);
- temporal / volume (outside the paper's threat model: *when* and *how many*): packets,
  flits, channel traversals and module replies per window, the mean and spread of each
  source's inter-injection times, packets per source;
- reply timing (outside the paper's threat model, and a channel the mirrored-reply algorithms
  open: a dummy reply leaves at once, a real one after the DRAM access): per module, how long
  it holds each packet, i.e. its departures (injections from the module) matched in order
  with its arrivals (its ejection channel), counted in REPLY_BINS.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from veil import _native

from .. import engine

__all__ = ["Observation", "Windows", "observe", "windows", "reply_profile", "PACKETS", "TRAVERSALS", "REPLY_BINS",
           "SLOW_FROM"]

#: Edges (cycles) of the reply-delay bins; the last bin is open. SLOW_FROM: the first bin a
#: reply delayed by a DRAM access (44 cycles idle on the default system) falls in.
REPLY_BINS = (0, 8, 16, 32, 48, 64, 96, 128, 256, 512)
SLOW_FROM = 4

#: CPU packets per spatial destination block, channel traversals per spatial channel block.
PACKETS = 32
TRAVERSALS = 256


@dataclass
class Observation:
    ch_cycle: np.ndarray
    ch_id: np.ndarray
    ch_flits: np.ndarray
    inj_cycle: np.ndarray
    inj_src: np.ndarray
    inj_dst: np.ndarray
    inj_flits: np.ndarray
    #: Events are complete for cycles below this (the recording cap was reached there).
    complete_until: int
    channel_kind: list[str]
    channel_from: list[int]
    channel_to: list[int]
    cpu_nodes: list[int]
    module_nodes: list[int]
    nodes: int
    result: dict[str, Any]

    @property
    def end(self) -> int:
        """Last cycle the record covers completely (exclusive)."""
        return int(min(self.result["runtime_cycles"], self.complete_until))


def observe(config: dict[str, Any]) -> Observation:
    """Runs one memory-system simulation (Rust-shaped config) with the adversary watching."""
    res, d = engine._call(_native.memnet.simulate_memsys_observed, json.dumps(config))
    arr = {k: np.frombuffer(d[k], dtype=t) for k, t in (
        ("ch_cycle", "<u8"), ("ch_id", "<u4"), ("ch_flits", "<u2"), ("inj_cycle", "<u8"),
        ("inj_src", "<u4"), ("inj_dst", "<u4"), ("inj_flits", "<u2"))}
    return Observation(**arr, complete_until=int(d["complete_until"]), channel_kind=list(d["ch_kind"]),
                       channel_from=list(d["ch_from"]), channel_to=list(d["ch_to"]),
                       cpu_nodes=list(d["cpu_nodes"]), module_nodes=list(d["module_nodes"]),
                       nodes=int(d["nodes"]), result=json.loads(res))


@dataclass
class Windows:
    """Per-window features of one run (row i = cycles [i*length, (i+1)*length))."""

    channels: np.ndarray      # windows x channels: packets crossing each channel
    pairs: np.ndarray         # windows x (nodes*nodes): packets injected from s toward d (s*nodes+d)
    per_source: np.ndarray    # windows x nodes: packets injected by each node
    scalars: dict[str, np.ndarray]  # temporal features, one value per window
    #: spatial, by count: blocks x CPUs x nodes (PACKETS CPU packets each, in injection order)
    dest_seq: np.ndarray | None = None
    #: spatial, by count: blocks x channels (TRAVERSALS traversals each, in cycle order)
    chan_seq: np.ndarray | None = None
    #: reply timing: modules x len(REPLY_BINS) departures per delay bin, the whole run
    replies: np.ndarray | None = None

    def __len__(self) -> int:
        return self.channels.shape[0]


TEMPORAL = {
    "packets": "packets injected in the window",
    "flits": "flits injected in the window",
    "traversals": "packet-channel traversals in the window (network load)",
    "gap_mean": "mean inter-injection time of a source (cycles), windows' gaps pooled",
    "gap_cv": "coefficient of variation of those gaps",
    "replies": "packets the modules inject in the window (reply volume)",
}


def windows(obs: Observation, length: int) -> Windows:
    """Cuts a run into complete windows of `length` cycles (a trailing partial window and
    anything past the recording cap are dropped)."""
    nw = obs.end // length
    nodes = obs.nodes
    nch = len(obs.channel_kind)
    keep = obs.ch_cycle < nw * length
    w = (obs.ch_cycle[keep] // length).astype(np.int64)
    channels = np.bincount(w * nch + obs.ch_id[keep], minlength=nw * nch).reshape(nw, nch)
    ki = obs.inj_cycle < nw * length
    wi = (obs.inj_cycle[ki] // length).astype(np.int64)
    src, dst = obs.inj_src[ki].astype(np.int64), obs.inj_dst[ki].astype(np.int64)
    pairs = np.bincount(wi * nodes * nodes + src * nodes + dst, minlength=nw * nodes * nodes).reshape(nw, nodes * nodes)
    per_source = pairs.reshape(nw, nodes, nodes).sum(axis=2)
    flits = np.bincount(wi, weights=obs.inj_flits[ki].astype(float), minlength=nw)
    # Inter-injection gaps of each source, attributed to the window of the later injection.
    order = np.lexsort((obs.inj_cycle[ki], src))
    s_sorted, t_sorted = src[order], obs.inj_cycle[ki][order].astype(np.int64)
    same = s_sorted[1:] == s_sorted[:-1]
    gaps = (t_sorted[1:] - t_sorted[:-1])[same].astype(float)
    gw = (t_sorted[1:][same] // length).astype(np.int64)
    cnt = np.bincount(gw, minlength=nw).astype(float)
    s1 = np.bincount(gw, weights=gaps, minlength=nw)
    s2 = np.bincount(gw, weights=gaps * gaps, minlength=nw)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(cnt > 0, s1 / np.maximum(cnt, 1), 0.0)
        var = np.where(cnt > 1, (s2 - cnt * mean * mean) / np.maximum(cnt - 1, 1), 0.0)
        cv = np.where(mean > 0, np.sqrt(np.maximum(var, 0.0)) / np.where(mean > 0, mean, 1.0), 0.0)
    dest_seq, chan_seq = _count_blocks(obs, obs.end)
    scalars = {
        "packets": per_source.sum(axis=1).astype(float),
        "flits": flits,
        "traversals": channels.sum(axis=1).astype(float),
        "gap_mean": mean,
        "gap_cv": cv,
        "replies": per_source[:, np.asarray(obs.module_nodes, dtype=np.int64)].sum(axis=1).astype(float),
    }
    return Windows(channels=channels, pairs=pairs, per_source=per_source, scalars=scalars, dest_seq=dest_seq,
                   chan_seq=chan_seq, replies=reply_profile(obs, obs.end))


def reply_profile(obs: Observation, end: int) -> np.ndarray:
    """Per module (rows in `module_nodes` order), its departures before `end` per delay bin: the
    k-th packet the module injects is matched with the k-th packet its ejection channel
    delivered (every packet a mirrored-reply algorithm sends is answered by one packet; where
    replies overtake each other the match is by order, as an adversary counting on the link
    would make it). Delays below 0 (a module injecting unprompted) count in the first bin."""
    kinds = np.asarray(obs.channel_kind)
    ej = np.full(len(kinds), -1, dtype=np.int64)
    sel = kinds == "ejection"
    ej[sel] = np.asarray(obs.channel_to, dtype=np.int64)[sel]
    kc = obs.ch_cycle < end
    node = ej[obs.ch_id[kc].astype(np.int64)]
    arr_node, arr_t = node[node >= 0], obs.ch_cycle[kc][node >= 0].astype(np.int64)
    ki = obs.inj_cycle < end
    dep_node, dep_t = obs.inj_src[ki].astype(np.int64), obs.inj_cycle[ki].astype(np.int64)
    edges = np.asarray(REPLY_BINS[1:])
    out = np.zeros((len(obs.module_nodes), len(REPLY_BINS)), dtype=np.int64)
    for j, m in enumerate(obs.module_nodes):
        a, d = np.sort(arr_t[arr_node == m]), np.sort(dep_t[dep_node == m])
        n = min(len(a), len(d))
        out[j] = np.bincount(np.searchsorted(edges, d[:n] - a[:n], side="right"), minlength=len(REPLY_BINS))
    return out


def _count_blocks(obs: Observation, end: int) -> tuple[np.ndarray, np.ndarray]:
    """The spatial blocks of the record before cycle `end`: the CPUs' injections in order (cycle,
    then source) in blocks of PACKETS, counted per (CPU, next destination); the channel
    traversals in cycle order in blocks of TRAVERSALS, counted per channel. A trailing partial
    block is kept: the tests take shares of the whole run, and dropping a tail whose make-up
    depends on the rate (which replies are still in flight) was itself read as where."""
    nodes, nch = obs.nodes, len(obs.channel_kind)
    cpus = np.asarray(obs.cpu_nodes, dtype=np.int64)
    index = np.full(nodes, -1, dtype=np.int64)
    index[cpus] = np.arange(len(cpus))
    src = obs.inj_src.astype(np.int64)
    keep = (obs.inj_cycle < end) & (index[src] >= 0)
    order = np.lexsort((src[keep], obs.inj_cycle[keep]))
    ci, dst = index[src[keep]][order], obs.inj_dst[keep].astype(np.int64)[order]
    nb = -(-len(ci) // PACKETS)
    b = np.arange(len(ci)) // PACKETS
    dest = np.bincount((b * len(cpus) + ci) * nodes + dst, minlength=nb * len(cpus) * nodes).reshape(nb, len(cpus), nodes)
    kc = obs.ch_cycle < end
    cid = obs.ch_id[kc].astype(np.int64)[np.argsort(obs.ch_cycle[kc], kind="stable")]
    mb = -(-len(cid) // TRAVERSALS)
    chan = np.bincount((np.arange(len(cid)) // TRAVERSALS) * nch + cid, minlength=mb * nch).reshape(mb, nch)
    return dest, chan
