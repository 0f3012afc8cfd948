"""The near-duplicate arithmetic restated as plain Python: the oracle the compiled kernels are checked against.

Written from the specification, not from the kernels: tokens come from a character-level regular
expression (the kernels walk UTF-8 bytes), every value is a Python int reduced modulo 2**64 by hand,
a signature is a loop over shingles and bins, a shingle set is a Python ``set``, and exact Jaccard is
set arithmetic. Only the hash constants and the hasher's parameters are taken from the project.
(datasketch, declared for the benchmark, hashes with SHA-1 and one permutation per signature
position, so it cannot reproduce these values; it is the speed baseline, not an oracle.)
"""
from __future__ import annotations

import re

import numpy as np

from skill_assets.lib.corpus.minhash import MinHasher
from skill_assets.lib.corpus.minhash_kernels import MIX, POSITION_MIX

M64 = 2**64 - 1
EMPTY = 2**32 - 1

#: a CJK character (U+3000–U+9FFF, whose UTF-8 lead byte is 0xE3–0xE9) is a token alone; otherwise a
#: token is a run of ASCII letters, digits and underscores or of any non-ASCII characters
TOKEN = re.compile(r"[\u3000-\u9fff]|(?:[A-Za-z0-9_]|[^\x00-\x7f\u3000-\u9fff])+")


def token_hashes(text: str) -> list[int]:
    """Σ (byte + 1) × POSITION_MIX[place mod 64] over each token's UTF-8 bytes, ASCII lower-cased."""
    out = []
    for token in TOKEN.findall(text):
        data = token.encode("utf-8").lower()  # bytes.lower() lower-cases ASCII letters only
        out.append(sum((byte + 1) * int(POSITION_MIX[i % 64]) for i, byte in enumerate(data)) & M64)
    return out


def shingles(text: str, size: int = 5) -> list[int]:
    """Σ token[j + t] × MIX[t] for each run of ``size`` tokens; fewer tokens make one shingle of all of them."""
    tokens = token_hashes(text)
    width = min(size, len(tokens))
    starts = range(len(tokens) - size + 1) if len(tokens) >= size else range(1 if tokens else 0)
    return [sum(tokens[j + t] * int(MIX[t]) for t in range(width)) & M64 for j in starts]


def signature(hashes: list[int], hasher: MinHasher) -> list[int]:
    """One-permutation MinHash of shingle hashes, then rotation densification."""
    a, b, bits = (int(v) for v in hasher.params())
    k = hasher.num_perm
    bins = [EMPTY] * k
    for s in hashes:
        x = (s * a + b) & M64
        x ^= x >> 31
        x = (x * 0xBF58476D1CE4E5B9) & M64
        x ^= x >> 29
        bins[x >> bits] = min(bins[x >> bits], x & 0xFFFFFFFF)
    out = []
    for i in range(k):
        if bins[i] != EMPTY:
            out.append(bins[i])
            continue
        donor = next((d for d in range(1, k) if bins[(i + d) % k] != EMPTY), None)
        out.append(EMPTY if donor is None else (bins[(i + donor) % k] + donor * 0x9E3779B1) & 0xFFFFFFFF)
    return out


def fingerprints(hashes: list[int]) -> list[int]:
    """The shingle set a sketch keeps: the distinct top 32 bits of the hashes, sorted."""
    return sorted({s >> 32 for s in hashes})


def jaccard(a, b) -> float:
    """Exact Jaccard of two collections, order and repeats ignored; two empty ones are the same."""
    a, b = set(a), set(b)
    return 1.0 if not a and not b else len(a & b) / len(a | b)


def sketch(texts: list[str], size: int = 5, num_perm: int = 64, seed: int = 1) -> tuple[np.ndarray, list[list[int]]]:
    """(documents × num_perm uint32 signatures, each document's shingle set) of ``texts``."""
    hasher = MinHasher(num_perm, seed)
    hashes = [shingles(t, size) for t in texts]
    sigs = np.array([signature(h, hasher) for h in hashes], dtype=np.uint32).reshape(len(texts), num_perm)
    return sigs, [fingerprints(h) for h in hashes]
