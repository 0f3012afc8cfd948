"""The parts a router uses when the caller names none: the shipped router, or a store's parts that were adopted.

The shipped router (``shipped/``: a fusion and selection cut fitted on hand-written requests over BM25,
the bundled MiniLM with its fine-tuned top layers and USE multilingual; ``router.shipped_router`` rebuilds
it) is the default of a fresh install. A store's newest fusion replaces it, and a store's reranker joins it, only where
the evidence its ``router_fusion`` row records passes the adoption rule again here
(``adoption_rule.recorded_verdict``: counts, dev win, the folder's digest), never on the row's flag;
every part left out comes with one line saying why. ``default_engine`` builds the engine of those parts: what a user
gets, for the router (``Router.from_store``) and the evaluation's ``router:default`` alike.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skill_assets.lib.models import model_registry as registry
from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.common.store import resolve_db
from skill_assets.lib.models.tuned_layers import materialise
from skill_assets.lib.retrieval.abstention import load_abstention
from skill_assets.lib.retrieval.adoption_rule import recorded_verdict
from skill_assets.lib.retrieval.engine import CACHE_ENV, Engine
from skill_assets.lib.retrieval.engine_config import EngineSettings, FittedRouting
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
#: ``reranker=`` values meaning "the bundled base MiniLM as a cross-encoder" / "no reranker" (and ``fusion=`` "none")
BASE_RERANKER = ("base", "minilm")
NO_RERANKER = ("none", "off", "")


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


def default_engine(db_path: str | Path | None = None, embedder: str | Path | None = None,
                   reranker: str | Path | None = None, fusion: str | Path | None = None,
                   cache_dir: str | Path | None = None, settings: EngineSettings | None = None,
                   log: Callable[[str], None] | None = None) -> Engine:
    """The engine a user gets, in one place for the router (``Router.from_store``) and the evaluation's
    ``router:default`` system: the shipped router (fusion and selection cut fitted on the curated benchmark, bundled
    MiniLM, no reranker), unless the store's newest fusion or reranker passed the adoption rule (``default_parts``);
    each store model left out is logged with the reason. Explicit arguments win: ``embedder`` a bi-encoder path;
    ``fusion`` a fusion folder or ``"none"`` for the bi-encoder path alone; ``reranker`` a path, ``"base"`` (the
    bundled MiniLM as a cross-encoder, random head) or ``"none"``. While only BM25 is indexed the engine answers with
    the fusion folder's lexical path (``lexical/``; the shipped router's where the folder has none). Where the fusion
    folder holds an abstention fitted over that fusion and this engine's encoders (the shipped one does), a request
    no skill fits selects none (``load_abstention``; one log line where it is left out). ``settings``: how the models
    run; the index cache defaults to ``index_cache`` beside an existing store."""
    log = log or (lambda msg: None)
    db = resolve_db(db_path)
    parts = default_parts(db)
    for note in parts.notes:
        log(note)
    fusion_dir, fitted = None, None
    if fusion is None or str(fusion).lower() not in NO_RERANKER:
        fusion_dir = str(fusion) if fusion is not None else parts.fusion_dir
        model, cut = load_router_model(fusion_dir)
        fitted = FittedRouting(model, cut, *(lexical_router(fusion_dir) if "bm25" in model.signals else ()))
    emb = str(embedder) if embedder else (parts.embedder if fusion is None else bundled_minilm())
    if reranker is None:
        rr = parts.reranker if fusion is None else None
    elif str(reranker).lower() in NO_RERANKER:
        rr = None
    elif str(reranker).lower() in BASE_RERANKER:
        rr = bundled_minilm()
    else:
        rr = str(reranker)
    if cache_dir is None and not os.environ.get(CACHE_ENV) and db.is_file():
        cache_dir = db.resolve().parent / "index_cache"
    engine = Engine(emb, rr, fitted=fitted, settings=settings, cache_dir=cache_dir, log=log)
    if fusion_dir is not None:
        engine.abstention = load_abstention(fusion_dir, engine, log)
    return engine
