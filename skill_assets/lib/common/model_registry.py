"""The model registry: one DuckDB table per kind of trained model, one row per model, and the queries on it.

``embedder`` and ``reranker`` hold one row per variant (``variant``, ``path``, ``trained_at``,
training figures); ``router_fusion`` one row per fitted fusion folder, with the adoption rule's
verdicts (``lib.retrieval.adoption``). Training registers, the evaluation lists, the router asset
and ``Router.from_store`` ask for the newest: every read and write of a model row is here, so
"newest" means one thing (latest ``trained_at``, a row without one last).
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


def listed(db: str | Path | None, kind: str) -> list[dict]:
    """Every registered model of ``kind``, by variant then age; empty without a store or table."""
    path = store.resolve_db(db)
    if not path.is_file() or not store.table_exists(path, _checked(kind)):
        return []
    order = "variant, trained_at" if _KEY[kind] == "variant" else "trained_at"
    return store.query(path, f'SELECT * FROM "{kind}" ORDER BY {order} NULLS LAST').to_dicts()


def newest(db: str | Path | None, kind: str, variant: str | None = None) -> dict | None:
    """The newest row of ``kind`` (of ``variant`` where given); None without a store, table or row."""
    path = store.resolve_db(db)
    if not path.is_file() or not store.table_exists(path, _checked(kind)):
        return None
    where, params = ("WHERE variant = ?", [variant]) if variant is not None else ("", [])
    rows = store.query(path, f'SELECT * FROM "{kind}" {where} ORDER BY trained_at DESC NULLS LAST LIMIT 1', params)
    return rows.to_dicts()[0] if rows.height else None


def newest_path(db: str | Path | None, kind: str, variant: str | None = None) -> str | None:
    """Folder of the newest model of ``kind`` (embedders and rerankers: of ``variant``, default ``r3``)."""
    if variant is None and kind != FUSION:
        variant = DEFAULT_VARIANT
    row = newest(db, kind, variant)
    return str(row["path"]) if row else None
