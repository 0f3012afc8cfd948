"""The reranking stage: a cross-encoder rescoring the head of a ranking, on the fastest faithful backend.

The model is loaded once, lazily. On CPU a bf16 or int8 copy is used where it orders probe pairs
from the indexed pool like the original (``scorer_backends.choose_scorer``; export and verdict
cached beside the index); ``backend="torch"`` scores with the model itself, as the evaluation does.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from skill_assets.lib.models.embedding_cache import model_fingerprint
from skill_assets.lib.common.hashing import digest
from skill_assets.lib.models.scorer_backends import ScorerChoice, choose_scorer
from skill_assets.lib.core.skill_text import QUERY_CHARS
from skill_assets.lib.retrieval.dense import device
from skill_assets.lib.core.runs import Ranking
from skill_assets.lib.retrieval.ranking import rerank

RERANKER_MAX_SEQ = 256   # what the cross-encoders are trained with
PROBE_PAIRS = 64


class Reranker:
    """``rerank(queries, rankings, texts, depth)``: the top ``depth`` of each ranking rescored by the cross-encoder."""

    def __init__(self, path: str | Path, cache_dir: Path, backend: str = "auto", max_length: int = RERANKER_MAX_SEQ,
                 log: Callable[[str], None] = lambda msg: None) -> None:
        self.path = str(path)
        self.cache_dir = cache_dir
        self.backend = backend
        self.max_length = max_length
        self.log = log
        self._model = None
        self._scorer: ScorerChoice | None = None
        self.probe_pairs: Callable[[], list[tuple[str, str]]] = list

    @property
    def model(self):
        if self._model is None:
            from sentence_transformers import CrossEncoder

            model = CrossEncoder(self.path, num_labels=1, device=device())
            model.max_seq_length = min(model.max_seq_length or self.max_length, self.max_length)
            model.eval()
            self._model = model
        return self._model

    @property
    def fingerprint(self) -> str:
        return model_fingerprint(self.path)

    @property
    def scorer(self) -> ScorerChoice:
        if self._scorer is None:
            key = digest(f"{self.fingerprint}|{self.max_length}")
            self._scorer = choose_scorer(self.model, self.backend, self.cache_dir / "onnx", key, self.probe_pairs())
            self.log(f"reranker backend: {self._scorer.backend} ({self._scorer.reason})")
        return self._scorer

    def score_pairs(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        return self.scorer.score(pairs)

    def rerank(self, queries: Sequence[str], rankings: Sequence[Ranking], texts: dict[str, str],
               depth: int) -> list[Ranking]:
        """Each query (its first ``QUERY_CHARS``) against the documents of its ranking's top ``depth``."""
        return rerank([q[:QUERY_CHARS] for q in queries], rankings, texts, self.score_pairs, depth)


def probe_pairs(descriptions: Sequence[str], texts: Sequence[str], n: int = PROBE_PAIRS) -> list[tuple[str, str]]:
    """(description as a query, document) pairs from the indexed pool, half matching, half not, so the
    rank gate sees both high and low scores."""
    if not texts:
        return []
    picks = np.random.default_rng(0).choice(len(texts), size=(n, 2))
    return [(descriptions[a][:QUERY_CHARS], texts[a if i % 2 else b]) for i, (a, b) in enumerate(picks.tolist())]
