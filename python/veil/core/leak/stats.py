"""The adversary's statistics, on plain arrays (no simulator): two-sample tests on windows of
observations, a cross-validated classifier, and the permutation-stream test.

Events are not independent draws (one packet crosses several channels, packets come in
bursts, windows of one run are correlated), so no test here counts single packets as
independent: categorical tests take their null distribution from relabelling whole blocks of
windows between the patterns, continuous tests compare per-window values, and the classifier
is scored on whole folds it never trained on, against relabellings of whole folds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np


class _SciPyStats:
    # scipy.stats costs about a CPU-second to import: only a run that tests pays for it, not every
    # `veil` command that registers an experiment using these tools.
    def __getattr__(self, name: str):
        from scipy import stats

        return getattr(stats, name)


st = _SciPyStats()

__all__ = ["TestResult", "homogeneity", "window_mannwhitney", "runs_welch", "holm", "wilson", "binomial_p",
           "detectable_accuracy", "detectable_w", "classify",
           "permutation_stream"]


@dataclass
class TestResult:
    name: str
    p: float
    statistic: float
    detail: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def _pearson(table: np.ndarray) -> tuple[float, int]:
    """Pearson chi-square of independence of an r x c table (rows/columns with no count
    dropped) and its degrees of freedom (r-1)(c-1)."""
    t = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    r, c = t.shape
    if r < 2 or c < 2:
        return 0.0, 0
    e = t.sum(axis=1, keepdims=True) * t.sum(axis=0, keepdims=True) / t.sum()
    return float(((t - e) ** 2 / e).sum()), (r - 1) * (c - 1)


def _x2_rows(ta: np.ndarray, tot: np.ndarray, strata: np.ndarray) -> np.ndarray:
    """Pearson chi-square of the 2 x K tables [ta[i]; tot - ta[i]] for every row i, expected
    counts taken within each stratum (categories of one stratum share their row totals)."""
    tb = tot - ta
    x2 = np.zeros(ta.shape[0])
    for s in np.unique(strata):
        c = strata == s
        a, b, t = ta[:, c], tb[:, c], tot[c]
        ts = t.sum()
        if ts == 0:
            continue
        ea = a.sum(axis=1, keepdims=True) * t / ts
        eb = b.sum(axis=1, keepdims=True) * t / ts
        with np.errstate(invalid="ignore", divide="ignore"):
            x2 += np.where(ea > 0, (a - ea) ** 2 / np.where(ea > 0, ea, 1), 0).sum(axis=1)
            x2 += np.where(eb > 0, (b - eb) ** 2 / np.where(eb > 0, eb, 1), 0).sum(axis=1)
    return x2


def homogeneity(a: np.ndarray, b: np.ndarray, strata: np.ndarray | None = None, name: str = "homogeneity",
                alpha: float = 1e-3, power: float | None = 0.8, groups_a: np.ndarray | None = None,
                groups_b: np.ndarray | None = None, permutations: int = 200, seed: int = 0) -> TestResult:
    """Do windows of pattern A and pattern B draw their events from the same categorical
    distribution? `a` (windows x categories) and `b` hold event counts per window.

    With `strata` (a stratum id per category, e.g. the source node of a (source, destination)
    cell), the question is asked within each stratum (the destination distribution *given* the
    source) and the chi-squares add up, so a pattern that only makes some sources busier is
    not flagged here.

    Statistic: the Pearson chi-square X2 of the 2 x K table of pooled counts. Events are not
    independent (a packet is seen on every channel of its path, packets come in bursts), so
    X2 is not chi-square(df) under the null. Its null distribution comes from relabelling
    whole units (windows, or the blocks of windows `groups_a` / `groups_b` name, which keeps
    neighbouring windows together) between A and B `permutations` times; a scaled chi-square
    c * chi-square(nu) matched to the permutation mean and variance (Satterthwaite) gives the
    p-value, so p-values far below 1/permutations are meaningful. The permutation p-value is
    reported beside it.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if strata is None:
        strata = np.zeros(a.shape[1], dtype=int)
    strata = np.asarray(strata)
    ga = np.arange(len(a)) if groups_a is None else np.asarray(groups_a)
    gb = np.arange(len(b)) if groups_b is None else np.asarray(groups_b)
    ua = np.stack([a[ga == g].sum(axis=0) for g in np.unique(ga)])
    ub = np.stack([b[gb == g].sum(axis=0) for g in np.unique(gb)])
    units = np.vstack([ua, ub])
    keep = units.sum(axis=0) > 0
    units, strata = units[:, keep], strata[keep]
    tot = units.sum(axis=0)
    df = sum(max(int((strata == s).sum()) - 1, 0) for s in np.unique(strata))
    n = float(tot.sum())
    if df == 0 or len(ua) < 2 or len(ub) < 2:
        return TestResult(name, 1.0, 0.0, {"df": int(df), "events": int(n), "note": "too few events or units to compare"})
    obs = float(_x2_rows(ua.sum(axis=0, keepdims=True)[:, keep], tot, strata)[0])
    rng = np.random.default_rng(seed)
    u = len(units)
    labels = np.zeros((permutations, u))
    for i in range(permutations):
        labels[i, rng.permutation(u)[: len(ua)]] = 1
    null = _x2_rows(labels @ units, tot, strata)
    m, v = float(null.mean()), float(null.var(ddof=1))
    scale, nu = v / (2 * m), 2 * m * m / v
    p = float(st.chi2.sf(obs / scale, nu))
    phi = m / df
    return TestResult(name, p, obs, {
        "df": int(df), "null_mean": m, "null_var": v, "scale": scale, "nu": nu, "dispersion": phi,
        "p_permutation": float((1 + (null >= obs).sum()) / (1 + permutations)), "permutations": permutations,
        "units_a": int(len(ua)), "units_b": int(len(ub)), "events": int(n), "effective_events": n / phi,
        "windows_a": int(a.shape[0]), "windows_b": int(b.shape[0]),
        **({"detectable_w": detectable_w(n / phi, int(df), alpha, power)} if power else {}),
    })


