"""The ``Router`` facade: index a pool, score it with every signal, fuse, rerank where the evidence allows, select.

Pools come from ``pools``, cached document embeddings from ``index_cache``, the lexical and
multilingual signals from ``lexical_index`` and ``multilingual_index``, the learned fusion from
``fusion``, how many skills to load from ``selection``, and the default parts from ``registry``
(the shipped router, or store models that passed ``adoption``'s rule). Models are loaded once per ``Router``, lazily: a
fully cached index needs no model. Without a fusion model the router is today's bi-encoder
(+ reranker) path.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from skill_assets.lib.common.embedding_cache import model_fingerprint
from skill_assets.lib.common.encoder_backends import BACKENDS, ScorerChoice, backend_key, choose_encoder, choose_scorer
from skill_assets.lib.common.hashing import digest
from skill_assets.lib.common.retrieval import rerank
from skill_assets.lib.common.skill_text import ENCODER_CAPS, QUERY_CHARS, RERANKER_CAPS, skill_document
from skill_assets.router.chunking import best_piece, chunk_embeddings
from skill_assets.router.fusion import DEFAULT_DEPTH, Candidates, FusionModel, candidates
from skill_assets.router.index_cache import CACHE_FORMAT, EmbeddingStore, IndexStats, embed_documents
from skill_assets.router.lexical_index import TOKENIZER, LexicalIndex
from skill_assets.router.multilingual_index import USE_MULTILINGUAL, MultilingualEncoder, MultilingualIndex
from skill_assets.router.pools import Skill, load_pool
from skill_assets.router.registry import bundled_minilm, default_parts, load_fusion, resolve_db
from skill_assets.router.search import request_threads, search_threads, top_k_rows
from skill_assets.router.selection import SelectionCut
from skill_assets.router.signals import SIGNALS, lexical_document, multilingual_document, skill_language

DEFAULT_CACHE_DIR = Path("~/.cache/skill-assets/index")
#: ``reranker=`` values meaning "the bundled base MiniLM as a cross-encoder" / "no reranker"
BASE_RERANKER = ("base", "minilm")
NO_RERANKER = ("none", "off", "")
EMBEDDER_MAX_SEQ = 256   # what the embedders are trained with (TrainingSettings.max_seq_length)
RERANKER_MAX_SEQ = 256   # likewise for the cross-encoders
QUERY_CHUNK_CHARS = 1000  # a request piece the bi-encoder reads whole (~256 tokens of English)


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class Router:
    """Bi-encoder retrieval over an indexed pool, optionally reranked by a cross-encoder."""

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
        self.fusion = fusion
        self.selection = selection or SelectionCut()
        self.signals = tuple(signals or (fusion.signals if fusion else ("dense",)))
        unknown = set(self.signals) - set(SIGNALS)
        if unknown:
            raise ValueError(f"unknown signals {sorted(unknown)}; choose from {SIGNALS}")
        self.multilingual = MultilingualEncoder(multilingual_model, threads=num_threads)
        self._lexical: LexicalIndex | None = None
        self._multilingual: MultilingualIndex | None = None
        self._skill_zh = np.zeros(0, dtype=bool)
        self._row_of: dict[str, int] = {}

    # ---- construction
    @classmethod
    def from_store(cls, db_path: str | Path | None = None, embedder: str | Path | None = None,
                   reranker: str | Path | None = None, query_prompt: str = "", cache_dir: str | Path | None = None,
                   fusion: str | Path | None = None, **kwargs) -> Router:
        """The router a user gets: the shipped router (``shipped_router``: fusion and selection cut fitted on the
        curated benchmark, bundled MiniLM, no reranker), unless the store's newest fusion or reranker passed the
        adoption rule (``adoption``: ≥ 100 train and ≥ 50 disjoint dev requests, and a dev win over the default);
        each store model left out is logged with the reason. Explicit arguments win: ``embedder`` a bi-encoder
        path; ``fusion`` a fusion folder or ``"none"`` for the bi-encoder path alone; ``reranker`` a path,
        ``"base"`` (the bundled MiniLM as a cross-encoder, random head) or ``"none"``."""
        log = kwargs.get("log") or (lambda msg: None)
        db = resolve_db(db_path)
        parts = default_parts(db)
        for note in parts.notes:
            log(note)
        if fusion is not None and str(fusion).lower() in NO_RERANKER:
            fusion_dir = None
        else:
            fusion_dir = str(fusion) if fusion is not None else parts.fusion_dir
            kwargs["fusion"], kwargs["selection"] = load_fusion(fusion_dir)
        emb = str(embedder) if embedder else (parts.embedder if fusion is None else bundled_minilm())
        if reranker is None:
            rr = parts.reranker if fusion is None else None
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
        # normalise once (cached rows are already unit length; this guards models without a Normalize module)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self._matrix = np.ascontiguousarray(matrix / np.clip(norms, 1e-12, None), dtype=np.float32)
        self.skills, self._ids, self._rr_text = list(skills), ids, None
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
    def ids(self) -> list[str]:
        """Skill ids of the indexed pool, in index order (the columns of ``signal_scores``)."""
        return self._ids

    @property
    def skill_by_id(self) -> dict[str, Skill]:
        return {s.id: s for s in self.skills}

    def _rerank_texts(self) -> dict[str, str]:
        if self._rr_text is None:
            self._rr_text = {s.id: skill_document(s.name, s.description, s.body, RERANKER_CAPS) for s in self.skills}
        return self._rr_text

    # ---- routing
    def dense_scores(self, queries: list[str]) -> np.ndarray:
        """(queries, pool) bi-encoder cosine; a long query scores by its best piece of ``QUERY_CHUNK_CHARS``."""
        if self._matrix is None:
            raise RuntimeError("call index(skills) before routing")
        with request_threads(len(queries)):
            emb, starts = chunk_embeddings([self.query_prompt + q.strip() for q in queries],
                                           lambda texts: self._encode(texts, batch_size=64), QUERY_CHUNK_CHARS)
        with search_threads(len(emb)):
            return best_piece(emb @ self._matrix.T, starts)

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

    def signal_scores(self, queries: list[str], checkpoint: Callable[[], None] = lambda: None
                      ) -> dict[str, np.ndarray]:
        """``{signal: (queries, pool) scores}`` for every indexed signal, each over the whole query.

        ``checkpoint()`` is called before each signal: a caller whose client has gone raises there (``serve``)."""
        if self._matrix is None:
            raise RuntimeError("call index(skills) before routing")
        out: dict[str, np.ndarray] = {}
        with request_threads(len(queries)):
            if "dense" in self.signals:
                checkpoint()
                out["dense"] = self.dense_scores(queries)
            if "bm25" in self.signals:
                checkpoint()
                out["bm25"] = self._lexical.scores(queries)
            if "multilingual" in self.signals:
                checkpoint()
                out["multilingual"] = self._multilingual.scores(queries)
        return out

    def signal_versions(self) -> dict[str, str]:
        """What produced each signal's scores (library or weights fingerprint), for ``model_version`` columns."""
        import bm25s

        return {"bm25": f"bm25s-{bm25s.__version__}/{TOKENIZER}", "dense": self.fingerprint,
                "multilingual": self.multilingual.fingerprint}

    def candidates(self, queries: list[str], depth: int | None = None, scores: dict[str, np.ndarray] | None = None,
                   signals: Sequence[str] | None = None) -> list[Candidates]:
        """Every signal's top ``depth`` of each query, with the fusion features (query language detected);
        ``scores`` when the caller already has ``signal_scores(queries)``; ``signals`` default: the fusion's."""
        signals = signals or (self.fusion.signals if self.fusion else self.signals)
        return candidates(scores or self.signal_scores(queries), signals, queries,
                          self._skill_zh, depth or (self.fusion.depth if self.fusion else DEFAULT_DEPTH))

    def similarity(self, a: str, b: str) -> float:
        """Cosine of two pool skills' documents: the selection cut reads it to pass over copies (cosine ≥ its
        ``copy_cosine``) and to see two skills that would serve one need."""
        return float(self._matrix[self._row_of[a]] @ self._matrix[self._row_of[b]])

    def route_requests(self, queries: list[str], top_k: int = 20, rerank_depth: int = 20, use_reranker: bool = True,
                       cap: int | None = None, checkpoint: Callable[[], None] = lambda: None) -> list[RoutedRequest]:
        """The hybrid route: fused ranking (``top_k``) with each signal's score, reranked head where a reranker is
        configured, and ``selected``: the skills to load (1 to ``cap``, default the cut's cap).
        ``checkpoint()`` is called between stages (each signal, each request's fusion and rerank), so a caller
        can stop work whose client has gone.

        Without a fusion model: ``route``'s bi-encoder ranking, no per-signal scores, and the first skill
        selected (no cut has been learned)."""
        if self.fusion is None:
            return [RoutedRequest([RankedSkill(sid, score, {}) for sid, score in ranking], [ranking[0][0]])
                    for ranking in self.route(queries, top_k, rerank_depth, use_reranker)]
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        out = []
        scores = self.signal_scores(queries, checkpoint)
        for query, cands in zip(queries, self.candidates(queries, scores=scores)):
            checkpoint()
            fused = self.fusion.score(cands)
            order = np.argsort(-fused, kind="stable")
            ranked = [(self._ids[cands.rows[j]], float(fused[j]), j) for j in order]
            if use_reranker and self.reranker_path is not None and rerank_depth > 0:
                head = rerank([query[:QUERY_CHARS]], [[(sid, s) for sid, s, _ in ranked]], self._rerank_texts(),
                              self.score_pairs, rerank_depth)[0]
                by_id = {sid: j for sid, _, j in ranked}
                ranked = [(sid, score, by_id[sid]) for sid, score in head]
            names = self.fusion.signals
            ranking = [RankedSkill(sid, score, {**{n: round(float(cands.raw[j, i]), 6) for i, n in enumerate(names)},
                                                "fused": round(float(fused[j]), 6)})
                       for sid, score, j in ranked[:top_k]]
            # the cut reads fused scores (what it was fitted on), in the final order
            selected = self.selection.select([sid for sid, _, _ in ranked], [float(fused[j]) for _, _, j in ranked],
                                             self.similarity, query, cap)
            out.append(RoutedRequest(ranking, selected))
        return out

    def route(self, queries: list[str], top_k: int = 20, rerank_depth: int = 20,
              use_reranker: bool = True) -> list[list[tuple[str, float]]]:
        """Per query, ``[(skill_id, score), ...]`` best first (``top_k`` long, or the pool size if smaller).

        With a fusion model this is ``route_requests``' ranking. Without one: bi-encoder search, and with a
        reranker the top ``rerank_depth`` dense candidates are rescored by the cross-encoder; anything below
        keeps its dense order under the reranked head.
        """
        if not queries:
            return []
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        if self.fusion is not None:
            return [[(r.skill_id, r.score) for r in routed.ranking]
                    for routed in self.route_requests(queries, top_k, rerank_depth, use_reranker)]
        do_rerank = use_reranker and self.reranker_path is not None and rerank_depth > 0
        depth = max(top_k, rerank_depth) if do_rerank else top_k
        first = top_k_rows(self.dense_scores(queries), self._ids, depth)
        if not do_rerank:
            return first
        reranked = rerank([q[:QUERY_CHARS] for q in queries], first, self._rerank_texts(), self.score_pairs,
                          rerank_depth)
        return [r[:top_k] for r in reranked]


@dataclass(frozen=True)
class RankedSkill:
    skill_id: str
    score: float
    signals: dict[str, float]   # each signal's own score for this skill, and the fused score

    def as_dict(self) -> dict:
        return {"skill_id": self.skill_id, "score": round(self.score, 6), "signals": self.signals}


@dataclass(frozen=True)
class RoutedRequest:
    ranking: list[RankedSkill]
    selected: list[str]         # the skills to load, best first

    def as_dict(self, request_id: str | int | None = None) -> dict:
        head = {} if request_id is None else {"id": request_id}
        return {**head, "ranking": [r.as_dict() for r in self.ranking], "selected": self.selected}


def stderr_log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
