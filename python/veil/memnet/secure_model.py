"""Closed-form costs of the secure routing algorithms (ghost routing paper, Table II) and of the
coarse-grain network ORAM baseline (§VII), computed from the memory network's topology.

The paper's Table II gives each algorithm's injection and network bandwidth overheads as
multiples of h_avg, the average hop count; its numbers were stripped from our copy, so the
formulas here are rebuilt from the algorithms (docs/memnet.md, "Evaluation (ghost routing)").
Every cost is *per real request* (a read or a write the program makes), counting the request
packet and its reply, so that the non-secure baseline costs 1 injected packet and 2 h_avg
router-to-router traversals.

Topologies are rebuilt here as router graphs with the simulator's wiring and minimal routes
(crates/veil-memnet/src/topology, routing/dragonfly.rs): a mesh or torus routes in dimension
order (shortest), a flattened butterfly takes at most one hop per dimension, a dragonfly goes
local, global, local through the router owning the global link to the destination group.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from veil.core import ConfigError

# HMC packet sizes in 16-byte flits (docs/memnet-memsys.md): read request 1, read response 5 (a
# 64-byte line and its header), write request 5, write response 1.
READ_REQ, READ_RESP, WRITE_REQ, WRITE_RESP = 1, 5, 5, 1


@dataclass(frozen=True)
class Network:
    """The router graph of a memory network: every router is a memory module."""

    kind: str
    modules: int
    hops: np.ndarray            # minimal-route router-to-router hops, modules x modules
    adjacency: tuple            # out-neighbours of each router
    cpu_routers: tuple          # router of each CPU
    params: dict = field(default_factory=dict)

    @property
    def h_avg(self) -> float:
        """Mean minimal-route hops from a CPU's router to a uniformly chosen module (its own
        module included, at 0 hops), averaged over the CPUs."""
        return float(self.hops[list(self.cpu_routers)].mean())


def network(cfg) -> Network:
    """The router graph of a `memnet.memsys` config (a MemSysConfig or a dict of its fields)."""
    get = cfg.get if isinstance(cfg, dict) else (lambda k, d=None: getattr(cfg, k, d))
    kind = get("topology", "dragonfly")
    if kind in ("mesh", "torus"):
        k, n = int(get("k", 8)), int(get("n", 2))
        adj, hops = _kncube(k, n, kind == "torus")
        params = {"k": k, "n": n}
    elif kind == "flatfly":
        k = int(get("k", 8))
        adj, hops = _flatfly(k)
        params = {"k": k}
    elif kind == "dragonfly":
        a, h = int(get("a", 8)), int(get("h", 1))
        g = get("g", 8)
        g = a * h + 1 if g is None else int(g)
        adj, hops = _dragonfly(a, h, g)
        params = {"a": a, "h": h, "g": g}
    else:
        raise ConfigError(f"topology: '{kind}' has no analytic model (mesh, torus, flatfly, dragonfly)")
    modules = len(adj)
    cpus = int(get("cpus", 16))
    placement = list(get("placement", []) or [])
    if not placement:
        placement = [i * modules // cpus for i in range(cpus)]
    if any(not 0 <= m < modules for m in placement):
        raise ConfigError(f"placement: modules must be in 0..{modules - 1}")
    return Network(kind, modules, hops, tuple(tuple(x) for x in adj), tuple(placement), params)


def _bfs(adj: list[list[int]]) -> np.ndarray:
    n = len(adj)
    d = np.full((n, n), -1, dtype=np.int64)
    for s in range(n):
        d[s, s] = 0
        q = deque([s])
        while q:
            x = q.popleft()
            for y in adj[x]:
                if d[s, y] < 0:
                    d[s, y] = d[s, x] + 1
                    q.append(y)
    return d


def _kncube(k: int, n: int, torus: bool) -> tuple[list[list[int]], np.ndarray]:
    # Dimension-order routing is a shortest path on a mesh, and on a torus with the shorter
    # direction per dimension: BFS distances are the route lengths.
    adj = []
    for r in range(k ** n):
        coords = [(r // k ** d) % k for d in range(n)]
        out = []
        for d in range(n):
            for step in (1, -1):
                c = coords[d] + step
                if torus:
                    c %= k
                elif not 0 <= c < k:
                    continue
                nb = r + (c - coords[d]) * k ** d
                if nb != r and nb not in out:
                    out.append(nb)
        adj.append(out)
    return adj, _bfs(adj)


def _flatfly(k: int) -> tuple[list[list[int]], np.ndarray]:
    # Every router reaches its row and its column in one hop: one hop per differing dimension.
    adj = [[y for y in range(k * k) if y != x and (y // k == x // k or y % k == x % k)] for x in range(k * k)]
    rows = np.arange(k * k) // k
    cols = np.arange(k * k) % k
    hops = (rows[:, None] != rows[None, :]).astype(np.int64) + (cols[:, None] != cols[None, :])
    return adj, hops


def _dragonfly(a: int, h: int, g: int) -> tuple[list[list[int]], np.ndarray]:
    if g < 2 or g > a * h + 1:
        raise ConfigError(f"dragonfly: g={g} groups cannot be built with a={a}, h={h} (2..{a * h + 1})")
    lpp = (a * h) // (g - 1)
    n = g * a

    def owner(grp: int, dg: int, m: int) -> int:
        # router of group `grp` holding its m-th global link to group `dg` (the simulator's wiring)
        j = dg if dg < grp else dg - 1
        return grp * a + (j * lpp + m) // h

    adj: list[list[int]] = [[] for _ in range(n)]
    for r in range(n):
        grp = r // a
        adj[r] += [grp * a + i for i in range(a) if grp * a + i != r]
        for dg in range(g):
            if dg != grp:
                for m in range(lpp):
                    if owner(grp, dg, m) == r:
                        adj[r].append(owner(dg, grp, m))
    # Minimal routing: local hop to the owner of the global link (the m-th of lpp, chosen per
    # packet: averaged), the global hop, a local hop from where it lands.
    hops = np.zeros((n, n))
    for r in range(n):
        for s in range(n):
            gr, gs = r // a, s // a
            if gr == gs:
                hops[r, s] = 0 if r == s else 1
                continue
            tot = 0
            for m in range(lpp):
                src, dst = owner(gr, gs, m), owner(gs, gr, m)
                tot += (src != r) + 1 + (dst != s)
            hops[r, s] = tot / lpp
    return adj, hops


# ---------------------------------------------------------------------------------------------
# Ghost routing: dummies per real packet


@lru_cache(maxsize=64)
def ghost_dummies_low_load(n: int) -> float:
    """Expected dummies per real packet of ghost minimal routing when a CPU has one message
    queued at a time (the low-load limit), for a uniformly random destination among n modules.

    The CPU walks a stream of uniform random permutations of the modules, one packet per slot
    while it has a message queued; the message leaves in its destination's next slot, the
    slots before it carry dummies. State j = slots already used of the current permutation
    (after a real packet). Given j, the destination d is among the n - j unused modules with
    probability (n - j)/n and then sits at a uniform position 1..n-j among them (the unused
    part is a uniform random order, independent of the past); otherwise the rest of this
    permutation (n - j slots) is dummies and d sits at a uniform position 1..n of the next.
    The expectation is over the stationary distribution of this Markov chain on j."""
    if n < 1:
        raise ValueError("n must be >= 1")
    P = np.zeros((n, n))
    cost = np.zeros(n)
    for j in range(n):
        r = n - j
        for k in range(1, r + 1):
            p = 1.0 / n
            P[j, (j + k) % n] += p
            cost[j] += p * (k - 1)
        for k in range(1, n + 1):
            p = j / n / n
            P[j, k % n] += p
            cost[j] += p * (r + k - 1)
    # stationary distribution: solve pi (P - I) = 0 with sum(pi) = 1
    A = np.vstack([(P - np.eye(n)).T, np.ones(n)])
    b = np.zeros(n + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(A, b, rcond=None)[0]
    return float(pi @ cost)


def ghost_dummies_slots(slots: int, good: int) -> float:
    """Expected dummies before a message's first usable slot when `good` of a round's `slots`
    slots can carry it and the round is a uniform random order, ignoring slots already used
    (a fresh round): (slots - good)/(good + 1). ghost_minimal: slots = n, good = 1, which gives
    (n - 1)/2; ghost_nonminimal: slots = n^2 (intermediate, final) pairs, good = 2n - 1 pairs
    naming the module as either node."""
    return (slots - good) / (good + 1)


# The evaluation's declared hotspot on the 64-module dragonfly: one module per other group, none
# hosting a CPU, taking half the traffic. The performance figures (reproduce_ghost) and the leak
# acceptance (leak/accept) use the same profile, so it lives beside the weight it sets.
HOT_MODULES = [5, 21, 37, 53]
HOT_FRACTION = 0.5


def adaptive_hot_weight(n: int, hot: int, fraction: float) -> int:
    """Slots per round for each declared hot module in adaptive ghost routing, chosen from the
    public profile alone: each hot module's share of a round's slots equals its expected share
    of the traffic, w H / (N - H + w H) = f, so w = f (N - H) / (H (1 - f)) (at least 1)."""
    if not 0 < hot < n or not 0 <= fraction < 1:
        raise ValueError("need 0 < hot < n and 0 <= fraction < 1")
    return max(1, round(fraction * (n - hot) / (hot * (1 - fraction))))


# ---------------------------------------------------------------------------------------------
# Table II


def sequential_tour(net: Network) -> list[int]:
    """The simulator's sequential tour: nearest neighbour by BFS distance from router 0 (ties
    to the lowest number)."""
    d = _bfs([list(x) for x in net.adjacency])
    seen = [False] * net.modules
    order, at = [0], 0
    seen[0] = True
    for _ in range(1, net.modules):
        nxt = min((r for r in range(net.modules) if not seen[r]), key=lambda r: (d[at, r], r))
        seen[nxt] = True
        order.append(nxt)
        at = nxt
    return order


def tour_hops(net: Network) -> float:
    """Router-to-router traversals of one trip around the tour (the packet enters at its CPU's
    router, visits every module and returns there: the whole cycle, each leg a minimal route)."""
    t = sequential_tour(net)
    return float(sum(net.hops[t[i], t[(i + 1) % len(t)]] for i in range(len(t))))


def broadcast_edges(net: Network) -> int:
    """Tree edges of a spanning tree of the modules: every one carries the request copy down
    and one reply packet up."""
    return net.modules - 1


def valiant_hops(net: Network) -> float:
    """Mean hops CPU -> intermediate -> final over uniformly random (intermediate, final)."""
    h = net.hops
    cpu = list(net.cpu_routers)
    return float(h[cpu].mean() + h.mean())


def table2(net: Network, dummies: dict[str, float] | None = None, oram: dict | None = None) -> dict[str, dict]:
    """Per real request: packets the CPU injects and router-to-router traversals (request and
    reply), for every algorithm; `dummies` gives the ghost algorithms' dummies per real packet
    (measured or analytic; default the analytic low-load values), `oram` a network_oram()
    result. Overheads are relative to non-secure minimal routing (1 packet, 2 h_avg)."""
    n, ha = net.modules, net.h_avg
    d = {"ghost_minimal": ghost_dummies_low_load(n),
         "ghost_nonminimal": ghost_dummies_slots(n * n, 2 * n - 1), **(dummies or {})}
    dg, dn = d["ghost_minimal"], d["ghost_nonminimal"]
    # legs of a (intermediate, final) slot: CPU -> i -> f and back, 2 legs when i = f (1 in N)
    nm_legs = 4 * (1 - 1 / n) + 2 / n
    # (CPU injections, injections on every leg at every node, router-to-router hops, formula)
    rows = {
        "minimal": (1.0, 2.0, 2 * ha, "1 packet, h_avg each way"),
        "minimal_dummy": (float(n), 2.0 * n, 2 * n * ha, "N packets (N-1 dummies), N x h_avg each way"),
        "sequential": (1.0, n + 1.0, tour_hops(net), "1 packet around the tour of all N modules (about N hops)"),
        "broadcast": (1.0, 2.0 * n, 2.0 * broadcast_edges(net), "1 packet copied down N-1 tree edges, N-1 replies up"),
        "ghost_minimal": (1 + dg, 2 * (1 + dg), 2 * (1 + dg) * ha, "(1 + D) packets, (1 + D) x h_avg each way"),
        "ghost_nonminimal": (1 + dn, (1 + dn) * nm_legs, 2 * (1 + dn) * valiant_hops(net),
                             "(1 + D') packets, (1 + D') x 2 h_avg each way (Valiant)"),
    }
    if oram is not None:
        rows["network_oram"] = (oram["packets_injected"], oram["packets_total"], oram["network_hops"],
                                "2(L+1) accesses: a path of L+1 modules read, then written")
    out = {}
    for alg, (inj, legs, hops, formula) in rows.items():
        out[alg] = {"injection_packets": inj, "injections_all_legs": legs, "network_hops": hops,
                    "network_in_h_avg": hops / ha, "injection_overhead": inj, "network_overhead": hops / (2 * ha),
                    "formula": formula}
    return out


def router_links(net: Network) -> int:
    """Directed router-to-router channels."""
    return sum(len(x) for x in net.adjacency)


# ---------------------------------------------------------------------------------------------
# Coarse-grain network ORAM (§VII baseline), reconstructed


def oram_tree_paths(n: int) -> list[list[int]]:
    """Paths root -> leaf of a binary tree whose nodes are the n modules in heap order
    (children of i: 2i+1, 2i+2); a leaf is a module without children."""
    if n < 1:
        raise ValueError("n must be >= 1")
    paths = []
    for leaf in range(n):
        if 2 * leaf + 1 < n:
            continue
        p, x = [], leaf
        while True:
            p.append(x)
            if x == 0:
                break
            x = (x - 1) // 2
        paths.append(p[::-1])
    return paths


def network_oram(net: Network) -> dict:
    """Closed-form cost of the coarse-grain network ORAM per real access (docs/memnet.md).

    Every line lives in one module of a binary tree of the N modules (heap order) and is
    mapped to a uniformly random leaf (position map on the CPU: log2(leaves) bits per line,
    Table II's c log N storage). An access reads one line from each module on the path to
    the line's leaf (the real line from the module holding it, a dummy from the others: inside
    a module the lookup is hidden), remaps the line to a fresh leaf and writes one line back
    to each module on the path (evicting it as deep as the new leaf allows). So an access is
    L+1 reads and L+1 writes, L+1 the path length, whatever module the program meant."""
    paths = oram_tree_paths(net.modules)
    plen = float(np.mean([len(p) for p in paths]))
    cpu = list(net.cpu_routers)
    # per access: path reads (1 out, 1 back) and path writes (1 out, 1 back), each over the
    # minimal route between the CPU and that module
    hop_sum = float(np.mean([[sum(net.hops[c, m] for m in p) for p in paths] for c in cpu]))
    return {"path_modules": plen, "leaves": len(paths), "packets_injected": 2 * plen,
            "packets_total": 4 * plen, "network_hops": 4 * hop_sum,
            "flits_total": plen * (READ_REQ + READ_RESP + WRITE_REQ + WRITE_RESP),
            "position_map_bits_per_line": math.ceil(math.log2(len(paths))) if len(paths) > 1 else 0}


def fine_grain_path_oram(capacity_bytes: int, block_bytes: int = 64, z: int = 4) -> dict:
    """Path ORAM over every line of memory (the fine-grain alternative §VII sets against): a
    tree of 2^L leaves, L = ceil(log2(blocks / Z)), buckets of Z blocks; an access reads and
    writes a whole path: 2 Z (L + 1) block transfers. Grows with capacity, where ghost
    routing's cost grows with the number of modules."""
    blocks = capacity_bytes // block_bytes
    if blocks < z:
        raise ValueError("capacity must hold at least Z blocks")
    levels = max(0, math.ceil(math.log2(blocks / z)))
    return {"levels": levels, "transfers_per_access": 2 * z * (levels + 1)}


def default_line_address(module, row, vault, layer, *, modules: int, vaults: int = 16, layers: int = 4,
                         line: int = 64):
    """Byte address of a line under the default mapping RW:VL:CB:LY:CLL (most significant first);
    scalars or numpy arrays."""
    m, r, v, y = (np.asarray(x, dtype=np.int64) for x in (module, row, vault, layer))
    if not (np.all((m >= 0) & (m < modules)) and np.all((v >= 0) & (v < vaults))
            and np.all((y >= 0) & (y < layers)) and np.all(r >= 0)):
        raise ValueError("field out of range")
    out = (((r * vaults + v) * modules + m) * layers + y) * line
    return int(out) if out.ndim == 0 else out.astype(np.uint64)