def detectable_w(n_eff: float, df: int, alpha: float, power: float = 0.8) -> float:
    """Cohen's effect size w = sqrt(sum (p_B - p_A)^2 / p) that a chi-square test of `df`
    degrees of freedom on `n_eff` independent events detects with probability `power` at level
    `alpha` (noncentral chi-square); smaller differences may go unnoticed."""
    if n_eff <= 0 or df <= 0:
        return float("inf")
    crit = st.chi2.isf(alpha, df)
    lo, hi = 0.0, 1.0
    while st.ncx2.sf(crit, df, hi * hi * n_eff) < power and hi < 1e3:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if st.ncx2.sf(crit, df, mid * mid * n_eff) < power:
            lo = mid
        else:
            hi = mid
    # A 2 x K table: w of the pattern-by-category association; the two patterns' own
    # distributions then differ by about 2w for equal sample sizes.
    return hi


def window_mannwhitney(a: np.ndarray, b: np.ndarray, name: str) -> TestResult:
    """Mann-Whitney U on one per-window feature (two-sided); the effect is the probability
    that a window of A exceeds one of B (0.5 = no difference)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2 or (np.ptp(np.concatenate([a, b])) == 0):
        return TestResult(name, 1.0, 0.0, {"note": "constant or too few windows", "windows_a": len(a), "windows_b": len(b)})
    r = st.mannwhitneyu(a, b, alternative="two-sided")
    auc = float(r.statistic) / (len(a) * len(b))
    return TestResult(name, float(r.pvalue), float(r.statistic), {
        "auc": auc, "mean_a": float(a.mean()), "mean_b": float(b.mean()), "windows_a": len(a), "windows_b": len(b)})


def runs_welch(a: list[float], b: list[float], name: str) -> TestResult:
    """Welch's t-test on one number per run (e.g. the runtime): how long the program takes is
    the coarsest timing observable; with a few runs per pattern it only catches large
    differences."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return TestResult(name, 1.0, 0.0, {"note": "needs two runs per pattern", "mean_a": float(a.mean()),
                                           "mean_b": float(b.mean())})
    if np.ptp(np.concatenate([a, b])) == 0:
        return TestResult(name, 1.0, 0.0, {"mean_a": float(a.mean()), "mean_b": float(b.mean())})
    r = st.ttest_ind(a, b, equal_var=False)
    p = float(r.pvalue) if np.isfinite(r.pvalue) else (0.0 if a.mean() != b.mean() else 1.0)
    return TestResult(name, p, float(r.statistic) if np.isfinite(r.statistic) else 0.0, {
        "mean_a": float(a.mean()), "mean_b": float(b.mean()), "runs_a": len(a), "runs_b": len(b),
        "ratio": float(b.mean() / a.mean()) if a.mean() else float("inf")})


