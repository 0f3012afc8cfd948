"""Rank a skill pool for queries: BM25, dense bi-encoder search, cross-encoder reranking.

All three return, per query, skill ids best first with scores, so every system flows through
the same metrics and the same ``retrieval_runs`` table.
"""
from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

Ranking = list[tuple[str, float]]
_TOKEN = re.compile(r"[a-z0-9][a-z0-9+#._-]*|[\u4e00-\u9fff]+")


def bm25_tokens(text: str) -> list[str]:
    """Lower-cased words; Chinese runs become character bigrams (no segmenter needed for BM25)."""
    tokens: list[str] = []
    for tok in _TOKEN.findall(text.lower()):
        if tok[0] >= "\u4e00":
            tokens.extend(tok[i : i + 2] for i in range(max(1, len(tok) - 1)))
        else:
            tokens.append(tok)
    return tokens or ["<empty>"]


def bm25_rank(skill_ids: list[str], documents: list[str], queries: list[str], top_k: int) -> list[Ranking]:
    import bm25s

    retriever = bm25s.BM25()
    retriever.index([bm25_tokens(d) for d in documents], show_progress=False)
    k = min(top_k, len(skill_ids))
    idx, scores = retriever.retrieve([bm25_tokens(q) for q in queries], k=k, show_progress=False)
    return [[(skill_ids[int(j)], float(s)) for j, s in zip(row_i, row_s)] for row_i, row_s in zip(idx, scores)]


def dense_rank(skill_ids: list[str], skill_embeddings: np.ndarray, query_embeddings: np.ndarray, top_k: int
               ) -> list[Ranking]:
    """Exact cosine top-k (embeddings are L2-normalised here); exact search is fast to ~100K skills."""
    s = skill_embeddings / np.clip(np.linalg.norm(skill_embeddings, axis=1, keepdims=True), 1e-12, None)
    q = query_embeddings / np.clip(np.linalg.norm(query_embeddings, axis=1, keepdims=True), 1e-12, None)
    sims = q @ s.T
    k = min(top_k, len(skill_ids))
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    out = []
    for i, cand in enumerate(top):
        order = cand[np.argsort(-sims[i, cand], kind="stable")]
        out.append([(skill_ids[j], float(sims[i, j])) for j in order])
    return out


def rerank(queries: list[str], first_stage: list[Ranking], skill_text: dict[str, str],
           score_pairs: Callable[[list[tuple[str, str]]], np.ndarray], depth: int = 20) -> list[Ranking]:
    """Rescore the top ``depth`` of each first-stage ranking with a cross-encoder; the rest keep their order below."""
    pairs = [(q, skill_text[sid]) for q, ranking in zip(queries, first_stage) for sid, _ in ranking[:depth]]
    scores = score_pairs(pairs) if pairs else np.array([])
    out, pos = [], 0
    for ranking in first_stage:
        head = ranking[:depth]
        rescored = sorted(((sid, float(scores[pos + i])) for i, (sid, _) in enumerate(head)), key=lambda t: -t[1])
        pos += len(head)
        floor = min((s for _, s in rescored), default=0.0)
        out.append(rescored + [(sid, floor - 1 - i) for i, (sid, _) in enumerate(ranking[depth:])])
    return out
