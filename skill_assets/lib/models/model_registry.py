"""The model registry: one DuckDB table per kind of trained model, one row per model, and the queries on it.

``embedder`` and ``reranker`` hold one row per variant (``variant``, ``path``, ``trained_at``,
training figures); ``router_fusion`` one row per fitted fusion folder, with the adoption rule's
verdicts (``lib.retrieval.adoption``). Training registers, the evaluation lists, the router asset
and ``Router.from_store`` ask for the newest: every read and write of a model row is here, so
"newest" means one thing (latest ``trained_at``, a row without one last).

Each read is one read-only connection: while another process writes the store it waits as
``store.connect`` does (one log line naming the holder at once), and past the wait raises
``store.StoreLockedError`` (a ``FileNotFoundError``: the router's command reports it in one line).
"""
from __future__ import annotations

from pathlib import Path

import polars as pl

from skill_assets.lib.common import store

#: the variant every default reads (the papers' recipe), and the model kinds with their tables
DEFAULT_VARIANT = "r3"
EMBEDDER, RERANKER, FUSION = "embedder", "reranker", "router_fusion"
KINDS = (EMBEDDER, RERANKER, FUSION)
#: the key of each kind's rows: a variant is retrained in place, a fusion folder is new per data version
_KEY = {EMBEDDER: "variant", RERANKER: "variant", FUSION: "path"}


def _checked(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown model kind {kind!r}; choose one of {KINDS}")
    return kind


def register(db: str | Path, kind: str, rows: pl.DataFrame) -> None:
    """Add or replace models (by variant, or by path for fusions)."""
    store.upsert_rows(db, _checked(kind), rows, _KEY[kind])


def _rows(db: str | Path | None, kind: str, tail: str, params: list | None = None) -> list[dict]:
    """``SELECT * FROM kind <tail>`` in one read-only connection; empty without a store or table."""
    path = store.resolve_db(db)
    if not path.is_file():
        return []
    with store.connect(path, read_only=True) as con:
        if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
                           [_checked(kind)]).fetchone()[0]:
            return []
        return con.execute(f'SELECT * FROM "{kind}" {tail}', params or []).pl().to_dicts()


def listed(db: str | Path | None, kind: str) -> list[dict]:
    """Every registered model of ``kind``, by variant then age; empty without a store or table."""
    order = "variant, trained_at" if _KEY[_checked(kind)] == "variant" else "trained_at"
    return _rows(db, kind, f"ORDER BY {order} NULLS LAST")


def newest(db: str | Path | None, kind: str, variant: str | None = None) -> dict | None:
    """The newest row of ``kind`` (of ``variant`` where given); None without a store, table or row."""
    where, params = ("WHERE variant = ?", [variant]) if variant is not None else ("", [])
    rows = _rows(db, kind, f"{where} ORDER BY trained_at DESC NULLS LAST LIMIT 1", params)
    return rows[0] if rows else None


def newest_path(db: str | Path | None, kind: str, variant: str | None = None) -> str | None:
    """Folder of the newest model of ``kind`` (embedders and rerankers: of ``variant``, default ``r3``)."""
    if variant is None and kind != FUSION:
        variant = DEFAULT_VARIANT
    row = newest(db, kind, variant)
    return str(row["path"]) if row else None
