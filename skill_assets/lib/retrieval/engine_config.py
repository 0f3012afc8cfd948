"""What an ``Engine`` is built from besides its models' paths: how the models run (``EngineSettings``) and what was
fitted for it (``FittedRouting``).

Two groups, because they come from different places and change for different reasons: settings are the caller's
(command-line flags, a benchmark's choice of backend), fitted parts come from a fitting job or the store's adopted
rows and carry cards of their own. Grouped, neither grows the engine's constructor.
"""
from __future__ import annotations

from dataclasses import dataclass

from skill_assets.lib.retrieval.abstention import Abstention
from skill_assets.lib.retrieval.fusion import FusionModel
from skill_assets.lib.retrieval.multilingual import USE_MULTILINGUAL
from skill_assets.lib.retrieval.reranking import RERANKER_MAX_SEQ
from skill_assets.lib.retrieval.selection import SelectionCut


@dataclass(frozen=True)
class EngineSettings:
    """How the models run and read requests; nothing here is learned.

    ``query_prompt`` is prefixed to every request the bi-encoder reads; ``embedder_backend`` and
    ``reranker_backend`` are ``encoder_backends.BACKENDS`` (precision and runtime); ``query_backend`` how the
    bi-encoder reads requests (``numpy`` where it implements the model, so routing over a cached pool imports no
    torch; ``torch``); ``num_threads`` caps torch's and the multilingual encoder's threads (default: theirs)."""

    query_prompt: str = ""
    batch_size: int = 32
    num_threads: int | None = None
    embedder_backend: str = "torch-bf16"
    query_backend: str = "numpy"
    reranker_backend: str = "auto"
    reranker_max_length: int = RERANKER_MAX_SEQ
    multilingual_model: str = USE_MULTILINGUAL


@dataclass(frozen=True)
class FittedRouting:
    """The learned parts that turn signal scores into an answer.

    ``fusion`` switches on the hybrid path (its signals are indexed) and ``selection`` is its cut; ``lexical_fusion``
    (a fusion over ``bm25`` alone) and ``lexical_selection`` answer while only BM25 is indexed; ``abstention``
    (fitted over ``fusion`` and the engine's encoders: ``abstention.load_abstention``) empties ``selected`` where no
    skill fits."""

    fusion: FusionModel | None = None
    selection: SelectionCut | None = None
    lexical_fusion: FusionModel | None = None
    lexical_selection: SelectionCut | None = None
    abstention: Abstention | None = None
