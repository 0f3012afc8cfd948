"""Routing metrics of a ``Run`` against ``Qrels``, vectorised over requests.

Each request's ranking is first collapsed onto its ground-truth groups (``skill_groups``: a member
stands for its group, later copies are dropped), so S* below is the request's groups. For a query with
ground-truth set S* (|S*| = m) and a ranking, with ``hits`` the 0/1 matrix (queries × ranks) marking
ground-truth skills:
- ``hit@1``: a ground-truth skill at rank 1;
- ``mrr@10``: reciprocal rank of the first ground-truth skill within 10, else 0;
- ``ndcg@K``: binary gains, log2(rank + 1) discount, ideal = all of S* first;
- ``recall@K``: |S* ∩ top-K| / m;
- ``fc@K`` (SkillRouter's full coverage): 1[S* ⊆ top-K];
- ``comp@K`` (R3-Skill's released script): |S* ∩ top-K| / min(m, K) — equals recall@K when K ≥ m;
- ``set_compat``: 1[S* ⊆ top-m], over multi-skill queries (m ≥ 2) only (NaN for m = 1).
"""
from __future__ import annotations

import numpy as np

from skill_assets.lib.core.runs import Qrels, Run
from skill_assets.lib.core.skill_groups import collapse_ranking, group_labels

DEFAULT_KS = (5, 10, 15, 20, 50)


def hit_matrix(rankings: list[list[str]], relevant: list[set[str]], depth: int) -> np.ndarray:
    hits = np.zeros((len(rankings), depth), dtype=np.float64)
    for i, (ranking, rel) in enumerate(zip(rankings, relevant)):
        for j, sid in enumerate(ranking[:depth]):
            if sid in rel:
                hits[i, j] = 1.0
    return hits


def per_query_metrics(run: Run, qrels: Qrels, ks: tuple[int, ...] = DEFAULT_KS) -> dict[str, np.ndarray]:
    """Each metric as an array over ``qrels``' requests, in their order (for averages, breakdowns and paired
    tests); a request ``run`` does not rank scores zero."""
    rankings = [collapse_ranking(run.ids(q), groups) for q, groups in qrels.groups.items()]
    relevant = [group_labels(groups) for groups in qrels.groups.values()]
    if any(not r for r in relevant):
        raise ValueError("every query needs at least one ground-truth skill")
    depth = max(max(ks), 10)
    hits = hit_matrix(rankings, relevant, depth)
    m = np.array([len(r) for r in relevant], dtype=np.float64)
    discounts = 1.0 / np.log2(np.arange(2, depth + 2))
    cum_hits = np.cumsum(hits, axis=1)
    out: dict[str, np.ndarray] = {"hit@1": hits[:, 0].copy()}
    first = np.where(hits[:, :10].any(axis=1), hits[:, :10].argmax(axis=1) + 1, np.inf)
    out["mrr@10"] = np.where(np.isfinite(first), 1.0 / first, 0.0)
    for k in ks:
        found = cum_hits[:, k - 1]
        dcg = (hits[:, :k] * discounts[:k]).sum(axis=1)
        ideal_counts = np.minimum(m, k).astype(int)
        idcg = np.array([discounts[:c].sum() for c in ideal_counts])
        out[f"ndcg@{k}"] = np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)
        out[f"recall@{k}"] = found / m
        out[f"fc@{k}"] = (found >= m).astype(np.float64)
        out[f"comp@{k}"] = found / np.minimum(m, k)
    top_m = np.array([cum_hits[i, int(mi) - 1] if mi <= depth else np.nan for i, mi in enumerate(m)])
    out["set_compat"] = np.where(m >= 2, (top_m >= m).astype(np.float64), np.nan)
    return out


def mean_metrics(per_query: dict[str, np.ndarray]) -> dict[str, float]:
    """Averages; set_compat over multi-skill queries only (NaN when there are none)."""
    return {name: (float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")) for name, v in per_query.items()}


def run_means(run: Run, qrels: Qrels, ks: tuple[int, ...] = DEFAULT_KS) -> dict[str, float]:
    """``mean_metrics`` of ``run`` against ``qrels``."""
    return mean_metrics(per_query_metrics(run, qrels, ks))
