"""MinHash signatures and LSH banding over word shingles, vectorised with numpy.

Signatures are computed for all shingles of a document at once as a (permutations × shingles)
matrix of universal hashes ``(a·x + b) mod p`` with p = 2^61 − 1 on 32-bit shingle hashes, so
the product never overflows uint64.
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from itertools import combinations
import zlib

import numpy as np

from skill_assets.lib.hashing import normalise_text

_MERSENNE_61 = np.uint64((1 << 61) - 1)
_TOKEN = re.compile(r"[\w\u3400-\u9fff]+", re.UNICODE)
_CJK_RUN = re.compile(r"^[\u3400-\u9fff]+$")


def word_tokens(text: str) -> list[str]:
    """Words of normalised text; CJK runs count one character per token (no segmenter needed)."""
    tokens: list[str] = []
    for tok in _TOKEN.findall(normalise_text(text)):
        tokens.extend(tok) if _CJK_RUN.match(tok) else tokens.append(tok)
    return tokens


def shingles(text: str, size: int = 5) -> set[str]:
    tokens = word_tokens(text)
    if len(tokens) < size:
        return {" ".join(tokens)} if tokens else set()
    return {" ".join(tokens[i : i + size]) for i in range(len(tokens) - size + 1)}


def shingle_hashes(shingle_set: Iterable[str]) -> np.ndarray:
    """32-bit hashes of shingles (Python's hash is salted per process, so use a stable one)."""
    return np.fromiter((zlib.crc32(s.encode("utf-8")) for s in shingle_set), dtype=np.uint64)


class MinHasher:
    """Seeded family of ``num_perm`` hash permutations."""

    def __init__(self, num_perm: int = 128, seed: int = 1) -> None:
        rng = np.random.default_rng(seed)
        self.num_perm = num_perm
        # a < 2^31 and x < 2^32 keep a·x + b below 2^64
        self._a = rng.integers(1, 1 << 31, size=num_perm, dtype=np.uint64)[:, None]
        self._b = rng.integers(0, (1 << 61) - 1, size=num_perm, dtype=np.uint64)[:, None]

    def signature(self, hashes: np.ndarray) -> np.ndarray:
        if hashes.size == 0:
            return np.full(self.num_perm, np.iinfo(np.uint64).max, dtype=np.uint64)
        return ((self._a * hashes[None, :] + self._b) % _MERSENNE_61).min(axis=1)


def lsh_candidate_pairs(signatures: np.ndarray, bands: int) -> set[tuple[int, int]]:
    """Pairs of row indices that agree on at least one band of the signature matrix."""
    n, num_perm = signatures.shape
    rows = num_perm // bands
    pairs: set[tuple[int, int]] = set()
    for b in range(bands):
        band = np.ascontiguousarray(signatures[:, b * rows : (b + 1) * rows])
        buckets: dict[bytes, list[int]] = defaultdict(list)
        for i in range(n):
            buckets[band[i].tobytes()].append(i)
        for members in buckets.values():
            pairs.update(combinations(members, 2))
    return pairs


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
