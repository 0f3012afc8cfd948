"""Build the corpus tables in the store without holding the corpus in memory, one run at a time.

Ingest streams parsed rows into a staging table in batches and keeps only their light fields;
dedup reads the near-duplicate texts back from DuckDB chunk by chunk, and ``skills`` is written
by SQL from ``raw_skills``. At 100K files this keeps the Python process to a small multiple of
one chunk of text instead of the whole corpus several times over.

Two runs with different sources against one store must not interleave silently (run A ingests,
run B ingests, A's dedup would fold B's rows and record A's sources). So each step holds an
advisory lock beside the store (``<db>.corpus.lock``: a concurrent step waits, and the kernel
releases it when a holder is killed), and ingest records what it actually read in the internal
table ``corpus_sources`` in the same transaction as ``raw_skills``; dedup given the fingerprint of
its own sources refuses, with a message naming both, to fold rows read from other sources.
"""
from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from skill_assets.lib.common import store
from skill_assets.lib.corpus.archives import DEFAULT_LIMITS as DEFAULT_ARCHIVE_LIMITS
from skill_assets.lib.corpus.archives import ArchiveLimits
from skill_assets.lib.common.hashing import digest
from skill_assets.lib.common.processes import process_token
from skill_assets.lib.corpus.sources import SourceSpec
from skill_assets.lib.common.tables import TABLES, frame
from skill_assets.lib.corpus.dedup import (
    TEXT_CHUNK,
    DedupConfig,
    dedup_candidates,
    deduplicate,
    file_operation_rule,
)
from skill_assets.lib.corpus.ingest import IngestResult, ingest_sources
from skill_assets.lib.corpus.minhash import Utf8Chunk

STAGING = "raw_skills__staging"
#: internal table: the sources the current ``raw_skills`` was read from (one row per configured source)
MANIFEST = "corpus_sources"
MANIFEST_SCHEMA = {"source": pl.Utf8, "kind": pl.Utf8, "location": pl.Utf8, "commit": pl.Utf8,
                   "files_seen": pl.Int64, "fingerprint": pl.Utf8, "ingested_at": pl.Datetime("us", "UTC")}
#: DuckDB buffer pool while raw rows stream in (the store's default applies to everything else)
STREAM_MEMORY_LIMIT = "256MB"
LOCK_WAIT_S = 3600.0


class CorpusBusy(RuntimeError):
    """Another process held the corpus lock for longer than this one would wait."""


class CorpusChanged(RuntimeError):
    """``raw_skills`` was read from other sources than this run's: folding it would record the wrong ones."""


def sources_fingerprint(specs: list[SourceSpec]) -> str:
    """Identity of a source configuration (names, kinds, locations, pinned commits, repos), in order."""
    return digest(json.dumps([[s.name, s.kind, s.location, s.commit, s.repo] for s in specs]))


