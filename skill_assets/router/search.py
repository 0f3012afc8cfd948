"""Exact cosine top-k of query embeddings against the index matrix."""
from __future__ import annotations

import functools

import numpy as np
from threadpoolctl import ThreadpoolController

from skill_assets.lib.common.retrieval import Ranking

#: queries per search below which the similarity product runs single-threaded
SMALL_BATCH = 64


@functools.cache
def _blas() -> ThreadpoolController:
    """Built once: inspecting the loaded BLAS libraries costs milliseconds, a per-request budget."""
    return ThreadpoolController()


def search_threads(n_queries: int):
    """BLAS thread limit for a similarity product over ``n_queries``: a few queries make a product too small to
    share, and BLAS threads would only spin against torch's (measured on 2 cores: p50 36 -> 25 ms, p95 107 -> 34 ms
    for one query)."""
    return _blas().limit(limits=1 if n_queries < SMALL_BATCH else None, user_api="blas")


def cosine_top_k(query_embeddings: np.ndarray, matrix: np.ndarray, ids: list[str], top_k: int,
                 block: int = 1024) -> list[Ranking]:
    """Per query, the ``top_k`` rows of ``matrix`` (unit-length rows; queries normalised) best first."""
    k = min(top_k, len(ids))
    out: list[Ranking] = []
    for start in range(0, len(query_embeddings), block):
        queries = query_embeddings[start : start + block]
        with search_threads(len(queries)):
            sims = queries @ matrix.T
        if k < sims.shape[1]:
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        else:
            top = np.broadcast_to(np.arange(sims.shape[1]), sims.shape)
        for row, cand in zip(sims, top):
            order = cand[np.argsort(-row[cand], kind="stable")]
            out.append([(ids[j], float(row[j])) for j in order])
    return out
