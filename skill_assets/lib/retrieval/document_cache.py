"""The pool index's on-disk cache: skill-document embeddings per model, keyed by the hash of each text.

Indexing the same pool again, or a pool that mostly overlaps an earlier one, encodes only what is new.
Every shard carries checksums of its content, checked before its rows are used (``EmbeddingStore``).
"""
from __future__ import annotations

import io
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from skill_assets.lib.common.cache_files import (
    atomic_output,
    checksum,
    discard_damaged,
    file_checksum,
    sealed_json,
    unseal_json,
    write_text_atomic,
)
from skill_assets.lib.models.embedding_cache import encode_in_chunks
from skill_assets.lib.common.hashing import digest

#: part of every cache key; v2: the document encoder backend is part of the key
CACHE_FORMAT = "v2"
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Shard:
    """One shard whose ids file passed its checks: its text hashes, its rows (memory-mapped), what to verify, and
    each hash's first row (``row_of``: a look-up of a few hashes need not read every hash of every shard)."""

    hashes: list[str]
    rows: np.ndarray
    npy: Path
    npy_checksum: str
    row_of: dict[str, int]

    def candidates(self, wanted: dict[str, list[int]]) -> Iterable[tuple[int, str]]:
        """(row, hash) of this shard's rows that may be wanted: found by the wanted hashes where they are fewer than
        the shard's rows (a re-index looks up the few documents that changed, in a cache of tens of thousands of
        rows, beside the answers: ``serve --watch``), else by reading the shard's hashes in order."""
        if len(wanted) < len(self.hashes):
            return [(self.row_of[h], h) for h in wanted if h in self.row_of]
        return enumerate(self.hashes)


#: what ``_read_shard`` answers for a shard written before shards carried checksums
_UNSEALED = "unsealed"

#: shards read in this process, by ids file: (both files' identity then, the shard, whether its array matched its
#: checksum). A shard is written once and never changed in place, so while neither file's identity changes its
#: manifest is not parsed, nor its array read whole for its checksum, again: ``serve --watch`` looks a 10,000-skill
#: pool's rows up at every reload, beside the answers
_checked: dict[Path, tuple[tuple[int, ...], _Shard, bool]] = {}


def _identity(ids_file: Path, npy: Path) -> tuple[int, ...] | None:
    """What must be unchanged in both files of a shard for its earlier checks to stand; None if one is gone."""
    try:
        return tuple(x for st in (os.stat(ids_file), os.stat(npy)) for x in (st.st_size, st.st_mtime_ns, st.st_ino))
    except OSError:
        return None


