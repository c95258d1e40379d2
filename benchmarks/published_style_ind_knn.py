"""Ind-KNN one query at a time in float64, in the style of the published research code: the speed baseline.

This is *not* the published code (it is not available here); it reproduces its computational pattern as
DESIGN.md describes it (about 0.25 s per query at n = 50,000, d = 768): for every query, the kernel is evaluated
from its definition against the whole private set in float64 (``exp(-||x - q||^2 / nu^2)`` through the difference
``X - q``, or the cosine through per-query norms), and the budget bookkeeping runs over full-length arrays. The
privacy logic is the corrected one of :class:`predict.ind_knn.IndKNNClassifier` (clipped count and vote charges,
pure-noise answers, no NaN), so both do the same work and only the computational pattern differs.

Used by ``benchmarks/bench_ind_knn_speed.py``; nothing here is part of the library.
"""

import math

import numpy as np

__all__ = ["published_style_predict"]


def published_style_predict(X, y, Q, *, kernel, nu, tau, sigma1, sigma2, budget, min_count, n_classes, rng,
                            spent=None):
    """Answer the queries one by one; returns (labels, spent)."""
    X = np.asarray(X, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    n = X.shape[0]
    spent = np.zeros(n) if spent is None else spent
    out = []
    for q in Q:
        if kernel == "rbf":
            kappa = np.exp(-np.sum((X - q) ** 2, axis=1) / nu**2)
        else:
            kappa = (X @ q) / (np.linalg.norm(X, axis=1) * np.linalg.norm(q))
        kappa = np.minimum(kappa, 1.0)
        remaining = np.maximum(budget - spent, 0.0)
        selected = (kappa >= tau) & (remaining > 0)
        full = 1.0 / (2 * sigma1**2)
        count_charge = np.where(selected, np.minimum(full, remaining), 0.0)
        contribution = np.where(selected, np.minimum(1.0, sigma1 * np.sqrt(2 * remaining)), 0.0)
        spent = spent + count_charge
        noise = rng.standard_normal(1 + n_classes)
        K = max(contribution.sum() + sigma1 * noise[0], min_count)
        remaining = np.maximum(budget - spent, 0.0)
        f = np.where(selected, np.minimum(kappa, sigma2 * np.sqrt(2 * K * remaining)), 0.0)
        spent = spent + np.minimum(f**2 / (2 * sigma2**2 * K), remaining)
        votes = np.zeros(n_classes)
        for j in range(n_classes):
            votes[j] = f[y == j].sum()
        votes += sigma2 * math.sqrt(K) * noise[1:]
        out.append(int(np.argmax(votes)))
    return np.array(out, dtype=np.int64), spent
