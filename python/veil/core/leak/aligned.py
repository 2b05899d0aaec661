"""Time-aligned two-sample tests on plain observation arrays (no simulator import).

A real program has phases: start-up, a loop over one array, then another. Windows of one run
differ from each other far more than windows of two runs of the same program at the same point,
so a test that relabels windows or blocks of windows between the patterns without regard to
*when* they were seen compares phases, not secrets (its null is inflated and it loses the leak).
Here window i of run r of pattern A is paired with window i of run r of pattern B: the same
point of the same program, only the secret (and the seed) differing.

Statistic. Per aligned pair of windows the feature difference d_i = x_A,i - x_B,i (a vector of
K features: per-window fractions for "where", raw values for "how many"), summed over the
windows of a unit: s_j (j = 1..J). Per feature k the self-normalised sum
t_k = sum_j s_jk / sqrt(sum_j s_jk^2), and T = sum_k t_k^2 (features of different units), or
T = |sum_j s_j|^2 / sum_j |s_j|^2 (`pooled`: shares, which are of one scale).

Null. If A and B are the same secret, a unit's difference is as likely to be s_j as -s_j (the
pair's labels are exchangeable), so flipping the signs of whole units gives T's null
distribution given |s_j|. The unit must be what is independent: on traced programs a seed
changes the whole run (which thread touches a shared page first decides its frame, hence its
module, for the rest of the run; measured: per-module request counts of one fft trace differ by
up to 10% between seeds), so the default unit is the whole run pair, and the test is exact.
T is even in the signs, so J units give 2^(J-1) distinct values: p >= 2^-(J-1), and alpha =
1e-3 needs J >= 11 seed pairs. Up to 2^16 sign patterns are enumerated exactly; beyond, drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PERMUTATIONS", "EXACT_UP_TO", "min_units", "block_differences", "signflip", "SignFlip"]

PERMUTATIONS = 9999
EXACT_UP_TO = 17  # units: 2^16 sign patterns at most are enumerated


def min_units(alpha: float) -> int:
    """Sign-flip units needed for a p below `alpha` to be possible (2^-(J-1) < alpha)."""
    return int(np.floor(np.log2(1 / alpha))) + 2


def block_differences(a_runs: list[np.ndarray], b_runs: list[np.ndarray], block: int = 0,
                      segments: int = 1) -> np.ndarray:
    """Unit sums of aligned differences: run r of A against run r of B, window i against window
    i (each pair cut to its shorter run). `block` = 0: one unit per run pair, its windows cut
    into `segments` equal parts in program order whose sums are separate features (stratified by
    phase: a secret that acts in one phase only is not averaged away); else units of `block`
    consecutive windows (a trailing partial block dropped), valid only where runs carry no
    run-wide random effect. Returns J x K (x segments)."""
    if len(a_runs) != len(b_runs):
        raise ValueError("aligned runs: as many runs of A as of B are needed")
    if block < 0:
        raise ValueError("block: 0 (whole runs) or a number of windows")
    out = []
    for a, b in zip(a_runs, b_runs):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        m = min(len(a), len(b))
        if block == 0 and segments > 1:
            n = (m // segments) * segments
            if n == 0:
                continue
            d = (a[:n] - b[:n]).reshape(segments, n // segments, -1).sum(axis=1)
            out.append(d.reshape(1, -1))
            continue
        size = m if block == 0 else block
        n = (m // size) * size if size else 0
        if n == 0:
            continue
        d = a[:n] - b[:n]
        out.append(d.reshape(n // size, size, -1).sum(axis=1))
    k = np.asarray(a_runs[0]).shape[1] * (segments if block == 0 else 1) if a_runs else 0
    return np.vstack(out) if out else np.zeros((0, k))


def _statistic(s: np.ndarray, signs: np.ndarray, norm: np.ndarray) -> np.ndarray:
    """T for each row of `signs` (P x J): sum_k (signs @ s)_k^2 / norm_k."""
    return ((signs @ s) ** 2 / norm).sum(axis=1)


def _pooled_norm(s: np.ndarray) -> np.ndarray:
    """One norm for every feature: T = |sum_j s_j|^2 / sum_j |s_j|^2, so features weigh by how
    much they move (shares of modules are alike in scale; a leak moving a few of them is not
    drowned by many quiet ones, as it is when every feature counts as much)."""
    return np.full(s.shape[1], (s * s).sum())


@dataclass
class SignFlip:
    name: str
    p: float
    statistic: float
    blocks: int
    features: int
    permutations: int
    exceedances: int
    stopped_early: bool
    exact: bool = False

    def as_dict(self) -> dict:
        floor = 1.0 / self.permutations if self.exact else 1.0 / (1 + self.permutations)
        return {"name": self.name, "p": self.p, "statistic": self.statistic, "detail": {
            "units": self.blocks, "features": self.features, "permutations": self.permutations,
            "exact": self.exact, "exceedances": self.exceedances, "stopped_early": self.stopped_early,
            "null_mean": float(self.features), "p_floor": floor if self.permutations else 1.0}}


def signflip(s: np.ndarray, name: str = "aligned", permutations: int = PERMUTATIONS, seed: int = 0,
             stop_above: float | None = None, chunk: int = 1000, pooled: bool = False) -> SignFlip:
    """Sign-flip permutation test of `s` (J units x K features, aligned differences) against
    "no difference": with J <= EXACT_UP_TO every sign pattern (exact p); else p =
    (1 + #{T_perm >= T_obs}) / (1 + permutations) over random ones, where with `stop_above` the
    draws stop once p can no longer fall below it (the decision is then known; p is reported
    as the bound reached), which makes power estimation cheap. `pooled`: one norm for all
    features (features of one scale, e.g. shares); else each feature its own (raw values of
    different units)."""
    s = np.asarray(s, dtype=float)
    norm = (s * s).sum(axis=0)
    keep = norm > 0
    s, norm = s[:, keep], norm[keep]
    if pooled:
        norm = _pooled_norm(s)
    j, k = s.shape
    if j == 0 or k == 0:
        return SignFlip(name, 1.0, 0.0, j, k, 0, 0, False)
    obs = float(_statistic(s, np.ones((1, j)), norm)[0])
    tol = 1e-9 * max(1.0, abs(obs))
    if j <= EXACT_UP_TO:
        # Every pattern with the first sign fixed (T is even in the signs): the exact p.
        n = 1 << (j - 1)
        bits = (np.arange(n)[:, None] >> np.arange(j - 1)[None, :]) & 1
        signs = np.hstack([np.ones((n, 1)), 1.0 - 2.0 * bits])
        hits = 0
        for c in range(0, n, 4096):
            hits += int((_statistic(s, signs[c:c + 4096], norm) >= obs - tol).sum())
        return SignFlip(name, hits / n, obs, j, k, n, hits, False, exact=True)
    rng = np.random.default_rng(seed)
    limit = None if stop_above is None else stop_above * (1 + permutations) - 1
    hits = done = 0
    while done < permutations:
        n = min(chunk, permutations - done)
        signs = rng.integers(0, 2, size=(n, j)) * 2.0 - 1.0
        hits += int((_statistic(s, signs, norm) >= obs - tol).sum())
        done += n
        if limit is not None and hits > limit:
            return SignFlip(name, (1 + hits) / (1 + done), obs, j, k, done, hits, True)
    return SignFlip(name, (1 + hits) / (1 + permutations), obs, j, k, permutations, hits, False)
