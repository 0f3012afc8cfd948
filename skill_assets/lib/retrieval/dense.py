"""The dense signal: a bi-encoder over the pool's documents, their embeddings cached on disk.

The model (a sentence-transformers folder: the bundled MiniLM or a trained embedder) is loaded
once, lazily: a fully cached pool needs no model. Documents are embedded by the backend
``encoder_backends.choose_encoder`` picks (bf16 where this CPU runs it natively and agrees with
fp32), requests in fp32 by the one ``choose_query_encoder`` picks (numpy where it implements the model: a request
over a cached pool then imports no torch); a long request scores by its best piece.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from skill_assets.lib.models.embedding_cache import model_fingerprint
from skill_assets.lib.models.encoder_backends import (
    QUERY_BACKENDS,
    EncoderChoice,
    backend_key,
    choose_encoder,
    choose_query_encoder,
)
from skill_assets.lib.common.hashing import digest
from skill_assets.lib.retrieval.chunking import best_piece, chunk_embeddings
from skill_assets.lib.retrieval.document_cache import CACHE_FORMAT, EmbeddingStore, embed_documents
from skill_assets.lib.retrieval.threads import request_threads, search_threads

EMBEDDER_MAX_SEQ = 256   # what the embedders are trained with (TrainingSettings.max_seq_length)
QUERY_CHUNK_CHARS = 1000  # a request piece the bi-encoder reads whole (~256 tokens of English)
#: request pieces encoded per call, by request backend: a stop is seen between calls, and a piece's embedding does
#: not depend on what else its call holds. ``torch``: one. A batch is padded to its longest piece, and a long task
#: statement's pieces range from 14 to 269 tokens (the 24 pieces of a 600-word request and its parts took 3,775 ms in
#: one batch, one thread, load average 2); a 600-word request by parts over 10,000 skills (load average ~5.7, runs
#: alternating): p50 1,754 and 1,820 ms with four texts of like length per call, 1,577 and 1,635 ms one piece at a
#: time. ``numpy``: four. It packs a call's pieces end to end, nothing padded (``numpy_bert.PACK_TOKENS``): the 24
#: pieces took 692 ms of CPU so, 852 one at a time; four pieces of a whole request are at most ~1,000 tokens, about
#: 0.4 s of one core between stops
QUERY_GROUP = {"torch": 1, "numpy": 4}


def device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class DenseIndex:
    """Unit-length document embeddings of one pool for one bi-encoder, and request scoring against them."""

    def __init__(self, model_path: str | Path, cache_dir: Path, query_prompt: str = "", batch_size: int = 32,
                 backend: str = "torch-bf16", log: Callable[[str], None] = lambda msg: None,
                 document_tokens: int | None = None, query_backend: str = "numpy") -> None:
        """``document_tokens``: read only the first that many tokens of each pool document (None: as many as the
        model reads, at most ``EMBEDDER_MAX_SEQ``). Requests are read whole either way. A fusion model fitted
        on capped documents says so in its card (``Engine`` passes it on). ``query_backend``: one of
        ``QUERY_BACKENDS`` (``choose_query_encoder``)."""
        if document_tokens is not None and not 0 < document_tokens <= EMBEDDER_MAX_SEQ:
            raise ValueError(f"document_tokens must be in 1..{EMBEDDER_MAX_SEQ}, not {document_tokens}")
        if query_backend not in QUERY_BACKENDS:
            raise ValueError(f"unknown query backend {query_backend!r}; choose one of {QUERY_BACKENDS}")
        self.model_path = str(model_path)
        self.document_tokens = document_tokens
        self.cache_dir = cache_dir
        self.query_prompt = query_prompt
        self.batch_size = batch_size
        self.backend = backend
        self.query_backend = query_backend
        self.log = log
        self._model = None
        self._query_encoder: EncoderChoice | None = None
        self._fingerprint: str | None = None
        self.matrix: np.ndarray | None = None  # (n, d) float32, L2-normalised
        self.encode_calls = 0  # documents encoded (cache misses), for tests and logs

    @property
    def model(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(self.model_path, device=device())
            model.max_seq_length = min(model.max_seq_length or EMBEDDER_MAX_SEQ, EMBEDDER_MAX_SEQ)
            model.eval()
            self._model = model
        return self._model

    @property
    def fingerprint(self) -> str:
        """The cache key of the model's document embeddings (weights, sequence caps, document backend)."""
        if self._fingerprint is None:
            capped = f"|documents:{self.document_tokens}" if self.document_tokens else ""
            self._fingerprint = digest(f"{CACHE_FORMAT}|{model_fingerprint(self.model_path)}|{EMBEDDER_MAX_SEQ}|"
                                       f"{backend_key(self.backend)}{capped}")
        return self._fingerprint

    def _document_encoder(self, sample: list[str]) -> tuple[Callable[[list[str]], np.ndarray], bool]:
        """How pool documents are embedded: by default bf16 where this CPU runs it natively and a probe of
        ``sample`` agrees with fp32 (``choose_encoder``; verdict cached beside the index), else fp32.
        Queries are always embedded by the model as is: one short text per request gains nothing. Vectors of
        a fallback forced by a failure are not cached (``EncoderChoice.lasting``)."""
        cut = self._first_tokens if self.document_tokens else (lambda texts: texts)
        choice = choose_encoder(self.model, self.backend, self.cache_dir / "onnx", self.fingerprint, cut(sample),
                                self.batch_size)
        self.log(f"document encoder: {choice.backend} ({choice.reason})"
                 + (f", documents read to {self.document_tokens} tokens" if self.document_tokens else "")
                 + ("" if choice.lasting else "; this run's document vectors are not cached, the next run "
                    f"tries {self.backend} again"))
        return (lambda texts: choice.encode(cut(texts))), choice.lasting

    def _first_tokens(self, texts: list[str]) -> list[str]:
        """Each text cut after its first ``document_tokens`` tokens of the model's own tokenizer: the characters
        up to the last token kept (its offsets), so the model reads that prefix exactly and nothing is rewritten."""
        tokenizer = self.model.tokenizer
        if not tokenizer.is_fast:  # no offsets: the kept tokens written back as text
            return [tokenizer.decode(ids) for ids in tokenizer(texts, add_special_tokens=False, truncation=True,
                                                               max_length=self.document_tokens)["input_ids"]]
        spans = tokenizer(texts, add_special_tokens=False, truncation=True, max_length=self.document_tokens,
                          return_offsets_mapping=True)["offset_mapping"]
        return [text[: span[-1][1]] if span else text for text, span in zip(texts, spans)]

    @property
    def query_encoder(self) -> EncoderChoice:
        """The request encoder, chosen once; one log line where it is not the backend asked for, and why."""
        if self._query_encoder is None:
            choice = choose_query_encoder(self.model_path, self.query_backend, EMBEDDER_MAX_SEQ, lambda: self.model)
            if choice.backend != self.query_backend:
                self.log(f"query encoder: {choice.backend}, not {self.query_backend} ({choice.reason})")
            self._query_encoder = choice
        return self._query_encoder

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length embeddings of requests (or pieces of one), by the request encoder."""
        return self.query_encoder.encode(texts)

    def embed(self, documents: list[str], shard_size: int = 512, checkpoint: Callable[[], None] = lambda: None
              ) -> tuple[np.ndarray, int, int]:
        """(unit-length embeddings of ``documents``, the pool in order; cached; encoded now), reusing the on-disk
        cache. ``matrix`` is not touched: the engine publishes the result whole (``Engine.start_index``)."""
        matrix, cached, encoded = embed_documents(documents, self._store(), self._document_encoder, self.log,
                                                  shard_size, "dense", checkpoint)
        self.encode_calls += encoded
        return _unit_rows(matrix), cached, encoded

    def _store(self) -> EmbeddingStore:
        return EmbeddingStore(self.cache_dir / self.fingerprint)

    def scores(self, queries: list[str], matrix: np.ndarray | None = None,
               checkpoint: Callable[[], None] = lambda: None) -> np.ndarray:
        """(queries, pool) cosine against ``matrix`` (default: ``self.matrix``); a long query scores by its best
        piece of ``QUERY_CHUNK_CHARS``. ``checkpoint()`` is called before each piece is encoded."""
        matrix = self.matrix if matrix is None else matrix
        if matrix is None:
            raise RuntimeError("call index(skills) before routing")
        self.query_encoder  # loaded before the thread limits, so that they limit what it runs on
        with request_threads(len(queries)):
            emb, starts = chunk_embeddings([self.query_prompt + q.strip() for q in queries], self.encode,
                                           QUERY_CHUNK_CHARS, QUERY_GROUP[self.query_encoder.backend], checkpoint)
        with search_threads(len(emb)):
            return best_piece(emb @ matrix.T, starts)

    def similarity(self, a: int, b: int) -> float:
        """Cosine of two pool rows' documents."""
        return float(self.matrix[a] @ self.matrix[b])


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (cached rows already are; this guards models without a Normalize module)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.ascontiguousarray(matrix / np.clip(norms, 1e-12, None), dtype=np.float32)
