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

from skill_assets.lib.hashing import digest


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
