"""Rankings, the currency every system, metric table and bench reads: exact top-k, reranking, RRF.

A ``Ranking`` (``lib.core.runs``) is one query's ``[(skill_id, score), ...]`` best first; a ``Run`` is
one ranking per request id. Top-k is written once here (``top_rows``), and everything that
selects a head of a score vector (the signals' runs, the fusion's candidates, the training miners)
goes through it, so ties break the same way everywhere: pool order.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from skill_assets.lib.core.runs import Ranking

#: reciprocal-rank fusion's constant (Cormack et al. 2009)
RRF_K = 60


def top_rows(row: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest entries of a score vector, best first (exact; ties keep pool order)."""
    k = min(k, len(row))
    top = np.argpartition(-row, k - 1)[:k] if k < len(row) else np.arange(len(row))
    return top[np.argsort(-row[top], kind="stable")]


def top_k_rankings(scores: np.ndarray, ids: Sequence[str], k: int) -> list[Ranking]:
    """Per row of a (queries, pool) score matrix, the ``k`` best skills with their scores."""
    return [[(ids[j], float(row[j])) for j in top_rows(row, k)] for row in scores]


def rerank(queries: Sequence[str], first_stage: Sequence[Ranking], skill_text: dict[str, str],
           score_pairs: Callable[[list[tuple[str, str]]], np.ndarray], depth: int = 20,
           residual: bool = False) -> list[Ranking]:
    """Rescore the top ``depth`` of each first-stage ranking with a cross-encoder; the rest keep their order below.

    ``residual``: the cross-encoder's score is added to the first stage's (a reranker trained as a correction of
    that stage, ``reranker_training``'s prior) instead of replacing it."""
    pairs = [(q, skill_text[sid]) for q, ranking in zip(queries, first_stage) for sid, _ in ranking[:depth]]
    scores = score_pairs(pairs) if pairs else np.array([])
    out, pos = [], 0
    for ranking in first_stage:
        head = ranking[:depth]
        rescored = sorted(((sid, float(scores[pos + i]) + (first if residual else 0.0))
                           for i, (sid, first) in enumerate(head)), key=lambda t: -t[1])
        pos += len(head)
        floor = min((s for _, s in rescored), default=0.0)
        out.append(rescored + [(sid, floor - 1 - i) for i, (sid, _) in enumerate(ranking[depth:])])
    return out


def rrf(lists: Sequence[Ranking], k: int, constant: int = RRF_K) -> Ranking:
    """Reciprocal-rank fusion: sum of 1 / (constant + rank) over the lists that hold a skill; ``k`` best kept."""
    fused: dict[str, float] = {}
    for ranking in lists:
        for rank, (sid, _) in enumerate(ranking, 1):
            fused[sid] = fused.get(sid, 0.0) + 1.0 / (constant + rank)
    return sorted(fused.items(), key=lambda t: (-t[1], t[0]))[:k]
