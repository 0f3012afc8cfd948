"""Paired significance of one system against a baseline on per-query scores, and the interval of one mean.

A paired bootstrap (resampling queries with replacement) of the mean difference; the two-sided
p-value is twice the smaller tail share of resampled differences on either side of zero. Paired,
because both systems answer the same queries; bootstrap, because per-query metrics (0/1 hits,
NDCG) are far from normal on small test sets.
"""
from __future__ import annotations

import numpy as np


def paired_bootstrap(system: np.ndarray, baseline: np.ndarray, resamples: int = 2000, seed: int = 0
                     ) -> tuple[float, float]:
    """(mean difference, two-sided p-value); NaN entries (undefined per-query values) are dropped pairwise."""
    keep = np.isfinite(system) & np.isfinite(baseline)
    diff = system[keep] - baseline[keep]
    if diff.size == 0:
        return float("nan"), float("nan")
    if np.all(diff == 0):
        return 0.0, 1.0
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, size=(resamples, diff.size))].mean(axis=1)
    p = 2 * min((means <= 0).mean(), (means >= 0).mean())
    return float(diff.mean()), float(min(1.0, p))


def bootstrap_interval(values: np.ndarray, resamples: int = 2000, seed: int = 0, level: float = 0.95
                       ) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean over queries (NaN entries dropped); NaNs when none are left.

    Shown beside every figure of the report, so a reader sees how far a mean over a few dozen
    queries could move with another draw of queries of the same kind.
    """
    kept = values[np.isfinite(values)]
    if kept.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = kept[rng.integers(0, kept.size, size=(resamples, kept.size))].mean(axis=1)
    tail = (1 - level) / 2
    return float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))
