"""Embed skill documents once per (model, text): reuse what an earlier run already paid for.

The cache key is the model identity (name or path plus a fingerprint of its weights) and a hash
of the exact text; only misses are encoded, longest-first in fixed-size chunks so memory stays
bounded and padding waste stays low.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from skill_assets.lib.common.hashing import digest


def model_fingerprint(model_path: str | Path) -> str:
    """Hash of a local model folder's weight files (size + first/last MiB), or the name for hub ids."""
    path = Path(model_path)
    if not path.exists():
        return digest(str(model_path))
    h = hashlib.blake2b(digest_size=8)
    for f in sorted(p for p in path.rglob("*") if p.suffix in (".safetensors", ".bin", ".json") and p.is_file()):
        h.update(f.relative_to(path).as_posix().encode())
        h.update(str(f.stat().st_size).encode())
        with f.open("rb") as fh:
            h.update(fh.read(1 << 20))
    return h.hexdigest()


def text_hash(text: str) -> str:
    return digest(text)


def encode_in_chunks(texts: list[str], encode: Callable[[list[str]], np.ndarray], chunk_size: int = 256
                     ) -> Iterator[tuple[list[int], np.ndarray]]:
    """Yield (indices, embeddings) chunks, longest texts first, so a caller can write as it goes."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    for start in range(0, len(order), chunk_size):
        idx = order[start : start + chunk_size]
        yield idx, encode([texts[i] for i in idx])


STAGING = "skill_embeddings__staging"
#: encoded rows held before they are appended (2,048 × 384 floats ≈ 3 MB for MiniLM)
FLUSH_ROWS = 2048


def refresh_embeddings(db: str | Path, skill_ids: list[str], texts: list[str], model_id: str, fingerprint: str,
                       load_encode: Callable[[list[str]], Callable[[list[str]], np.ndarray]],
                       chunk_size: int = 256, progress: Callable[[int, int], None] | None = None) -> dict:
    """Rebuild ``skill_embeddings`` for these skills, embedding only (fingerprint, text) pairs not cached.

    Cached vectors are carried over by one SQL statement into a staging table (they never pass
    through Python); misses are encoded in chunks that are appended to the staging table as they
    finish, and the staging table replaces the old one in one transaction. ``load_encode(missing_texts)``
    builds the encoder, and is only called when something is missing (a warm run loads no model).
    ``progress(done, total)`` is called after every chunk.
    """
    import polars as pl

    from skill_assets.lib.common import store

    hashes = [text_hash(t) for t in texts]
    wanted = pl.DataFrame({"skill_id": skill_ids, "text_hash": hashes},
                          schema={"skill_id": pl.Utf8, "text_hash": pl.Utf8})
    store.drop_table(db, STAGING)
    has_cache = store.table_exists(db, "skill_embeddings")
    with store.connect(db) as con:
        con.register("_wanted", wanted.to_arrow())
        cached = ("SELECT DISTINCT ON (text_hash) text_hash, embedding FROM skill_embeddings "
                  "WHERE model_fingerprint = $fp" if has_cache else
                  "SELECT NULL::VARCHAR AS text_hash, NULL::FLOAT[] AS embedding LIMIT 0")
        con.execute(f"""CREATE TABLE "{STAGING}" AS
            SELECT w.skill_id, $model AS model_id, $fp AS model_fingerprint, w.text_hash, c.embedding::FLOAT[] AS embedding
            FROM _wanted w JOIN ({cached}) c USING (text_hash)""", {"model": model_id, "fp": fingerprint})
        done = {r[0] for r in con.execute(f'SELECT skill_id FROM "{STAGING}"').fetchall()}
        con.unregister("_wanted")
    missing = [i for i, sid in enumerate(skill_ids) if sid not in done]
    if missing:
        encode = load_encode([texts[i] for i in missing])
        pending_rows: list[int] = []
        pending_emb: list[np.ndarray] = []
        written = 0

        def flush() -> None:
            store.append_rows(db, STAGING, pl.DataFrame({
                "skill_id": [skill_ids[i] for i in pending_rows], "model_id": [model_id] * len(pending_rows),
                "model_fingerprint": [fingerprint] * len(pending_rows),
                "text_hash": [hashes[i] for i in pending_rows],
                "embedding": pl.Series(np.concatenate(pending_emb).astype(np.float32)).cast(pl.List(pl.Float32))}))
            pending_rows.clear()
            pending_emb.clear()

        for idx, emb in encode_in_chunks([texts[i] for i in missing], encode, chunk_size):
            pending_rows.extend(missing[j] for j in idx)
            pending_emb.append(np.asarray(emb))
            written += len(idx)
            # each write opens the database and checkpoints on close: a few MB at a time, not every chunk
            if len(pending_rows) >= FLUSH_ROWS:
                flush()
            if progress:
                progress(written, len(missing))
        if pending_rows:
            flush()
    store.promote_table(db, STAGING, "skill_embeddings")
    return {"skills": len(skill_ids), "cache_hits": len(skill_ids) - len(missing), "embedded_now": len(missing)}


def progress_reporter(log: Callable[[str], None], label: str = "embedded") -> Callable[[int, int], None]:
    """A ``progress(done, total)`` callback: a tqdm bar when stderr is a terminal, and a log line per call.

    Inside the Dagster UI stderr is not a terminal, so the log lines are what shows progress there.
    """
    import sys
    import time

    from tqdm import tqdm

    bar = None
    start = time.perf_counter()

    def report(done: int, total: int) -> None:
        nonlocal bar
        if bar is None and sys.stderr.isatty():
            bar = tqdm(total=total, desc=label, unit="skill")
        if bar is not None:
            bar.update(done - bar.n)
            if done >= total:
                bar.close()
        rate = done / max(time.perf_counter() - start, 1e-9)
        log(f"{label} {done}/{total} ({rate:.1f}/s)")

    return report
