"""The pool index's on-disk cache: skill-document embeddings per model, keyed by the hash of each text.

Indexing the same pool again, or a pool that mostly overlaps an earlier one, encodes only what is new.
"""
from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from skill_assets.lib.common.embedding_cache import encode_in_chunks
from skill_assets.lib.common.hashing import digest

#: part of every cache key; v2: the document encoder backend is part of the key
CACHE_FORMAT = "v2"


class EmbeddingStore:
    """Embeddings of document texts for one model, as shards ``<id>.npy`` + ``<id>.ids.json`` (text hashes).

    A shard's JSON is written after its array (both atomically), so a reader only sees complete shards;
    concurrent writers simply add shards.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def lookup(self, hashes: list[str]) -> tuple[np.ndarray | None, np.ndarray]:
        """(rows for the hashes found, or None; boolean mask of which hashes were found)."""
        wanted: dict[str, list[int]] = {}
        for i, h in enumerate(hashes):
            wanted.setdefault(h, []).append(i)
        found = np.zeros(len(hashes), dtype=bool)
        out: np.ndarray | None = None
        if not self.directory.is_dir():
            return out, found
        for ids_file in sorted(self.directory.glob("*.ids.json")):
            try:
                shard_hashes = json.loads(ids_file.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            take_src, take_dst = [], []
            for j, h in enumerate(shard_hashes):
                for i in wanted.get(h, ()):
                    if not found[i]:  # identical documents under several ids all take this row
                        take_src.append(j)
                        take_dst.append(i)
                        found[i] = True
            if not take_src:
                continue
            arr = np.load(ids_file.with_name(ids_file.name[: -len(".ids.json")] + ".npy"), mmap_mode="r")
            if out is None:
                out = np.zeros((len(hashes), arr.shape[1]), dtype=np.float32)
            out[take_dst] = arr[take_src]
            if found.all():
                break
        return out, found

    def add(self, hashes: list[str], embeddings: np.ndarray) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        shard = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        npy, ids = self.directory / f"{shard}.npy", self.directory / f"{shard}.ids.json"
        tmp = self.directory / f".{shard}.tmp"
        with tmp.open("wb") as fh:
            np.save(fh, np.ascontiguousarray(embeddings, dtype=np.float32))
        os.replace(tmp, npy)
        tmp.write_text(json.dumps(hashes))
        os.replace(tmp, ids)


@dataclass(frozen=True)
class IndexStats:
    skills: int
    cached: int    # skills whose embedding came from the cache
    encoded: int   # distinct documents encoded now (identical documents are encoded once)
    seconds: float




def embed_documents(docs: list[str], cache: EmbeddingStore,
                    encoder_for: Callable[[list[str]], Callable[[list[str]], np.ndarray]],
                    log: Callable[[str], None], shard_size: int = 512) -> tuple[np.ndarray, int, int]:
    """(embedding matrix in ``docs`` order, documents found in the cache, distinct documents encoded now).

    Only cache misses are encoded, identical documents under different ids once; new embeddings are
    written to the cache every ``shard_size`` documents, so an interrupted index keeps what it paid for.
    ``encoder_for(texts)`` picks the encoder for the texts to encode (a backend probe may look at them).
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
    log(f"encoding {len(todo)} of {len(docs)} skill documents ({len(docs) - len(miss)} cached)")
    texts = [docs[i] for i in todo]
    pending_h, pending_e, done = [], [], 0
    for idx, emb in encode_in_chunks(texts, encoder_for(texts), chunk_size=256):
        if matrix is None:
            matrix = np.zeros((len(docs), emb.shape[1]), dtype=np.float32)
        pending_h += [hashes[todo[j]] for j in idx]
        pending_e.append(emb)
        done += len(idx)
        if len(pending_h) >= shard_size:
            cache.add(pending_h, np.concatenate(pending_e))
            pending_h, pending_e = [], []
            log(f"  encoded {done}/{len(todo)}")
        for j, e in zip(idx, emb):
            matrix[todo[j]] = e
    if pending_h:
        cache.add(pending_h, np.concatenate(pending_e))
    row_of = {hashes[i]: i for i in todo}
    for i in miss:
        matrix[i] = matrix[row_of[hashes[i]]]
    return matrix, len(docs) - len(miss), len(todo)