def holm(ps: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (family-wise error control, any dependence)."""
    m = len(ps)
    order = np.argsort(ps)
    adj = np.empty(m)
    run = 0.0
    for rank, i in enumerate(order):
        run = max(run, min(1.0, (m - rank) * ps[i]))
        adj[i] = run
    return adj.tolist()


def wilson(k: float, n: float, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion k/n (95% by default)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return float(max(0.0, c - h)), float(min(1.0, c + h))


def binomial_p(k: int, n: int, p0: float = 0.5) -> float:
    """One-sided P(X >= k) for X ~ Binomial(n, p0): is the accuracy above chance?"""
    if n == 0:
        return 1.0
    return float(st.binom.sf(k - 1, n, p0))


def detectable_accuracy(n: int, alpha: float) -> float:
    """The smallest held-out accuracy on `n` balanced windows that is significant at `alpha`."""
    if n == 0:
        return 1.0
    k = int(st.binom.isf(alpha, n, 0.5)) + 1
    return min(1.0, k / n)


def classify(xa: np.ndarray, xb: np.ndarray, groups_a: np.ndarray, groups_b: np.ndarray, name: str,
             alpha: float = 1e-3, folds_a: np.ndarray | None = None,
             folds_b: np.ndarray | None = None) -> TestResult:
    """Held-out accuracy at telling windows of A from windows of B (`veil.core.leak.classifier`:
    standardised features, ridge LDA, leave-one-fold-out), with a p-value and 95% interval exact
    under "A and B are the same" from relabelling whole folds. A group is a block of consecutive
    windows of one run; `folds_a` / `folds_b` (e.g. the seed pair each window's run belongs to)
    make coarser folds out of whole groups, so the classifier never trains on another part of
    the run pair it is scored on (whose windows are anti-correlated with the held-out ones when a
    stream is balanced over time, as permutation streams are). Classes are balanced per group, so
    chance is 1/2."""
    from veil.core.leak.classifier import permutation_accuracy

    xa, xb = np.asarray(xa, dtype=float), np.asarray(xb, dtype=float)
    ga, gb = np.asarray(groups_a), np.asarray(groups_b)
    # Balance: each group keeps as many windows of A as of B.
    fa = ga if folds_a is None else np.asarray(folds_a)
    fb = gb if folds_b is None else np.asarray(folds_b)
    keep_a, keep_b = [], []
    for g in np.intersect1d(ga, gb):
        ia, ib = np.flatnonzero(ga == g), np.flatnonzero(gb == g)
        k = min(len(ia), len(ib))
        keep_a += ia[:k].tolist()
        keep_b += ib[:k].tolist()
    x = np.vstack([xa[keep_a], xb[keep_b]]) if keep_a else np.zeros((0, xa.shape[1]))
    y = np.r_[np.zeros(len(keep_a)), np.ones(len(keep_b))]
    g = np.r_[ga[keep_a], gb[keep_b]]
    f = np.r_[fa[keep_a], fb[keep_b]]
    ngroups = len(np.unique(g))
    nfolds = len(np.unique(f))
    if ngroups < 2 or nfolds < 2 or x.shape[1] == 0:
        return TestResult(name, 1.0, 0.5, {"note": "fewer than two groups of windows", "n": int(len(y))})
    # Features constant over every window carry nothing.
    x = x[:, np.ptp(x, axis=0) > 0] if len(x) else x
    n = int(len(y))
    if x.shape[1] == 0:
        return TestResult(name, 1.0, 0.5, {"accuracy": 0.5, "ci95": [0.0, 1.0], "correct": n // 2, "n": n,
                                           "groups": int(ngroups), "clusters": int(nfolds), "features": 0,
                                           "note": "no feature varies"})
    r = permutation_accuracy(x, y, f)
    return TestResult(name, r["p"], r["accuracy"], {
        "accuracy": r["accuracy"], "ci95": r["ci95"], "null95": r["null95"], "correct": int(round(r["accuracy"] * n)),
        "n": n, "groups": int(ngroups), "clusters": int(nfolds), "cluster_accuracy": r["cluster_accuracy"],
        "relabellings": r["relabellings"], "exact": r["exact"], "features": int(x.shape[1])})


def permutation_stream(src: np.ndarray, dst: np.ndarray, sources: list[int], alphabet: list[int],
                       name: str = "permutation_stream", alpha: float = 1e-3, multiplicity: int = 1) -> TestResult:
    """Is each source's stream of next destinations a stream of independent uniform random
    permutations of `alphabet` (ghost routing's observable, paper §V)? With `multiplicity`
    k > 1 a block is a uniform random arrangement of the alphabet with every symbol k times
    (ghost non-minimal permutes (intermediate, final) pairs: each intermediate appears M times
    in a block of M^2). Per source, the stream (in injection order) is cut into consecutive
    blocks of L = k M from its first injection; the last partial block is dropped. Three
    checks, over all sources together:

    - structure: every block holds each destination exactly k times (a count; any failure rejects);
    - positions: each destination's position in its block is uniform (chi-square of the
      destination x position table, positions binned into M bins of k, both margins fixed:
      df (M-1)^2). One block is a fixed-margins table of L entries, so a sum of independent
      blocks has L/(L-1) times the chi-square's mean: the statistic is scaled by (L-1)/L;
    - successors: consecutive pairs inside a block are as frequent as a random arrangement
      makes them (k^2 / (L(L-1)) for a != b, k(k-1) / (L(L-1)) for a = b; chi-square over the
      possible pairs); this catches a fixed cyclic order started at a random point, which
      has uniform positions.
    """
    src, dst = np.asarray(src), np.asarray(dst)
    m, k = len(alphabet), int(multiplicity)
    length = k * m
    index = np.full(int(max(list(alphabet) + [int(dst.max(initial=0))])) + 1, -1)
    index[np.asarray(alphabet)] = np.arange(m)
    pos = np.zeros((m, m))
    succ = np.zeros((m, m))
    blocks = bad = foreign = 0
    want = np.repeat(np.arange(m), k)
    for s in sources:
        seq = dst[src == s]
        d = index[seq] if len(seq) else seq
        if np.any(d < 0):
            foreign += int((d < 0).sum())
            d = d[d >= 0]
        nb = len(d) // length
        if nb == 0:
            continue
        blk = d[: nb * length].reshape(nb, length)
        blocks += nb
        bad += int((~(np.sort(blk, axis=1) == want).all(axis=1)).sum())
        np.add.at(pos, (blk.ravel(), np.tile(np.arange(length) // k, nb)), 1)
        np.add.at(succ, (blk[:, :-1].ravel(), blk[:, 1:].ravel()), 1)
    detail = {"blocks": blocks, "alphabet": m, "multiplicity": k, "sources": len(sources),
              "non_permutation_blocks": bad, "foreign_destinations": foreign}
    if blocks == 0:
        return TestResult(name, 1.0, 0.0, {**detail, "note": "no complete block"})
    x_pos, df_pos = _pearson(pos)
    x_pos *= (length - 1) / length
    p_pos = float(st.chi2.sf(x_pos, df_pos)) if df_pos else 1.0
    pairs = blocks * (length - 1)
    diag = np.eye(m, dtype=bool)
    exp = np.where(diag, k * (k - 1), k * k) / (length * (length - 1)) * pairs
    possible = exp > 0
    if (succ[~possible] > 0).any():
        p_succ, x_succ = 0.0, float("inf")  # a destination repeated inside a block of a permutation
    else:
        x_succ = float(((succ[possible] - exp[possible]) ** 2 / exp[possible]).sum())
        p_succ = float(st.chi2.sf(x_succ, possible.sum() - 1))
    df_succ = int(possible.sum() - 1)
    p_struct = 0.0 if (bad or foreign) else 1.0
    p = min(1.0, 3 * min(p_pos, p_succ, p_struct))  # Bonferroni over the three checks
    detail.update({"positions_chi2": x_pos, "positions_df": df_pos, "positions_p": p_pos,
                   "successors_chi2": x_succ, "successors_df": df_succ, "successors_p": p_succ,
                   "verdict": "uniform permutation stream" if p >= alpha else "not a uniform permutation stream"})
    return TestResult(name, p, min(p_pos, p_succ, p_struct), detail)
