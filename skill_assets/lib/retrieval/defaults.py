"""The parts a router uses when the caller names none: the shipped router, or a store's parts that were adopted.

The shipped router (``shipped/``: a fusion and selection cut fitted on the curated benchmark over
BM25, the bundled MiniLM and USE multilingual; ``router.shipped_router`` rebuilds it) is the default
of a fresh install. A store's newest fusion replaces it, and a store's reranker joins it, only where
the ``router_fusion`` row records that the part passed the adoption rule (``adoption``); every part
left out comes with one line saying why.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from skill_assets.lib.common import model_registry as registry
from skill_assets.lib.common.bundled_models import bundled_minilm
from skill_assets.lib.retrieval.fusion import FusionModel
from skill_assets.lib.retrieval.fusion_training import load_router_model
from skill_assets.lib.retrieval.selection import SelectionCut

SHIPPED_DIR = Path(__file__).resolve().parent / "shipped"
#: the lexical path of a router folder: a fusion and cut fitted on BM25 alone, which answer while the encoders'
#: indexes build (``Engine.start_index``)
LEXICAL_SUBDIR = "lexical"


def shipped_router() -> tuple[FusionModel, SelectionCut | None]:
    """The shipped fusion model and its selection cut."""
    return load_router_model(SHIPPED_DIR)


def lexical_router(fusion_dir: str | Path) -> tuple[FusionModel, SelectionCut | None]:
    """The lexical path of the router folder ``fusion_dir`` (its ``lexical/``), else the shipped router's: a fusion
    over BM25's features alone carries to any pool, whatever model the full path is."""
    own = Path(fusion_dir) / LEXICAL_SUBDIR
    return load_router_model(own if own.is_dir() else SHIPPED_DIR / LEXICAL_SUBDIR)


@dataclass(frozen=True)
class RouterParts:
    """What a default router routes with: the fusion folder, its bi-encoder, the reranker (or None), and one
    line per store model left out, saying why."""

    fusion_dir: str
    embedder: str
    reranker: str | None
    notes: tuple[str, ...]


def default_parts(db_path: str | Path | None) -> RouterParts:
    """The shipped router, unless the store's newest fusion passed the adoption rule; its reranker only where it
    passed the same rule over the fused head. The verdicts are the ``router_fusion`` asset's, read here."""
    shipped = RouterParts(str(SHIPPED_DIR), bundled_minilm(), None, ())
    row = registry.newest(db_path, registry.FUSION)
    if row is None:
        return shipped
    notes = []
    if row.get("adopted"):
        parts = RouterParts(row["path"], row["embedder"], None, ())
    else:
        notes.append(f"the store's fusion ({row['path']}) is not used: "
                     + (row.get("adoption_reason") or "it was fitted before the adoption rule; rematerialize "
                                                      "router_fusion to judge it") + "; routing with the shipped router")
        parts = shipped
    reranker = row.get("reranker_path")
    if reranker and row.get("reranker_adopted"):
        return RouterParts(parts.fusion_dir, parts.embedder, reranker, tuple(notes))
    if reranker:
        notes.append(f"the store's reranker ({reranker}) is not used: {row.get('reranker_reason')}; pass --reranker "
                     f"{reranker} to use it anyway")
    return RouterParts(parts.fusion_dir, parts.embedder, None, tuple(notes))
