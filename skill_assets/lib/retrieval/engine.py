"""The retrieval engine: index a pool with every signal, score, fuse, rerank where configured, select.

One ``Engine`` per pool and set of models. Each signal lives in its own module (``lexical``,
``dense``, ``multilingual``), the learned fusion in ``fusion``, the reranker in ``reranking``, how
many skills to load in ``selection``. The fused ranking is computed here only (``fused``), and both
the router's ``route`` and the evaluation's system runner (``systems``) read it. Without a fusion
model the engine is the bi-encoder (+ reranker) path.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from skill_assets.lib.common.encoder_backends import BACKENDS
from skill_assets.lib.common.skill_text import RERANKER_CAPS, skill_document
from skill_assets.lib.retrieval.dense import DenseIndex
from skill_assets.lib.retrieval.document_cache import IndexStats
from skill_assets.lib.retrieval.fusion import DEFAULT_DEPTH, Candidates, FusionModel, candidates
from skill_assets.lib.retrieval.lexical import LexicalIndex
from skill_assets.lib.retrieval.multilingual import USE_MULTILINGUAL, MultilingualEncoder, MultilingualIndex
from skill_assets.lib.retrieval.pools import Skill
from skill_assets.lib.retrieval.ranking import Ranking, top_k_rankings
from skill_assets.lib.retrieval.reranking import RERANKER_MAX_SEQ, Reranker, probe_pairs
from skill_assets.lib.retrieval.selection import SelectionCut
from skill_assets.lib.retrieval.signals import (
    SIGNALS,
    dense_document,
    lexical_document,
    multilingual_document,
    skill_language,
)
from skill_assets.lib.retrieval.threads import request_threads

DEFAULT_CACHE_DIR = Path("~/.cache/skill-assets/index")
CACHE_ENV = "SKILL_ASSETS_INDEX_CACHE"


@dataclass(frozen=True)
class RankedSkill:
    skill_id: str
    score: float
    signals: dict[str, float]   # each signal's own score for this skill, and the fused score

    def as_dict(self) -> dict:
        return {"skill_id": self.skill_id, "score": round(self.score, 6), "signals": self.signals}


@dataclass(frozen=True)
class RoutedRequest:
    """The one result shape: the ranking (best first) and the skills to load."""

    ranking: list[RankedSkill]
    selected: list[str]         # the skills to load, best first

    @property
    def pairs(self) -> Ranking:
        return [(r.skill_id, r.score) for r in self.ranking]

    def as_dict(self, request_id: str | int | None = None) -> dict:
        head = {} if request_id is None else {"id": request_id}
        return {**head, "ranking": [r.as_dict() for r in self.ranking], "selected": self.selected}


@dataclass(frozen=True)
class Fused:
    """One request's fused candidates, best first: pool rows, fused scores, and each candidate's position in
    ``cands`` (where its raw signal scores are)."""

    cands: Candidates
    order: np.ndarray   # (c,) positions into cands, best first
    scores: np.ndarray  # (c,) fused score of each candidate, in cands order


class Engine:
    """Signals over an indexed pool, fused by a learned model (or the bi-encoder alone), reranked, selected."""

    def __init__(self, embedder_path: str | Path, reranker_path: str | Path | None = None,
                 cache_dir: str | Path | None = None, query_prompt: str = "", batch_size: int = 32,
                 num_threads: int | None = None, reranker_max_length: int = RERANKER_MAX_SEQ,
                 reranker_backend: str = "auto", embedder_backend: str = "torch-bf16",
                 log: Callable[[str], None] | None = None, fusion: FusionModel | None = None,
                 selection: SelectionCut | None = None, signals: Sequence[str] | None = None,
                 multilingual_model: str = USE_MULTILINGUAL) -> None:
        """``fusion`` switches on the hybrid path (its signals are indexed); ``signals`` asks for signals to be
        indexed without a fusion model (the evaluation and the fusion training score each one alone)."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        for kind, p in (("embedder", embedder_path), ("reranker", reranker_path)):
            if p and not Path(p).exists():
                raise FileNotFoundError(f"{kind} model folder {p} does not exist")
        for kind, backend in (("embedder", embedder_backend), ("reranker", reranker_backend)):
            if backend not in BACKENDS:  # fail here, not at the first index or rerank
                raise ValueError(f"unknown {kind} backend {backend!r}; choose one of {BACKENDS}")
        self.cache_dir = Path(cache_dir or os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR).expanduser()
        self.log = log or (lambda msg: None)
        if num_threads:
            import torch

            torch.set_num_threads(num_threads)
        self.dense = DenseIndex(embedder_path, self.cache_dir, query_prompt, batch_size, embedder_backend, self.log)
        self.reranker_backend = reranker_backend
        self.reranker_max_length = reranker_max_length
        self.reranker: Reranker | None = None
        self.reranker_path = str(reranker_path) if reranker_path else None
        self.fusion = fusion
        self.selection = selection or SelectionCut()
        self.signals = tuple(signals or (fusion.signals if fusion else ("dense",)))
        if unknown := set(self.signals) - set(SIGNALS):
            raise ValueError(f"unknown signals {sorted(unknown)}; choose from {SIGNALS}")
        self.multilingual = MultilingualEncoder(multilingual_model, threads=num_threads)
        self.skills: list[Skill] = []
        self.ids: list[str] = []
        self._lexical: LexicalIndex | None = None
        self._multilingual: MultilingualIndex | None = None
        self._skill_zh = np.zeros(0, dtype=bool)
        self._row_of: dict[str, int] = {}
        self._reranker_texts: dict[str, str] | None = None

    # ---- the models
    @property
    def embedder_path(self) -> str:
        return self.dense.model_path

    @property
    def reranker_path(self) -> str | None:
        return self.reranker.path if self.reranker else None

    @reranker_path.setter
    def reranker_path(self, path: str | None) -> None:
        """Swap the cross-encoder (the adoption rule scores one reranker over two fusions)."""
        self.reranker = Reranker(path, self.cache_dir, self.reranker_backend, self.reranker_max_length,
                                 self.log) if path else None
        if self.reranker:
            self.reranker.probe_pairs = lambda: probe_pairs([s.description for s in self.skills],
                                                            [self.reranker_texts[s.id] for s in self.skills])

    @property
    def encode_calls(self) -> int:
        """Documents encoded by the bi-encoder (cache misses), for tests and logs."""
        return self.dense.encode_calls

    # ---- indexing
    def index(self, skills: list[Skill], shard_size: int = 512) -> IndexStats:
        """Index the pool with every configured signal, reusing the on-disk caches; encodes only misses."""
        t0 = time.perf_counter()
        if not skills:
            raise ValueError("cannot index an empty skill pool")
        ids = [s.id for s in skills]
        if len(set(ids)) != len(ids):
            raise ValueError("skill ids in the pool are not unique")
        cached, encoded = self.dense.index([dense_document(s) for s in skills], shard_size)
        self.skills, self.ids, self._reranker_texts = list(skills), ids, None
        self._row_of = {sid: i for i, sid in enumerate(ids)}
        if "bm25" in self.signals:
            self._lexical, _ = LexicalIndex.build_or_load([lexical_document(s) for s in skills], self.cache_dir,
                                                          self.log)
        if "multilingual" in self.signals:
            self._multilingual, more = MultilingualIndex.build_or_load(
                [multilingual_document(s) for s in skills], self.cache_dir, self.multilingual, self.log)
            encoded += more
        self._skill_zh = np.array([skill_language(s) == "zh" for s in skills], dtype=bool)
        return IndexStats(len(skills), cached, encoded, time.perf_counter() - t0)

    @property
    def skill_by_id(self) -> dict[str, Skill]:
        return {s.id: s for s in self.skills}

    @property
    def reranker_texts(self) -> dict[str, str]:
        """What the cross-encoder reads of each pool skill (``RERANKER_CAPS``)."""
        if self._reranker_texts is None:
            self._reranker_texts = {s.id: skill_document(s.name, s.description, s.body, RERANKER_CAPS)
                                    for s in self.skills}
        return self._reranker_texts

    def similarity(self, a: str, b: str) -> float:
        """Cosine of two pool skills' documents: the selection cut reads it to pass over copies (cosine ≥ its
        ``copy_cosine``) and to see two skills that would serve one need."""
        return self.dense.similarity(self._row_of[a], self._row_of[b])

    # ---- scoring
    def signal_scores(self, queries: list[str], checkpoint: Callable[[], None] = lambda: None
                      ) -> dict[str, np.ndarray]:
        """``{signal: (queries, pool) scores}`` for every indexed signal, each over the whole query.

        ``checkpoint()`` is called before each signal: a caller whose client has gone raises there (``serve``)."""
        if self.dense.matrix is None:
            raise RuntimeError("call index(skills) before routing")
        out: dict[str, np.ndarray] = {}
        with request_threads(len(queries)):
            if "dense" in self.signals:
                checkpoint()
                out["dense"] = self.dense.scores(queries)
            if "bm25" in self.signals:
                checkpoint()
                out["bm25"] = self._lexical.scores(queries)
            if "multilingual" in self.signals:
                checkpoint()
                out["multilingual"] = self._multilingual.scores(queries)
        return out

    def signal_versions(self) -> dict[str, str]:
        """What produced each signal's scores (library or weights fingerprint), for ``model_version`` columns."""
        versions = {"dense": self.dense.fingerprint, "multilingual": self.multilingual.fingerprint}
        return {**versions, "bm25": self._lexical.version} if self._lexical else versions

    def candidates(self, queries: list[str], depth: int | None = None, scores: dict[str, np.ndarray] | None = None,
                   signals: Sequence[str] | None = None) -> list[Candidates]:
        """Every signal's top ``depth`` of each query, with the fusion features (query language detected);
        ``scores`` when the caller already has ``signal_scores(queries)``; ``signals`` default: the fusion's."""
        signals = signals or (self.fusion.signals if self.fusion else self.signals)
        return candidates(scores or self.signal_scores(queries), signals, queries,
                          self._skill_zh, depth or (self.fusion.depth if self.fusion else DEFAULT_DEPTH))

    def fused(self, queries: list[str], scores: dict[str, np.ndarray] | None = None,
              checkpoint: Callable[[], None] = lambda: None) -> list[Fused]:
        """The fusion's ranking of each request's candidates: the one place it is computed."""
        if self.fusion is None:
            raise RuntimeError("no fusion model: the engine ranks by the bi-encoder alone")
        out = []
        for cands in self.candidates(queries, scores=scores or self.signal_scores(queries, checkpoint)):
            checkpoint()
            out.append(Fused(cands, *self.fusion.rank(cands)))
        return out

    def fused_rankings(self, fused: Sequence[Fused], k: int | None = None) -> list[Ranking]:
        return [[(self.ids[f.cands.rows[j]], float(f.scores[j])) for j in f.order[:k]] for f in fused]

    # ---- routing
    def route(self, queries: list[str], top_k: int = 20, rerank_depth: int = 20, use_reranker: bool = True,
              cap: int | None = None, checkpoint: Callable[[], None] = lambda: None) -> list[RoutedRequest]:
        """Per request: the ranking (``top_k`` long, or the pool if smaller), reranked at the head where a reranker
        is configured, and ``selected``, the skills to load (1 to ``cap``, default the cut's cap).

        With a fusion model the ranking is the fused one, each skill carrying every signal's score, and the cut
        selects on the fused scores. Without one: bi-encoder search, no per-signal scores, the first skill
        selected (no cut has been learned). ``checkpoint()`` is called between stages (each signal, each
        request's fusion), so a caller can stop work whose client has gone."""
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        if not queries:
            return []
        rerank = self.reranker if use_reranker and rerank_depth > 0 else None
        if self.fusion is None:
            depth = max(top_k, rerank_depth) if rerank else top_k
            rankings = top_k_rankings(self.dense.scores(queries), self.ids, depth)
            if rerank:
                rankings = rerank.rerank(queries, rankings, self.reranker_texts, rerank_depth)
            return [RoutedRequest([RankedSkill(sid, score, {}) for sid, score in r[:top_k]], [r[0][0]])
                    for r in rankings]
        fused = self.fused(queries, checkpoint=checkpoint)
        rankings = self.fused_rankings(fused)
        if rerank:
            checkpoint()
            rankings = rerank.rerank(queries, rankings, self.reranker_texts, rerank_depth)
        return [self._routed(query, f, ranking, top_k, cap) for query, f, ranking in zip(queries, fused, rankings)]

    def _routed(self, query: str, f: Fused, ranking: Ranking, top_k: int, cap: int | None) -> RoutedRequest:
        position = {self.ids[f.cands.rows[j]]: j for j in f.order}
        names = self.fusion.signals

        def signals_of(j: int) -> dict[str, float]:
            return {**{n: round(float(f.cands.raw[j, i]), 6) for i, n in enumerate(names)},
                    "fused": round(float(f.scores[j]), 6)}

        ranked = [RankedSkill(sid, score, signals_of(position[sid])) for sid, score in ranking[:top_k]]
        # the cut reads fused scores (what it was fitted on), in the final order
        order = [sid for sid, _ in ranking]
        selected = self.selection.select(order, [float(f.scores[position[sid]]) for sid in order], self.similarity,
                                         query, cap)
        return RoutedRequest(ranked, selected)
