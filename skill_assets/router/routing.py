"""The ``Router`` facade: index a pool, embed queries, search, rerank where the evidence allows.

Pools come from ``pools``, cached document embeddings from ``index_cache``, the exact search from
``search``, the default models from ``registry`` and the reranker rule from ``reranker_evidence``.
Models are loaded once per ``Router``, lazily: a fully cached index needs no model.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from skill_assets.lib.common.embedding_cache import model_fingerprint
from skill_assets.lib.common.encoder_backends import BACKENDS, ScorerChoice, backend_key, choose_encoder, choose_scorer
from skill_assets.lib.common.hashing import digest
from skill_assets.lib.common.retrieval import Ranking, rerank
from skill_assets.lib.common.skill_text import ENCODER_CAPS, QUERY_CHARS, RERANKER_CAPS, skill_document
from skill_assets.router.index_cache import CACHE_FORMAT, EmbeddingStore, IndexStats, embed_documents
from skill_assets.router.pools import Skill, load_pool
from skill_assets.router.registry import bundled_minilm, registered_model, resolve_db
from skill_assets.router.reranker_evidence import reranker_evidence
from skill_assets.router.search import cosine_top_k

DEFAULT_CACHE_DIR = Path("~/.cache/skill-assets/index")
#: ``reranker=`` values meaning "the bundled base MiniLM as a cross-encoder" / "no reranker"
BASE_RERANKER = ("base", "minilm")
NO_RERANKER = ("none", "off", "")
EMBEDDER_MAX_SEQ = 256   # what the embedders are trained with (TrainingSettings.max_seq_length)
RERANKER_MAX_SEQ = 256   # likewise for the cross-encoders


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class Router:
    """Bi-encoder retrieval over an indexed pool, optionally reranked by a cross-encoder."""

    def __init__(self, embedder_path: str | Path, reranker_path: str | Path | None = None,
                 cache_dir: str | Path | None = None, query_prompt: str = "", batch_size: int = 32,
                 num_threads: int | None = None, reranker_max_length: int = RERANKER_MAX_SEQ,
                 reranker_backend: str = "auto", embedder_backend: str = "torch-bf16",
                 log: Callable[[str], None] | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.embedder_path = str(embedder_path)
        self.reranker_path = str(reranker_path) if reranker_path else None
        for kind, p in (("embedder", self.embedder_path), ("reranker", self.reranker_path)):
            if p and not Path(p).exists():
                raise FileNotFoundError(f"{kind} model folder {p} does not exist")
        self.cache_dir = Path(cache_dir or os.environ.get("SKILL_ASSETS_INDEX_CACHE") or DEFAULT_CACHE_DIR).expanduser()
        self.query_prompt = query_prompt
        self.batch_size = batch_size
        self.reranker_max_length = reranker_max_length
        for kind, backend in (("embedder", embedder_backend), ("reranker", reranker_backend)):
            if backend not in BACKENDS:  # fail here, not at the first index or rerank
                raise ValueError(f"unknown {kind} backend {backend!r}; choose one of {BACKENDS}")
        self.reranker_backend = reranker_backend
        self.embedder_backend = embedder_backend
        self.log = log or (lambda msg: None)
        if num_threads:
            import torch

            torch.set_num_threads(num_threads)
        self._embedder = None
        self._reranker = None
        self._scorer: ScorerChoice | None = None
        self._fingerprint: str | None = None
        self.skills: list[Skill] = []
        self._ids: list[str] = []
        self._matrix: np.ndarray | None = None  # (n, d) float32, L2-normalised
        self._rr_text: dict[str, str] | None = None
        self.encode_calls = 0  # documents encoded by this router (cache misses), for tests and logs

    # ---- construction
    @classmethod
    def from_store(cls, db_path: str | Path | None = None, embedder: str | Path | None = None,
                   reranker: str | Path | None = None, query_prompt: str = "", cache_dir: str | Path | None = None,
                   **kwargs) -> Router:
        """Explicit paths win; else the newest ``r3`` models in the store's registry (a reranker only unless the
        store's benchmarks show it ranking worse than its first stage); else the bundled MiniLM embedder and no
        reranker. ``reranker="base"`` asks for the bundled MiniLM as a cross-encoder (random
        head), ``reranker="none"`` for no reranking even when the store has one."""
        db = resolve_db(db_path)
        emb = str(embedder) if embedder else (registered_model(db, "embedder") or bundled_minilm())
        if reranker is None:
            rr = registered_model(db, "reranker")
            if rr and (evidence := reranker_evidence(db, rr)).helps is False:
                (kwargs.get("log") or (lambda msg: None))(
                    f"registered reranker {rr} not used, it ranks worse than its first stage: {evidence.reason}; "
                    f"pass --reranker {rr} to use it anyway")
                rr = None
        elif str(reranker).lower() in NO_RERANKER:
            rr = None
        elif str(reranker).lower() in BASE_RERANKER:
            rr = bundled_minilm()
        else:
            rr = str(reranker)
        if cache_dir is None and not os.environ.get("SKILL_ASSETS_INDEX_CACHE") and db.is_file():
            cache_dir = db.resolve().parent / "index_cache"
        return cls(emb, rr, cache_dir=cache_dir, query_prompt=query_prompt, **kwargs)

    load_pool = staticmethod(load_pool)

    # ---- models (loaded once, lazily: a fully cached index needs no model)
    @property
    def embedder(self):
        if self._embedder is None:
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(self.embedder_path, device=_device())
            model.max_seq_length = min(model.max_seq_length or EMBEDDER_MAX_SEQ, EMBEDDER_MAX_SEQ)
            model.eval()
            self._embedder = model
        return self._embedder

    @property
    def reranker(self):
        if self._reranker is None and self.reranker_path:
            from sentence_transformers import CrossEncoder

            model = CrossEncoder(self.reranker_path, num_labels=1, device=_device())
            model.max_seq_length = min(model.max_seq_length or self.reranker_max_length, self.reranker_max_length)
            model.eval()
            self._reranker = model
        return self._reranker

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = digest(f"{CACHE_FORMAT}|{model_fingerprint(self.embedder_path)}|{EMBEDDER_MAX_SEQ}|"
                                       f"{backend_key(self.embedder_backend)}")
        return self._fingerprint

    def _document_encoder(self, sample: list[str]) -> Callable[[list[str]], np.ndarray]:
        """How pool documents are embedded: by default bf16 where this CPU runs it natively and a probe of
        ``sample`` agrees with fp32 (``choose_encoder``; verdict cached beside the index), else fp32.
        Queries are always embedded by the model as is: one short text per request gains nothing."""
        choice = choose_encoder(self.embedder, self.embedder_backend, self.cache_dir / "onnx", self.fingerprint,
                                sample, self.batch_size)
        self.log(f"document encoder: {choice.backend} ({choice.reason})")
        return choice.encode

    def _encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        import torch

        with torch.inference_mode():
            emb = self.embedder.encode(texts, batch_size=batch_size or self.batch_size, normalize_embeddings=True,
                                       convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(emb, dtype=np.float32)

    # ---- indexing
    def index(self, skills: list[Skill], shard_size: int = 512) -> IndexStats:
        """Embed the skills' documents (ENCODER_CAPS), reusing the on-disk cache; encodes only misses."""
        t0 = time.perf_counter()
        if not skills:
            raise ValueError("cannot index an empty skill pool")
        ids = [s.id for s in skills]
        if len(set(ids)) != len(ids):
            raise ValueError("skill ids in the pool are not unique")
        docs = [skill_document(s.name, s.description, s.body, ENCODER_CAPS) for s in skills]
        matrix, cached, encoded = embed_documents(docs, EmbeddingStore(self.cache_dir / self.fingerprint),
                                                  self._document_encoder, self.log, shard_size)
        self.encode_calls += encoded
        self._last_encoded = encoded
        # normalise once (cached rows are already unit length; this guards models without a Normalize module)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self._matrix = np.ascontiguousarray(matrix / np.clip(norms, 1e-12, None), dtype=np.float32)
        self.skills, self._ids, self._rr_text = list(skills), ids, None
        return IndexStats(len(skills), cached, encoded, time.perf_counter() - t0)

    @property
    def skill_by_id(self) -> dict[str, Skill]:
        return {s.id: s for s in self.skills}

    def _rerank_texts(self) -> dict[str, str]:
        if self._rr_text is None:
            self._rr_text = {s.id: skill_document(s.name, s.description, s.body, RERANKER_CAPS) for s in self.skills}
        return self._rr_text

    # ---- routing
    def embed_queries(self, queries: list[str]) -> np.ndarray:
        return self._encode([self.query_prompt + q[:QUERY_CHARS] for q in queries], batch_size=64)

    def search(self, query_embeddings: np.ndarray, top_k: int, block: int = 1024) -> list[Ranking]:
        """Exact cosine top-k against the index (query embeddings already normalised)."""
        if self._matrix is None:
            raise RuntimeError("call index(skills) before routing")
        return cosine_top_k(query_embeddings, self._matrix, self._ids, top_k, block)

    @property
    def scorer(self) -> ScorerChoice:
        """How pairs are scored: on CPU a bf16 or int8 copy of the reranker when it orders probe pairs like the
        original (``choose_scorer``; export and verdict cached beside the index), else the model itself."""
        if self._scorer is None:
            fingerprint = digest(f"{model_fingerprint(self.reranker_path)}|{self.reranker_max_length}")
            self._scorer = choose_scorer(self.reranker, self.reranker_backend, self.cache_dir / "onnx", fingerprint,
                                         self._probe_pairs())
            self.log(f"reranker backend: {self._scorer.backend} ({self._scorer.reason})")
        return self._scorer

    def _probe_pairs(self, n: int = 64) -> list[tuple[str, str]]:
        """(description as a query, document) pairs from the indexed pool, half matching, half not, so the
        rank gate sees both high and low scores."""
        if not self.skills:
            return []
        rng = np.random.default_rng(0)
        texts = self._rerank_texts()
        picks = rng.choice(len(self.skills), size=(n, 2))
        return [(self.skills[a].description[:QUERY_CHARS], texts[self.skills[a if i % 2 else b].id])
                for i, (a, b) in enumerate(picks.tolist())]

    def score_pairs(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        return self.scorer.score(pairs)

    def route(self, queries: list[str], top_k: int = 20, rerank_depth: int = 20,
              use_reranker: bool = True) -> list[list[tuple[str, float]]]:
        """Per query, ``[(skill_id, score), ...]`` best first (``top_k`` long, or the pool size if smaller).

        With a reranker, the top ``rerank_depth`` dense candidates are rescored by the cross-encoder;
        anything below keeps its dense order under the reranked head.
        """
        if not queries:
            return []
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        do_rerank = use_reranker and self.reranker_path is not None and rerank_depth > 0
        depth = max(top_k, rerank_depth) if do_rerank else top_k
        first = self.search(self.embed_queries(queries), depth)
        if not do_rerank:
            return first
        reranked = rerank([q[:QUERY_CHARS] for q in queries], first, self._rerank_texts(), self.score_pairs,
                          rerank_depth)
        return [r[:top_k] for r in reranked]


def stderr_log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
