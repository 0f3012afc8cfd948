"""The retrieval engine: the models, the index builder, and a thin entry to the request path.

One ``Engine`` per pool and set of models. Each signal lives in its own module (``lexical``, ``dense``,
``multilingual``), the learned fusion in ``fusion``, the reranker in ``reranking``, how many skills to load in
``selection``, the index the engine reads in ``index_builder`` (lexical first, then the encoders' indexes, each
published whole), and what a request does over that index in ``pipeline`` (score → candidates → fuse → rerank →
select → abstain, the fused ranking computed there only; ``answering`` holds the steps from fused scores to an
answer). Both the router's ``route`` and the evaluation's system runner (``systems``) read it through here. Without a
fusion model the engine is the bi-encoder (+ reranker) path. Routing reads the published ``PoolIndex`` once per call
and the pipeline works on that object alone, so a call sees the lexical or the full index, never a half-built one;
every answer names the signals it used (``RoutedRequest.signals_used``).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from skill_assets.lib.core.skill_text import TextCaps
from skill_assets.lib.models.encoder_backends import BACKENDS
from skill_assets.lib.retrieval.dense import DenseIndex
from skill_assets.lib.retrieval.document_cache import IndexStats
from skill_assets.lib.retrieval.engine_config import EngineSettings, FittedRouting
from skill_assets.lib.retrieval.fusion import Candidates, card_problem
from skill_assets.lib.retrieval.glossary import GLOSSARY
from skill_assets.lib.retrieval.index_builder import IndexBuilder
from skill_assets.lib.retrieval.multilingual import (
    LEGACY_READING,
    READING,
    READING_CARD_KEY,
    MultilingualEncoder,
    MultilingualRead,
)
from skill_assets.lib.retrieval.pipeline import Checkpoint, Pipeline, no_checkpoint
from skill_assets.lib.retrieval.pool_index import IndexBuild, PoolIndex
from skill_assets.lib.retrieval.pools import Skill
from skill_assets.lib.retrieval.reranking import Reranker, probe_pairs
from skill_assets.lib.retrieval.results import Fused, RoutedRequest
from skill_assets.lib.retrieval.selection import SelectionCut
from skill_assets.lib.retrieval.signals import (
    DENSE_READING,
    DENSE_READING_CARD_KEY,
    LEGACY_DENSE_READING,
    MULTILINGUAL_CAPS,
    SIGNALS,
    signal_version,
)
from skill_assets.lib.retrieval.threads import request_threads

DEFAULT_CACHE_DIR = Path("~/.cache/skill-assets/index")
CACHE_ENV = "SKILL_ASSETS_INDEX_CACHE"


class Engine:
    """Signals over an indexed pool, fused by a learned model (or the bi-encoder alone), reranked, selected."""

    def __init__(self, embedder_path: str | Path, reranker_path: str | Path | None = None, *,
                 fitted: FittedRouting | None = None, settings: EngineSettings | None = None,
                 signals: Sequence[str] | None = None, cache_dir: str | Path | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        """``fitted.fusion`` switches on the hybrid path (its signals are indexed); ``signals`` asks for signals to be
        indexed without a fusion model (the evaluation and the fusion training score each one alone). The fusion's
        card says how documents are read, as its features were computed: ``document_tokens`` caps what the
        bi-encoder reads of each (``DenseIndex``; none without it), ``multilingual_body_chars`` the body the
        multilingual encoder reads (default ``MULTILINGUAL_CAPS``). Both are fixed here, at construction."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        settings = settings or EngineSettings()
        fitted = fitted or FittedRouting()
        for kind, path in (("embedder", embedder_path), ("reranker", reranker_path)):
            if path and not Path(path).exists():
                raise FileNotFoundError(f"{kind} model folder {path} does not exist")
        for kind, backend in (("embedder", settings.embedder_backend), ("reranker", settings.reranker_backend)):
            if backend not in BACKENDS:  # fail here, not at the first index or rerank
                raise ValueError(f"unknown {kind} backend {backend!r}; choose one of {BACKENDS}")
        if fitted.lexical_fusion is not None and tuple(fitted.lexical_fusion.signals) != ("bm25",):
            raise ValueError(f"the lexical fusion must score bm25 alone, not {list(fitted.lexical_fusion.signals)}")
        self.settings = settings
        self.cache_dir = Path(cache_dir or os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR).expanduser()
        self.log = log or (lambda msg: None)
        if settings.num_threads:
            import torch

            torch.set_num_threads(settings.num_threads)
        self.fusion = fitted.fusion
        self.selection = fitted.selection or SelectionCut()
        self.lexical_fusion = fitted.lexical_fusion
        self.lexical_selection = fitted.lexical_selection or SelectionCut()
        self.abstention = fitted.abstention
        self.signals = tuple(signals or (self.fusion.signals if self.fusion else ("dense",)))
        if unknown := set(self.signals) - set(SIGNALS):
            raise ValueError(f"unknown signals {sorted(unknown)}; choose from {SIGNALS}")
        if "gloss" in self.signals and "bm25" not in self.signals:
            raise ValueError("the gloss signal scores the BM25 index: it needs the bm25 signal beside it")
        card = self.fusion.card if self.fusion is not None else {}
        if why := card_problem(card):  # a fusion built in code, not loaded (``FusionModel.load`` checks the file)
            raise ValueError(f"the fusion's card {why}")
        caps = replace(MULTILINGUAL_CAPS, body_chars=card.get("multilingual_body_chars", MULTILINGUAL_CAPS.body_chars))
        # a fusion is routed with the multilingual reading it was fitted over; an engine without one (the fits, the
        # evaluation of each signal) reads as a fusion fitted now will
        reading = card.get(READING_CARD_KEY, LEGACY_READING) if self.fusion is not None else READING
        self.dense_reading = (card.get(DENSE_READING_CARD_KEY, LEGACY_DENSE_READING) if self.fusion is not None
                              else DENSE_READING)
        dense = DenseIndex(embedder_path, self.cache_dir, settings.query_prompt, settings.batch_size,
                           settings.embedder_backend, self.log, card.get("document_tokens"), settings.query_backend)
        multilingual = MultilingualEncoder(settings.multilingual_model, threads=settings.num_threads)
        self.indexes = IndexBuilder(dense, multilingual, MultilingualRead(caps, reading), self.signals, self.cache_dir,
                                    self.log, self._warm, self._signals_of)
        self.reranker: Reranker | None = None
        self.reranker_path = str(reranker_path) if reranker_path else None

    # ---- the models
    @property
    def dense(self) -> DenseIndex:
        return self.indexes.dense

    @property
    def multilingual(self) -> MultilingualEncoder:
        return self.indexes.multilingual

    @property
    def multilingual_caps(self) -> TextCaps:
        return self.indexes.multilingual_read.caps

    @property
    def multilingual_reading(self) -> str:
        return self.indexes.multilingual_read.reading

    @property
    def multilingual_version(self) -> str:
        """What produced the multilingual signal's scores: the encoder and the reading (``signal_version``)."""
        return signal_version(self.multilingual.fingerprint, self.multilingual_reading, LEGACY_READING)

    @property
    def embedder_path(self) -> str:
        return self.dense.model_path

    @property
    def reranker_path(self) -> str | None:
        return self.reranker.path if self.reranker else None

    @reranker_path.setter
    def reranker_path(self, path: str | None) -> None:
        """Swap the cross-encoder (the adoption rule scores one reranker over two fusions)."""
        self.reranker = Reranker(path, self.cache_dir, self.settings.reranker_backend,
                                 self.settings.reranker_max_length, self.log) if path else None
        if self.reranker:
            self.reranker.probe_pairs = lambda: probe_pairs([s.description for s in self.skills],
                                                            [self.reranker_texts[s.id] for s in self.skills])

    @property
    def encode_calls(self) -> int:
        """Documents encoded by the bi-encoder (cache misses), for tests and logs."""
        return self.dense.encode_calls

    def read_documents(self, document_tokens: int | None, multilingual_body_chars: int) -> None:
        """Read pool documents to these caps, as a fusion being fitted here will route them (a fitted fusion's card
        sets both at construction). Before indexing only: an index is read at one set of caps."""
        self.indexes.read_documents(document_tokens, multilingual_body_chars)

    def _warm(self) -> None:
        """Load the request encoders and the fusion's booster (importing sentence-transformers and lightgbm and
        loading the models takes seconds, ten and more on busy cores) before the full index is published."""
        with request_threads(1):
            self.dense.encode(["warm-up"])
            if "multilingual" in self.signals:
                self.multilingual.encode(["warm-up"])
        if self.fusion is not None:
            self.fusion.ready()

    # ---- the index (``index_builder``)
    def index(self, skills: list[Skill], shard_size: int = 512) -> IndexStats:
        """Index the pool with every configured signal, reusing the on-disk caches (encodes only misses); returns
        once the full index is published."""
        return self.start_index(skills, shard_size, encoders="now").wait()

    def start_index(self, skills: list[Skill], shard_size: int = 512, encoders: str = "background",
                    hold: Callable[[], None] | None = None) -> IndexBuild:
        """``IndexBuilder.start``: BM25 published before this returns, the encoders' indexes as ``encoders`` says."""
        return self.indexes.start(skills, shard_size, encoders, hold)

    def keep_lexical_tokens(self) -> None:
        """``IndexBuilder.keep_lexical_tokens``: the next re-index tokenizes only new documents."""
        self.indexes.keep_lexical_tokens()

    @property
    def pool(self) -> PoolIndex:
        """The published index (read once per call: a build may publish a newer one meanwhile)."""
        return self.indexes.pool

    def _signals_of(self, pool: PoolIndex) -> tuple[str, ...]:
        """The signals an answer over ``pool`` uses."""
        if self.indexes.is_complete(pool):
            return tuple(self.fusion.signals) if self.fusion else ("dense",)
        return ("bm25",)

    @property
    def ready_signals(self) -> tuple[str, ...]:
        """The signals the next answer would use: ``("bm25",)`` while the encoders' indexes build."""
        return self._signals_of(self.pool)

    @property
    def complete(self) -> bool:
        """Whether the full index (every configured signal) is published."""
        return self.indexes.complete

    @property
    def skills(self) -> list[Skill]:
        pool = self.indexes.published
        return list(pool.skills) if pool else []

    @property
    def ids(self) -> list[str]:
        pool = self.indexes.published
        return pool.ids if pool else []

    @property
    def skill_by_id(self) -> dict[str, Skill]:
        return {s.id: s for s in self.skills}

    @property
    def reranker_texts(self) -> dict[str, str]:
        """What the cross-encoder reads of each pool skill (``RERANKER_CAPS``)."""
        return self.pool.reranker_texts()

    def similarity(self, a: str, b: str) -> float:
        """Cosine of two pool skills' documents: the selection cut reads it to pass over copies (cosine ≥ its
        ``copy_cosine``) and to see two skills that would serve one need."""
        return self.pool.cosine(a, b)

    def lexical_similarity(self, a: str, b: str) -> float:
        """What the lexical phase's cut reads instead (no cosine exists yet): 1 for identical lexical documents (a
        copy), else 0. The lexical cut is fitted with it too (``router.shipped_router``)."""
        return self.pool.same_document(a, b)

    # ---- the request path (``pipeline``)
    @property
    def pipeline(self) -> Pipeline:
        """The parts a request passes through, as they are now (``adoption`` and the router asset set the fusion
        and cut after construction, ``Router.from_store`` the abstention)."""
        fitted = FittedRouting(self.fusion, self.selection, self.lexical_fusion, self.lexical_selection,
                               self.abstention)
        return Pipeline(self.dense, self.dense_reading, fitted, self.reranker, self.signals,
                        self.indexes.is_complete)

    def signal_scores(self, queries: list[str], checkpoint: Checkpoint = no_checkpoint,
                      signals: Sequence[str] | None = None, pool: PoolIndex | None = None) -> dict[str, np.ndarray]:
        """``Pipeline.scores`` over ``pool`` (default: the published index); ``checkpoint()`` lets a caller whose
        client has gone stop there (``serve``)."""
        return self.pipeline.scores(pool or self.pool, queries, signals, checkpoint)

    def signal_versions(self) -> dict[str, str]:
        """What produced each signal's scores (library or weights fingerprint), for ``model_version`` columns."""
        versions = {"dense": signal_version(self.dense.fingerprint, self.dense_reading, LEGACY_DENSE_READING),
                    "multilingual": self.multilingual_version}
        pool = self.indexes.published
        lexical = pool.lexical if pool else None
        if lexical is None:
            return versions
        return {**versions, "bm25": lexical.version, "gloss": f"{lexical.version}|{GLOSSARY}"}

    def candidates(self, queries: list[str], depth: int | None = None, scores: dict[str, np.ndarray] | None = None,
                   signals: Sequence[str] | None = None, pool: PoolIndex | None = None) -> list[Candidates]:
        """``Pipeline.candidates`` over ``pool`` (default: the published index)."""
        return self.pipeline.candidates(pool or self.pool, queries, scores, signals, depth)

    def fused(self, queries: list[str], scores: dict[str, np.ndarray] | None = None,
              checkpoint: Checkpoint = no_checkpoint, pool: PoolIndex | None = None) -> list[Fused]:
        """``Pipeline.fused`` over ``pool`` (default: the published index)."""
        return self.pipeline.fused(pool or self.pool, queries, scores, checkpoint)

    def route(self, queries: list[str], top_k: int = 20, rerank_depth: int = 20, use_reranker: bool = True,
              cap: int | None = None, checkpoint: Checkpoint = no_checkpoint) -> list[RoutedRequest]:
        """Per request: the ranking (``top_k`` long, or the pool if smaller), reranked at the head where a reranker
        is configured, ``selected``, the skills to load (1 to ``cap``, default the cut's cap), and
        ``signals_used``.

        With a fusion model the ranking is the fused one, each skill carrying every signal's score, and the cut
        selects on the fused scores. Without one: bi-encoder search, no per-signal scores, the first skill
        selected (no cut has been learned). While only BM25 is indexed: the lexical answer (``answering.route_lexical``).
        With an abstention, a fused answer no skill fits has ``selected`` empty and ``no_fit`` saying why, its
        ranking unchanged (not the lexical answer: the abstention reads every signal's best score).
        ``checkpoint()`` is called between stages (each signal, each request's fusion), so a caller can stop
        work whose client has gone. The published index is read once, here: the call works on that one whatever a
        background build publishes meanwhile."""
        return self.pipeline.route(self.pool, queries, top_k, rerank_depth, use_reranker, cap, checkpoint)
