"""The adversary's descriptive classifier: held-out accuracy at telling windows of secret A from
windows of secret B, with a p-value and an interval that are exact under "A and B are the same"
by relabelling whole folds.

**Model.** Features are standardised (over every window: no labels are used) and classified by
linear discriminant analysis with a ridge on the pooled covariance (Fisher's rule, the
midpoint threshold of balanced classes). It is scored leave-one-fold-out: a fold (a seed pair
of runs, or a group of windows) is never trained on while it is scored.

**Why relabelling.** The held-out hits of one fold share that fold's quirks (a run's clock
period, a program phase), and a few models trained on overlapping data score every fold, so
neither the windows nor the folds are independent draws: an interval over per-fold accuracies
(Student's t over 14 run pairs scored by 5 models, as an earlier version did) excluded 1/2 in 2
of 8 same-secret controls of the storage attacker and in 10% of synthetic ones. Under "A and B
are the same", swapping A and B within whole folds leaves the data's distribution unchanged
(the paired design's null), so the accuracies of the relabelled data, each re-fitted and
re-scored the same way, are the null distribution of the observed accuracy (a permutation test
of classifier performance, Ojala and Garriga, JMLR 2010). The p-value is the share of
relabellings that score at least as well (all of them up to 2^11, else 1,999 drawn at random,
seeded); the interval is the observed accuracy widened by the null's own 2.5% and 97.5% points
about 1/2, so it excludes 1/2 exactly when a two-sided 5% test would.

**Why LDA, in numpy.** The null needs the classifier re-fitted for every relabelling and every
held-out fold (thousands of fits per call). Flipping a fold's labels only swaps its two class
sums, and the pooled scatter is the total scatter less the class means' part, so every fit is a
few small matrix products from per-fold sums: one batched solve per held-out fold covers all
relabellings. A logistic regression per fit (scikit-learn, an earlier version) took 26 ms.
"""

from __future__ import annotations

import numpy as np

# Ridge on the pooled within-class covariance of standardised features (the identity's weight):
# keeps the rule defined with more features than a fold's windows and with collinear features.
RIDGE = 0.1
# Relabellings drawn at random when there are more than EXACT_UP_TO distinct ones.
RANDOM_RELABELLINGS = 1999
EXACT_UP_TO = 1 << 11
SEED = 0x1EA4


def relabellings(folds: int, rng: np.random.Generator) -> np.ndarray:
    """Rows of 0/1 (flip that fold's labels), the first row the observed labelling. Fold 0 is never
    flipped: flipping every fold swaps the classes, which a symmetric rule scores the same."""
    free = folds - 1
    if (1 << free) <= EXACT_UP_TO:
        codes = np.arange(1 << free)
        flips = (codes[:, None] >> np.arange(free)[None, :]) & 1
    else:
        flips = np.vstack([np.zeros((1, free), dtype=np.int64),
                           rng.integers(0, 2, size=(RANDOM_RELABELLINGS, free))])
    return np.hstack([np.zeros((len(flips), 1), dtype=np.int64), flips]).astype(bool)


def fold_sums(x: np.ndarray, y: np.ndarray, fold: np.ndarray, folds: int):
    """Per fold: windows of each class, their feature sums (folds x 2 x d) and the scatter of all
    its windows (folds x d x d)."""
    d = x.shape[1]
    n = np.zeros((folds, 2))
    s = np.zeros((folds, 2, d))
    t = np.zeros((folds, d, d))
    np.add.at(n, (fold, y), 1)
    np.add.at(s, (fold, y), x)
    np.add.at(t, fold, x[:, :, None] * x[:, None, :])
    return n, s, t


def scores(x: np.ndarray, y: np.ndarray, fold: np.ndarray, flips: np.ndarray) -> np.ndarray:
    """Held-out hits per window under every relabelling (relabellings x windows, bool)."""
    folds = flips.shape[1]
    n, s, t = fold_sums(x, y, fold, folds)
    d = x.shape[1]
    hits = np.zeros((len(flips), len(y)), dtype=bool)
    f = flips.astype(float)
    for h in range(folds):
        tr = np.arange(folds) != h
        ff = f[:, tr]                                            # P x F'
        # Class sums and counts of the training folds under each relabelling: a flipped fold
        # gives its class-0 windows to class 1 and back.
        sum0 = (1 - ff) @ s[tr, 0] + ff @ s[tr, 1]               # P x d
        sum1 = ff @ s[tr, 0] + (1 - ff) @ s[tr, 1]
        n0 = (1 - ff) @ n[tr, 0] + ff @ n[tr, 1]                 # P
        n1 = ff @ n[tr, 0] + (1 - ff) @ n[tr, 1]
        m0, m1 = sum0 / n0[:, None], sum1 / n1[:, None]
        scatter = t[tr].sum(axis=0)[None] - n0[:, None, None] * m0[:, :, None] * m0[:, None, :] \
            - n1[:, None, None] * m1[:, :, None] * m1[:, None, :]
        cov = scatter / np.maximum(n0 + n1 - 2, 1)[:, None, None] + RIDGE * np.eye(d)[None]
        w = np.linalg.solve(cov, (m1 - m0)[:, :, None])[:, :, 0]  # P x d
        b = -0.5 * np.einsum("pd,pd->p", w, m0 + m1)
        at = np.flatnonzero(fold == h)
        pred = (w @ x[at].T + b[:, None]) > 0                     # P x n_h
        truth = y[at][None, :].astype(bool) ^ flips[:, h][:, None]
        hits[:, at] = pred == truth
    return hits


def permutation_accuracy(x: np.ndarray, y: np.ndarray, fold: np.ndarray) -> dict:
    """Held-out accuracy of `x` (windows x features) at telling y = 0 from y = 1, scored
    leave-one-fold-out (`fold`: 0..F-1 per window, classes balanced within each fold), with its
    relabelling p-value and interval (see the module doc)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y).astype(np.int64)
    _, fold = np.unique(np.asarray(fold), return_inverse=True)
    folds = int(fold.max()) + 1
    sd = x.std(axis=0)
    x = (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    flips = relabellings(folds, np.random.default_rng(SEED))
    hits = scores(x, y, fold, flips)
    acc_all = hits.mean(axis=1)
    acc = float(acc_all[0])
    exact = len(flips) < RANDOM_RELABELLINGS + 1
    null = acc_all if exact else acc_all[1:]
    ge = int((null >= acc - 1e-12).sum())
    p = ge / len(null) if exact else (ge + 1) / (len(null) + 1)
    q_lo, q_hi = np.quantile(null, [0.025, 0.975])
    per = [float(hits[0, fold == k].mean()) for k in range(folds)]
    return {"accuracy": acc, "p": float(p), "ci95": [max(0.0, acc - (q_hi - 0.5)), min(1.0, acc + (0.5 - q_lo))],
            "null95": [float(q_lo), float(q_hi)], "relabellings": int(len(null)), "exact": bool(exact),
            "cluster_accuracy": per}
