"""A request's path through the engine: score → candidates → fuse → rerank → select → abstain, over one index.

The engine owns the models and the index builder; what a request does with them is here, as steps that take the
published ``PoolIndex`` they read and the previous step's output, so data flows down once and a call sees one index
whatever a background build publishes meanwhile (``Engine.route`` reads ``Engine.pool`` once and passes it). A
``Pipeline`` holds nothing that changes: the bi-encoder that reads requests (the pool holds the documents' side and
the other signals' encoders), the fitted parts and the reranker, gathered when a call begins.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from skill_assets.lib.retrieval.answering import fused_by, fused_rankings, route_lexical, routed
from skill_assets.lib.retrieval.dense import DenseIndex
from skill_assets.lib.retrieval.engine_config import FittedRouting
from skill_assets.lib.retrieval.fusion import DEFAULT_DEPTH, Candidates, FusionModel, candidates
from skill_assets.lib.retrieval.glossary import gloss, with_gloss
from skill_assets.lib.retrieval.multilingual import DESCRIPTION_READING
from skill_assets.lib.retrieval.pool_index import PoolIndex
from skill_assets.lib.retrieval.ranking import top_k_rankings
from skill_assets.lib.retrieval.reranking import Reranker
from skill_assets.lib.retrieval.results import Fused, RankedSkill, RoutedRequest
from skill_assets.lib.retrieval.signals import LEGACY_DENSE_READING
from skill_assets.lib.retrieval.threads import request_threads

Checkpoint = Callable[[], None]


def no_checkpoint() -> None:
    """A caller that never stops a call."""


@dataclass(frozen=True)
class Pipeline:
    """The parts a request passes through; ``fitted`` with its cuts given (``Engine`` fills in the unfitted ones),
    ``signals`` the engine's configured ones and ``is_complete`` whether a pool holds all of them (the index builder
    says)."""

    dense: DenseIndex
    dense_reading: str
    fitted: FittedRouting
    reranker: Reranker | None
    signals: tuple[str, ...]
    is_complete: Callable[[PoolIndex], bool]

    @property
    def fusion(self) -> FusionModel | None:
        return self.fitted.fusion

    def scores(self, pool: PoolIndex, queries: list[str], signals: Sequence[str] | None = None,
               checkpoint: Checkpoint = no_checkpoint) -> dict[str, np.ndarray]:
        """``{signal: (queries, pool) scores}`` for ``signals`` (default: every configured one), each over the whole
        query; a signal whose index is still being built raises. With the multilingual signal comes its description
        reading alone under ``DESCRIPTION_READING`` (what the abstention reads; no signal of the fusion), from the
        same encoding of the request. ``checkpoint()`` is called before each signal and, inside the encoders, before
        each piece of a long query is encoded."""
        signals = tuple(signals or self.signals)
        if missing := [s for s in signals if not pool.has(s)]:
            raise RuntimeError(f"the {', '.join(missing)} index is still being built")
        out: dict[str, np.ndarray] = {}
        # each request's glosses, found once for the gloss signal and the bi-encoder's reading of them
        glossing = "gloss" in signals or ("dense" in signals and self.dense_reading != LEGACY_DENSE_READING)
        glosses = [gloss(q) for q in queries] if glossing else None
        with request_threads(len(queries)):
            if "dense" in signals:
                checkpoint()
                out["dense"] = self._dense_scores(pool, queries, glosses, checkpoint)
            if "bm25" in signals:
                checkpoint()
                out["bm25"] = pool.lexical.scores(queries)
            if "gloss" in signals:
                checkpoint()
                out["gloss"] = self._gloss_scores(pool, queries, glosses, out.get("bm25"))
            if "multilingual" in signals:
                checkpoint()
                readings = pool.multilingual.readings(queries, checkpoint)
                out["multilingual"], out[DESCRIPTION_READING] = readings.signal, readings.description
        return out

    def _dense_scores(self, pool: PoolIndex, queries: list[str], glosses: Sequence[str] | None = None,
                      checkpoint: Checkpoint = no_checkpoint) -> np.ndarray:
        """The bi-encoder's (queries, pool) cosines as ``dense_reading`` reads a request: under ``DENSE_READING`` a
        request with Chinese in it scores each skill by the better of its own cosine and its glosses' (the English
        MiniLM reads the glosses of a request for an English skill better than its Chinese; ``signals``).
        ``glosses``: each request's, where the caller found them already."""
        scores = self.dense.scores(queries, pool.dense, checkpoint)
        if self.dense_reading == LEGACY_DENSE_READING:
            return scores
        glosses = glosses if glosses is not None else [gloss(q) for q in queries]
        glossed = {i: words for i, words in enumerate(glosses) if words}
        if glossed:
            rows = list(glossed)
            scores[rows] = np.maximum(scores[rows], self.dense.scores(list(glossed.values()), pool.dense, checkpoint))
        return scores

    @staticmethod
    def _gloss_scores(pool: PoolIndex, queries: list[str], glosses: Sequence[str], bm25: np.ndarray | None
                      ) -> np.ndarray:
        """BM25 of each request with its ``glosses``; a request with nothing to gloss (no Chinese) is its ``bm25``
        row, copied where this call scored it rather than scored twice."""
        glossed = [with_gloss(q, g) for q, g in zip(queries, glosses)]
        if bm25 is None:
            return pool.lexical.scores(glossed)
        out = bm25.copy()
        if changed := [i for i, (q, g) in enumerate(zip(queries, glossed)) if g != q]:
            out[changed] = pool.lexical.scores([glossed[i] for i in changed])
        return out

    def candidates(self, pool: PoolIndex, queries: list[str], scores: dict[str, np.ndarray] | None = None,
                   signals: Sequence[str] | None = None, depth: int | None = None) -> list[Candidates]:
        """Every signal's top ``depth`` of each query with the fusion features; ``signals`` default: the fusion's
        (the configured ones without a fusion); ``scores`` computed here where the caller has none."""
        signals = signals or (self.fusion.signals if self.fusion else self.signals)
        return candidates(scores or self.scores(pool, queries, signals), signals, queries, pool.skill_zh,
                          depth or (self.fusion.depth if self.fusion else DEFAULT_DEPTH))

    def fused(self, pool: PoolIndex, queries: list[str], scores: dict[str, np.ndarray] | None = None,
              checkpoint: Checkpoint = no_checkpoint) -> list[Fused]:
        """The fusion's ranking of each request's candidates: the one place it is computed (``scores`` read where
        the caller has them, else scored here with the fusion's signals)."""
        if self.fusion is None:
            raise RuntimeError("no fusion model: the engine ranks by the bi-encoder alone")
        scores = scores or self.scores(pool, queries, self.fusion.signals, checkpoint)
        return fused_by(self.fusion, self.candidates(pool, queries, scores), checkpoint)

    def route(self, pool: PoolIndex, queries: list[str], top_k: int, rerank_depth: int, use_reranker: bool,
              cap: int | None, checkpoint: Checkpoint) -> list[RoutedRequest]:
        """``Engine.route`` over ``pool``: the lexical answer while only BM25 is indexed, the bi-encoder's without a
        fusion, else fused, reranked at the head where a reranker is configured, selected, abstained."""
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        if not queries:
            return []
        fitted = self.fitted
        if not self.is_complete(pool):
            return route_lexical(pool, queries, top_k, cap, checkpoint, fitted.lexical_fusion,
                                 fitted.lexical_selection)
        rerank = self.reranker if use_reranker and rerank_depth > 0 else None
        if self.fusion is None:
            return self._dense_route(pool, queries, top_k, rerank_depth, rerank)
        abstention = fitted.abstention  # fitted over this fusion, whose signals hold the multilingual one it reads
        scores = self.scores(pool, queries, self.fusion.signals, checkpoint)
        fused = self.fused(pool, queries, scores, checkpoint)
        rankings = fused_rankings(fused, pool)
        if rerank:
            checkpoint()
            rankings = rerank.rerank(queries, rankings, pool.reranker_texts(), rerank_depth)
        answers = [routed(query, f, ranking, top_k, cap, self.fusion, fitted.selection, pool.cosine, pool)
                   for query, f, ranking in zip(queries, fused, rankings)]
        return (abstention.apply(queries, fused, answers, pool, scores[DESCRIPTION_READING], checkpoint) if abstention
                else answers)

    def _dense_route(self, pool: PoolIndex, queries: list[str], top_k: int, rerank_depth: int,
                     rerank: Reranker | None) -> list[RoutedRequest]:
        """Without a fusion: the bi-encoder's search, reranked where configured, its first skill selected (no cut
        has been learned) and no per-signal scores."""
        depth = max(top_k, rerank_depth) if rerank else top_k
        rankings = top_k_rankings(self._dense_scores(pool, queries), pool.ids, depth)
        if rerank:
            rankings = rerank.rerank(queries, rankings, pool.reranker_texts(), rerank_depth)
        return [RoutedRequest([RankedSkill(sid, score, {}) for sid, score in r[:top_k]], [r[0][0]], ("dense",))
                for r in rankings]
