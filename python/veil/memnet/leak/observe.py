"""What the adversary records from one run, and the per-window features it computes.

`observe(config)` runs the memory system (Rust `veil_memnet::observe`) and returns every
channel traversal and every injection as numpy arrays; `windows(obs, length)` cuts them into
windows of `length` cycles and counts, per window, the two feature families:

- spatial (the paper's threat model: *where* packets go): packets per channel, packets per
  (source, next destination);
- temporal / volume (outside the paper's threat model: *when* and *how many*): packets,
  flits and channel traversals per window, the mean and spread of each source's
  inter-injection times, packets per source.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from veil import _native

from .. import engine

__all__ = ["Observation", "Windows", "observe", "windows"]


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

    def __len__(self) -> int:
        return self.channels.shape[0]


TEMPORAL = {
    "packets": "packets injected in the window",
    "flits": "flits injected in the window",
    "traversals": "packet-channel traversals in the window (network load)",
    "gap_mean": "mean inter-injection time of a source (cycles), windows' gaps pooled",
    "gap_cv": "coefficient of variation of those gaps",
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
    scalars = {
        "packets": per_source.sum(axis=1).astype(float),
        "flits": flits,
        "traversals": channels.sum(axis=1).astype(float),
        "gap_mean": mean,
        "gap_cv": cv,
    }
    return Windows(channels=channels, pairs=pairs, per_source=per_source, scalars=scalars)
