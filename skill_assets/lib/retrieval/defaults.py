"""The parts a router uses when the caller names none: the shipped router, or a store's parts that were adopted.

The shipped router (``shipped/``: a fusion and selection cut fitted on hand-written requests over BM25,
the bundled MiniLM with its fine-tuned top layers and USE multilingual; ``router.shipped_router`` rebuilds
it) is the default of a fresh install. A store's newest fusion replaces it, and a store's reranker joins it, only where
the evidence its ``router_fusion`` row records passes the adoption rule again here
(``adoption_rule.recorded_verdict``: counts, dev win, the folder's digest), never on the row's flag;
every part left out comes with one line saying why.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from skill_assets.lib.models import model_registry as registry
from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.common.store import resolve_db
from skill_assets.lib.models.tuned_layers import materialise
from skill_assets.lib.retrieval.adoption_rule import recorded_verdict
from skill_assets.lib.retrieval.fusion import FusionModel
from skill_assets.lib.retrieval.fusion_training import load_router_model
from skill_assets.lib.retrieval.selection import SelectionCut

SHIPPED_DIR = Path(__file__).resolve().parent / "shipped"
#: the shipped bi-encoder: the bundled MiniLM's fine-tuned top layers (``router.shipped_embedder`` builds them)
SHIPPED_EMBEDDER_DIR = SHIPPED_DIR / "embedder"
TUNED_FILE = "tuned_layers.safetensors"
CARD_FILE = "skill_assets_card.json"
MODEL_CACHE = Path("~/.cache/skill-assets/models")
#: the lexical path of a router folder: a fusion and cut fitted on BM25 alone, which answer while the encoders'
#: indexes build (``Engine.start_index``)
LEXICAL_SUBDIR = "lexical"


def shipped_router() -> tuple[FusionModel, SelectionCut | None]:
    """The shipped fusion model and its selection cut."""
    return load_router_model(SHIPPED_DIR)


def tuned_embedder(cache_root: str | Path = MODEL_CACHE) -> str | None:
    """The bundled MiniLM with the shipped tuned layers in place (materialised once into ``cache_root``), or None
    where the package ships none."""
    tuned = SHIPPED_EMBEDDER_DIR / TUNED_FILE
    return str(materialise(bundled_minilm(), tuned, cache_root)) if tuned.is_file() else None


def shipped_embedder(cache_root: str | Path = MODEL_CACHE) -> str:
    """The bi-encoder the shipped fusion was fitted over, so a fresh install routes with the pair that was measured:
    the tuned MiniLM where the fusion's card names the tuned layers' sha256, else the bundled MiniLM. Tuned layers
    that no shipped fusion was fitted over are not used by default: under a fusion fitted over the base they
    gained nothing on dev (docs/RESULTS.md, trained-router, before the refit)."""
    tuned = SHIPPED_EMBEDDER_DIR / TUNED_FILE
    card = json.loads((SHIPPED_DIR / CARD_FILE).read_text()) if (SHIPPED_DIR / CARD_FILE).is_file() else {}
    fitted_over = card.get("data", {}).get("embedder_sha256")
    if fitted_over and tuned.is_file() and hashlib.sha256(tuned.read_bytes()).hexdigest() == fitted_over:
        return tuned_embedder(cache_root)
    return bundled_minilm()


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
    """The shipped router, unless the store's newest fusion passes the adoption rule on the evidence its row
    records; its reranker only where that reranker's recorded evidence passes too."""
    shipped = RouterParts(str(SHIPPED_DIR), shipped_embedder(), None, ())
    row = registry.newest(db_path, registry.FUSION)
    if row is None:
        return shipped
    db = resolve_db(db_path)
    notes = []
    fusion = recorded_verdict("the store's fusion", row.get("train_requests"), row.get("dev_requests"),
                              row.get("dev_delta_vs_default"), row.get("path"), row.get("fusion_digest"), db)
    if fusion.adopt:
        parts = RouterParts(row["path"], row["embedder"], None, ())
    else:
        notes.append(f"the store's fusion ({row['path']}) is not used: {fusion.reason}; routing with the shipped "
                     "router")
        parts = shipped
    reranker = row.get("reranker_path")
    if not reranker:
        return RouterParts(parts.fusion_dir, parts.embedder, None, tuple(notes))
    verdict = recorded_verdict("the store's reranker", row.get("reranker_train_requests"), row.get("dev_requests"),
                               row.get("reranker_dev_delta"), reranker, row.get("reranker_digest"), db)
    if verdict.adopt:
        return RouterParts(parts.fusion_dir, parts.embedder, reranker, tuple(notes))
    notes.append(f"the store's reranker ({reranker}) is not used: {verdict.reason}; pass --reranker {reranker} to "
                 "use it anyway")
    return RouterParts(parts.fusion_dir, parts.embedder, None, tuple(notes))
