"""Build the corpus tables in the store without holding the corpus in memory.

Ingest streams parsed rows into a staging table in batches and keeps only their light fields;
dedup reads the near-duplicate texts back from DuckDB chunk by chunk, and ``skills`` is written
by SQL from ``raw_skills``. At 100K files this keeps the Python process to a small multiple of
one chunk of text instead of the whole corpus several times over.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from skill_assets.lib.common import store
from skill_assets.lib.common.tables import TABLES, frame
from skill_assets.lib.corpus.dedup import TEXT_CHUNK, DedupConfig, deduplicate, file_operation_rule
from skill_assets.lib.corpus.ingest import IngestResult, ingest_sources
from skill_assets.lib.corpus.sources import SourceSpec

STAGING = "raw_skills__staging"
#: DuckDB buffer pool while raw rows stream in (the store's default applies to everything else)
STREAM_MEMORY_LIMIT = "256MB"


def ingest_into_store(db: str | Path, specs: list[SourceSpec], workdir: Path, max_bytes: int,
                      workers: int) -> IngestResult:
    """Write ``raw_skills`` and ``ingest_rejects``; the returned raw rows lack their heavy text fields."""
    store.drop_table(db, STAGING)
    # one connection for the whole stream: reopening per batch checkpoints every time (~3x slower), and
    # a small buffer pool makes DuckDB write finished blocks out rather than keep the corpus in RAM
    with store.connect(db, memory_limit=STREAM_MEMORY_LIMIT) as con:
        store.insert_frame(con, STAGING, frame("raw_skills", []))
        result = ingest_sources(specs, workdir, max_bytes, workers,
                                sink=lambda batch: store.insert_frame(con, STAGING, frame("raw_skills", batch)))
    store.promote_table(db, STAGING, "raw_skills")
    store.replace_table(db, "ingest_rejects", frame("ingest_rejects", result.rejects))
    return result


def _texts_from_store(db: str | Path, skill_ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(skill_ids), TEXT_CHUNK):
        chunk = skill_ids[start : start + TEXT_CHUNK]
        df = store.query(db, "SELECT skill_id, description || chr(10) || body AS text FROM raw_skills "
                             "WHERE skill_id IN (SELECT unnest(?))", [chunk])
        texts = dict(zip(df["skill_id"].to_list(), df["text"].to_list()))
        yield [texts[s] for s in chunk]


def dedup_in_store(db: str | Path, source_order: list[str], config: DedupConfig) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Write ``skills`` and ``skill_duplicates`` from ``raw_skills``; return both frames (skills without bodies)."""
    heavy = {"description", "body", "extra_front_matter"}
    light_cols = ", ".join(f'"{c}"' for c in TABLES["raw_skills"].schema if c not in heavy)
    rows = store.query(db, f"SELECT {light_cols} FROM raw_skills").to_dicts()
    kept, duplicates = deduplicate(rows, source_order, config, lambda ids: _texts_from_store(db, ids))
    n_dups: dict[str, int] = {}
    for d in duplicates:
        n_dups[d["kept_skill_id"]] = n_dups.get(d["kept_skill_id"], 0) + 1
    meta = pl.DataFrame({"skill_id": [r["skill_id"] for r in kept],
                         "n_duplicates": [n_dups.get(r["skill_id"], 0) for r in kept],
                         "file_operation_rule": [file_operation_rule(r["name"]) for r in kept]},
                        schema={"skill_id": pl.Utf8, "n_duplicates": pl.Int64, "file_operation_rule": pl.Utf8})
    columns = ", ".join(f'{"m" if c in ("n_duplicates", "file_operation_rule") else "r"}."{c}"'
                        for c in TABLES["skills"].schema)
    with store.connect(db) as con:
        con.register("_meta", meta.to_arrow())
        con.execute(f"CREATE OR REPLACE TABLE skills AS SELECT {columns} FROM raw_skills r "
                    "JOIN _meta m USING (skill_id) ORDER BY r.skill_id")
        con.unregister("_meta")
    dups = frame("skill_duplicates", duplicates)
    store.replace_table(db, "skill_duplicates", dups)
    return store.query(db, "SELECT * EXCLUDE (description, body) FROM skills"), dups