class EmbeddingStore:
    """Embeddings of document texts for one model, as shards ``<id>.npy`` + ``<id>.ids.json``.

    The ids file is the shard's manifest, sealed with the checksum of its content (``sealed_json``):
    the text hash of each row and the checksum of the array. It is written after its array (both
    through ``atomic_output``), so a reader only sees complete shards; concurrent writers simply add
    shards. Before a shard's rows are used, the manifest is checked against its own checksum (two ids
    swapped), the array against the checksum the manifest records and its rows for NaN or inf (a row
    overwritten): a damaged shard is discarded with one log line naming the file at fault, and its
    documents are encoded again.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def lookup(self, hashes: list[str]) -> tuple[np.ndarray | None, np.ndarray]:
        """(rows for the hashes found, or None; boolean mask of which hashes were found).

        A shard that cannot be read or fails its checks is discarded with one log line and its documents
        count as misses, so they are encoded again. Shards written before shards carried checksums are
        removed the same way, with one line for all of them.
        """
        wanted: dict[str, list[int]] = {}
        for i, h in enumerate(hashes):
            wanted.setdefault(h, []).append(i)
        found = np.zeros(len(hashes), dtype=bool)
        out: np.ndarray | None = None
        if not self.directory.is_dir():
            return out, found
        unsealed = 0
        for ids_file in sorted(self.directory.glob("*.ids.json")):
            identity = _identity(ids_file, ids_file.with_name(ids_file.name[: -len(".ids.json")] + ".npy"))
            checked = _checked.get(ids_file)
            if checked is not None and checked[0] == identity:
                _, shard, verified = checked
            else:
                shard, verified = self._read_shard(ids_file), False
            if shard is None:
                continue
            if isinstance(shard, str):  # _UNSEALED
                unsealed += 1
                continue
            if identity is not None:
                _checked[ids_file] = (identity, shard, verified)
            take_src, take_dst = [], []
            for j, h in shard.candidates(wanted):
                for i in wanted.get(h, ()):
                    if not found[i]:  # identical documents under several ids all take this row
                        take_src.append(j)
                        take_dst.append(i)
                        found[i] = True
            if not take_src:
                continue
            rows = self._verified_rows(ids_file, shard, take_src, verified)
            if rows is None:
                _checked.pop(ids_file, None)
                found[take_dst] = False
                continue
            if identity is not None:
                _checked[ids_file] = (identity, shard, True)
            if out is None:
                out = np.zeros((len(hashes), rows.shape[1]), dtype=np.float32)
            out[take_dst] = rows
            if found.all():
                break
        if unsealed:
            _log.warning("removed %d embedding cache shards written without checksums (by an older version) in %s; "
                         "their documents are encoded again", unsealed, self.directory)
        return out, found

    @staticmethod
    def _read_shard(ids_file: Path) -> _Shard | str | None:
        """The shard of one ids file; ``_UNSEALED`` (both files removed) for one written before checksums;
        None after discarding a damaged one."""
        npy = ids_file.with_name(ids_file.name[: -len(".ids.json")] + ".npy")
        try:
            text = ids_file.read_text()
            if isinstance(json.loads(text), list):  # the format before checksums: a bare list of hashes
                ids_file.unlink(missing_ok=True)
                npy.unlink(missing_ok=True)
                return _UNSEALED
            manifest = unseal_json(text)
            arr = np.load(npy, mmap_mode="r")
        except (OSError, ValueError, EOFError) as exc:  # JSONDecodeError is a ValueError
            why = f"{type(exc).__name__}: {exc}"[:200]
        else:
            shard_hashes = manifest.get("hashes") if isinstance(manifest, dict) else None
            if not (isinstance(shard_hashes, list) and all(isinstance(h, str) for h in shard_hashes)
                    and isinstance(manifest.get("npy_sha256"), str)):
                why = "not a list of text hashes with the array's checksum"
            elif arr.ndim != 2 or arr.dtype != np.float32 or len(arr) != len(shard_hashes):
                why = f"array {arr.dtype}{arr.shape} does not hold {len(shard_hashes)} float32 rows"
            else:
                first_row = dict(zip(reversed(shard_hashes), range(len(shard_hashes) - 1, -1, -1)))
                return _Shard(shard_hashes, arr, npy, manifest["npy_sha256"], first_row)
        discard_damaged(ids_file, why)  # the ids go first: without them the array is never read
        npy.unlink(missing_ok=True)
        return None

    @staticmethod
    def _verified_rows(ids_file: Path, shard: _Shard, take: list[int], checked: bool = False) -> np.ndarray | None:
        """The rows ``take`` of a shard whose array matches its recorded checksum (``checked``: it did, unchanged
        since) and holds only finite values; else None, the shard discarded with one line naming the array."""
        if not checked and file_checksum(shard.npy) != shard.npy_checksum:
            why = f"its content does not match the checksum recorded in {ids_file.name}"
        else:
            rows = np.asarray(shard.rows[take], dtype=np.float32)
            if np.isfinite(rows).all():
                return rows
            why = "NaN or infinite values in its rows"
        ids_file.unlink(missing_ok=True)  # the ids go first: without them the array is never read
        discard_damaged(shard.npy, why)
        return None

    def add(self, hashes: list[str], embeddings: np.ndarray) -> None:
        shard = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(embeddings, dtype=np.float32))
        with atomic_output(self.directory / f"{shard}.npy") as tmp:
            tmp.write_bytes(buf.getvalue())
        write_text_atomic(self.directory / f"{shard}.ids.json",
                          sealed_json({"hashes": hashes, "npy_sha256": checksum(buf.getvalue())}))


@dataclass(frozen=True)
class IndexStats:
    skills: int
    cached: int    # skills whose embedding came from the cache
    encoded: int   # distinct documents encoded now (identical documents are encoded once)
    seconds: float


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def embed_documents(docs: list[str], cache: EmbeddingStore,
                    encoder_for: Callable[[list[str]], tuple[Callable[[list[str]], np.ndarray], bool]],
                    log: Callable[[str], None], shard_size: int = 512, name: str = "skill documents",
                    checkpoint: Callable[[], None] = lambda: None) -> tuple[np.ndarray, int, int]:
    """(embedding matrix in ``docs`` order, documents found in the cache, distinct documents encoded now).

    Only cache misses are encoded, identical documents under different ids once; new embeddings are
    written to the cache every ``shard_size`` documents, so an interrupted index keeps what it paid for,
    and each write logs the progress: documents done, rate, time left (from the characters left, since
    the longest documents go first). ``encoder_for(texts)`` picks the encoder for the texts to encode (a
    backend probe may look at them) and says whether its vectors belong in ``cache``: a stand-in after a
    failure (``EncoderChoice.lasting`` False) encodes this run's misses but keeps none, so the cache's key
    never holds another backend's vectors. ``checkpoint()`` runs before every chunk: a caller stopping the
    build raises there.
    """
    hashes = [digest(d) for d in docs]
    matrix, found = cache.lookup(hashes)
    miss = np.flatnonzero(~found).tolist()
    if not miss:
        return matrix, len(docs), 0
    uniq: dict[str, int] = {}
    for i in miss:
        uniq.setdefault(hashes[i], i)
    todo = list(uniq.values())
    log(f"{name}: encoding {len(todo)} of {len(docs)} documents ({len(docs) - len(miss)} cached)")
    texts = [docs[i] for i in todo]
    encode, keep = encoder_for(texts)
    total_chars, chars_done = max(sum(map(len, texts)), 1), 0
    pending_h, pending_e, done, t0 = [], [], 0, time.perf_counter()

    def checked(part: list[str]) -> np.ndarray:
        checkpoint()
        return encode(part)

    for idx, emb in encode_in_chunks(texts, checked, chunk_size=min(256, shard_size)):
        if matrix is None:
            matrix = np.zeros((len(docs), emb.shape[1]), dtype=np.float32)
        pending_h += [hashes[todo[j]] for j in idx]
        pending_e.append(emb)
        done += len(idx)
        chars_done += sum(len(texts[j]) for j in idx)
        if len(pending_h) >= shard_size:
            if keep:
                cache.add(pending_h, np.concatenate(pending_e))
            pending_h, pending_e = [], []
            elapsed = time.perf_counter() - t0
            log(f"{name}: encoded {done}/{len(todo)} documents ({done / max(elapsed, 1e-9):.1f}/s, about "
                f"{_duration(elapsed * (total_chars - chars_done) / max(chars_done, 1))} left)")
        for j, e in zip(idx, emb):
            matrix[todo[j]] = e
    if pending_h and keep:
        cache.add(pending_h, np.concatenate(pending_e))
    elapsed = time.perf_counter() - t0
    log(f"{name}: encoded {len(todo)} documents in {_duration(elapsed)} ({len(todo) / max(elapsed, 1e-9):.1f}/s)")
    row_of = {hashes[i]: i for i in todo}
    for i in miss:
        matrix[i] = matrix[row_of[hashes[i]]]
    return matrix, len(docs) - len(miss), len(todo)