@contextmanager
def corpus_lock(db: str | Path, wait_s: float = LOCK_WAIT_S,
                on_wait: Callable[[str], None] = lambda _: None) -> Iterator[None]:
    """Hold the store's corpus lock; wait for another holder (``on_wait`` is told once), CorpusBusy past ``wait_s``."""
    path = Path(db).with_name(Path(db).name + ".corpus.lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline, told = time.monotonic() + wait_s, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
                if time.monotonic() > deadline:
                    raise CorpusBusy(f"the corpus tables of {db} are being written by {holder}; waited {wait_s:.0f}s") from None
                if not told:
                    on_wait(f"waiting for the corpus lock of {db}, held by {holder}")
                    told = True
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {process_token()} since {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def ingest_into_store(db: str | Path, specs: list[SourceSpec], workdir: Path, max_bytes: int, workers: int,
                      archive_limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
                      on_wait: Callable[[str], None] = lambda _: None) -> IngestResult:
    """Write ``raw_skills``, ``ingest_rejects`` and ``corpus_sources`` together; the returned raw rows lack their
    heavy text fields. On any error the staging table is dropped and the published tables stay as they were."""
    with corpus_lock(db, on_wait=on_wait):
        store.drop_table(db, STAGING)
        try:
            # one connection and one transaction for the whole stream: committing batch by batch wrote every
            # row to the WAL and checkpointed each ~16 MB, rewriting the growing row group each time (7x the
            # CPU of one commit); a small buffer pool makes DuckDB write full row groups out rather than keep
            # the corpus in RAM, and one DuckDB thread leaves the cores to the parsing workers
            with store.connect(db, memory_limit=STREAM_MEMORY_LIMIT, config={"threads": 1}) as con:
                store.insert_frame(con, STAGING, frame("raw_skills", []))
                con.execute("BEGIN")
                result = ingest_sources(specs, workdir, max_bytes, workers, sink=lambda batch: _append(con, batch),
                                        archive_limits=archive_limits)
                con.execute("COMMIT")
            _publish(db, result, sources_fingerprint(specs))
        finally:
            store.drop_table(db, STAGING)
    return result


def _append(con, rows: list[dict]) -> None:
    """Append raw rows to the staging table through Arrow columns built straight from the rows (half the
    cost of a polars frame, whose strings are copied again on the way to Arrow)."""
    schema = _raw_arrow_schema()
    con.register("_incoming", pa.table([pa.array([r.get(f.name) for r in rows], type=f.type) for f in schema],
                                       schema=schema))
    con.execute(f'INSERT INTO "{STAGING}" SELECT * FROM _incoming')
    con.unregister("_incoming")


@cache
def _raw_arrow_schema() -> pa.Schema:
    return frame("raw_skills", []).to_arrow().schema


def _publish(db: str | Path, result: IngestResult, fingerprint: str) -> None:
    """Staging → ``raw_skills``, plus ``ingest_rejects`` and ``corpus_sources``, in one transaction."""
    now = datetime.now(UTC)
    manifest = pl.DataFrame([{**s, "fingerprint": fingerprint, "ingested_at": now} for s in result.sources_read],
                            schema=MANIFEST_SCHEMA)
    with store.connect(db) as con:
        con.register("_rejects", frame("ingest_rejects", result.rejects).to_arrow())
        con.register("_manifest", manifest.to_arrow())
        con.execute("BEGIN")
        con.execute("DROP TABLE IF EXISTS raw_skills")
        con.execute(f'ALTER TABLE "{STAGING}" RENAME TO raw_skills')
        con.execute("CREATE OR REPLACE TABLE ingest_rejects AS SELECT * FROM _rejects")
        con.execute(f"CREATE OR REPLACE TABLE {MANIFEST} AS SELECT * FROM _manifest")
        con.execute("COMMIT")


def sources_read(db: str | Path) -> pl.DataFrame:
    """The ``corpus_sources`` rows behind the current ``raw_skills`` (empty if an older version wrote it)."""
    if not store.table_exists(db, MANIFEST):
        return pl.DataFrame(schema=MANIFEST_SCHEMA)
    return store.query(db, f"SELECT * FROM {MANIFEST}")


def check_sources(db: str | Path, specs: list[SourceSpec]) -> pl.DataFrame:
    """``corpus_sources`` if ``raw_skills`` was read from ``specs``; else raise CorpusChanged naming both."""
    read = sources_read(db)
    expected = sources_fingerprint(specs)
    found = read["fingerprint"][0] if read.height else None
    if found != expected:
        was = ", ".join(f"{r['source']} ({r['location']})" for r in read.to_dicts()) or "unrecorded sources"
        now = ", ".join(f"{s.name} ({s.location})" for s in specs) or "no sources"
        raise CorpusChanged(f"raw_skills in {db} was ingested from {was}, but this run's sources are {now}: "
                            "another run replaced it after this run's ingest (or an older version wrote it). "
                            "Rerun from raw_skills, e.g. --select 'key:raw_skills+'.")
    return read


def _texts_from_store(db: str | Path, skill_ids: list[str]) -> Iterator[Utf8Chunk]:
    """The near-duplicate texts of ``skill_ids`` in one streamed scan, batch by batch as DuckDB returns them.

    Each batch names its texts' places in ``skill_ids`` and hands over the UTF-8 bytes of the Arrow
    column as they are: no sort, no Python string per text, and one pass over ``raw_skills`` rather
    than one per chunk of ids.
    """
    wanted = pa.table({"skill_id": pa.array(skill_ids, pa.string()),
                       "place": pa.array(np.arange(len(skill_ids), dtype=np.int64))})
    # a scan needs no large buffer pool (the store's default would fill with the corpus's text blocks), and
    # a second DuckDB thread only contends with the kernel consuming the batches
    with store.connect(db, read_only=True, memory_limit=STREAM_MEMORY_LIMIT, config={"threads": 1}) as con:
        con.register("_wanted", wanted)
        reader = con.execute("SELECT w.place, r.description || chr(10) || r.body AS text FROM raw_skills r "
                             "JOIN _wanted w USING (skill_id)").to_arrow_reader(TEXT_CHUNK)
        for batch in reader:
            if batch.num_rows:
                yield _utf8_chunk(batch.column(0), batch.column(1))


def _utf8_chunk(places: pa.Array, text: pa.Array) -> Utf8Chunk:
    """A ``Utf8Chunk`` over an Arrow string column's own buffers (a missing text reads as empty)."""
    if text.null_count:
        text = pc.fill_null(text, "")
    if not pa.types.is_large_string(text.type):
        text = text.cast(pa.large_string())
    _, offsets, data = text.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int64)[text.offset : text.offset + len(text) + 1]
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
    return Utf8Chunk(places.to_numpy().astype(np.int64), data, offsets)


def dedup_in_store(db: str | Path, source_order: list[str], config: DedupConfig,
                   expected_sources: list[SourceSpec] | None = None,
                   on_wait: Callable[[str], None] = lambda _: None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Write ``skills`` and ``skill_duplicates`` from ``raw_skills``; return both frames (skills without bodies).

    Holds the corpus lock; with ``expected_sources``, first raises CorpusChanged unless ``raw_skills``
    was read from exactly those.
    """
    with corpus_lock(db, on_wait=on_wait):
        if expected_sources is not None:
            check_sources(db, expected_sources)
        return _dedup(db, source_order, config)


def _dedup(db: str | Path, source_order: list[str], config: DedupConfig) -> tuple[pl.DataFrame, pl.DataFrame]:
    heavy = {"description", "body", "extra_front_matter"}
    light_cols = ", ".join(f'"{c}"' for c in TABLES["raw_skills"].schema if c not in heavy)
    raw = dedup_candidates(store.query(db, f"SELECT {light_cols} FROM raw_skills").iter_rows(named=True))
    kept, duplicates = deduplicate(raw, source_order, config, texts_for=lambda ids: _texts_from_store(db, ids))
    n_dups: dict[str, int] = {}
    for d in duplicates:
        n_dups[d["kept_skill_id"]] = n_dups.get(d["kept_skill_id"], 0) + 1
    meta = pl.DataFrame({"skill_id": [s.skill_id for s in kept],
                         "n_duplicates": [n_dups.get(s.skill_id, 0) for s in kept],
                         "file_operation_rule": [file_operation_rule(s.name) for s in kept]},
                        schema={"skill_id": pl.Utf8, "n_duplicates": pl.Int64, "file_operation_rule": pl.Utf8})
    columns = ", ".join(f'{"m" if c in ("n_duplicates", "file_operation_rule") else "r"}."{c}"'
                        for c in TABLES["skills"].schema)
    with store.connect(db) as con:
        con.register("_meta", meta.to_arrow())
        # the semi-join first: DuckDB then reads the text columns of the kept rows only, not of every raw row
        con.execute(f"CREATE OR REPLACE TABLE skills AS SELECT {columns} FROM (SELECT * FROM raw_skills WHERE "
                    "skill_id IN (SELECT skill_id FROM _meta)) r JOIN _meta m USING (skill_id) ORDER BY r.skill_id")
        con.unregister("_meta")
    dups = frame("skill_duplicates", duplicates)
    store.replace_table(db, "skill_duplicates", dups)
    return store.query(db, "SELECT * EXCLUDE (description, body) FROM skills"), dups
