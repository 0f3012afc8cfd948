"""MinHash near-duplicate detection over word shingles: the hasher, per-document sketches, LSH banding.

The stages mirror datatrove's split (signature → buckets → clusters): ``sketch_chunks`` tokenises,
shingles and signs documents chunk by chunk with the compiled kernels of ``minhash_kernels`` (one
pass over each document's UTF-8 bytes) and keeps, for a whole corpus, only each document's
signature and shingle set; ``lsh_pair_array`` buckets band signatures with one sort per band;
``minhash_kernels.verified_groups`` verifies candidate pairs by exact Jaccard on the two shingle sets
and groups them with union-find.

Tokens: lower-cased runs of letters/digits, except that each CJK character is its own token, so
Chinese text needs no segmenter. ``tests/lib/corpus/minhash_reference.py`` restates the arithmetic as
plain Python loops, and the tests check every value here against it.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from skill_assets.lib.corpus.minhash_kernels import (
    BYTE_CLASS,
    LOWERED,
    MIX,
    POSITION_MIX,
    set_jaccard,
    shingle_kernel,
    sketch_kernel,
)

#: the value of a bin no shingle fell into (an empty document's signature is all of it: it matches nothing real)
EMPTY = np.iinfo(np.uint32).max

#: characters sketched at a time when a chunk comes as texts: bounds a part's UTF-8 copy and the
#: fingerprint slots reserved for it (4 bytes per byte) whatever the document count (a corpus
#: sorted longest-first puts its largest files together)
CHAR_BUDGET = 6_000_000


class MinHasher:
    """One-permutation MinHash with rotation densification (Li, Owen & Zhang 2012; Shrivastava 2017).

    Each shingle is hashed once; the top bits pick one of ``num_perm`` bins and the low 32 bits
    are the value; a document's signature is the minimum per bin. Empty bins borrow the value of
    the next non-empty bin to the right (circularly), offset by the distance (``densify``), so every
    position stays a valid MinHash and two documents collide on a bin with probability ≈ their Jaccard.
    One pass over the shingles instead of ``num_perm`` passes is what makes 100K files cheap.
    """

    def __init__(self, num_perm: int = 64, seed: int = 1) -> None:
        if num_perm & (num_perm - 1):
            raise ValueError("num_perm must be a power of two")
        rng = np.random.default_rng(seed)
        self.num_perm = num_perm
        self._bits = np.uint64(64 - int(np.log2(num_perm)))
        self._a = np.uint64(rng.integers(0, 2**63, dtype=np.uint64) * np.uint64(2) + np.uint64(1))
        self._b = np.uint64(rng.integers(0, 2**63, dtype=np.uint64))

    def params(self) -> tuple[np.uint64, np.uint64, np.uint64]:
        """(multiplier, offset, bin shift): what the compiled kernel signs with."""
        return self._a, self._b, self._bits


def densify(sig: np.ndarray) -> np.ndarray:
    """Fill each ``EMPTY`` bin of each row from the next non-empty bin to its right (circularly), plus
    the distance × 0x9E3779B1 (mod 2**32); a row with no non-empty bin stays all ``EMPTY``."""
    n, k = sig.shape
    if n == 0 or (sig != EMPTY).all():
        return sig
    ext = np.concatenate([sig, sig], axis=1)
    idx = np.where(ext != EMPTY, np.arange(2 * k), 2 * k)
    nxt = np.minimum.accumulate(idx[:, ::-1], axis=1)[:, ::-1][:, :k]
    has = nxt < 2 * k
    src = np.where(has, nxt, 0)
    dist = (src - np.arange(k)).astype(np.uint32)
    with np.errstate(over="ignore"):
        filled = np.take_along_axis(ext, src, axis=1) + dist * np.uint32(0x9E3779B1)
    return np.where(has, np.where(sig != EMPTY, sig, filled), EMPTY).astype(np.uint32)


def lsh_pair_array(signatures: np.ndarray, bands: int, max_bucket_pairs: int = 20) -> np.ndarray:
    """Pairs of rows agreeing on at least one band, as a sorted, duplicate-free (pairs × 2) int64 array
    (first < second). Buckets larger than ``max_bucket_pairs`` emit a chain (consecutive members)
    instead of all pairs; union-find still joins them. Vectorised: each band is bucketed by one
    sort, and a bucket's pairs are generated without a Python loop."""
    n, num_perm = signatures.shape
    rows = num_perm // bands
    found = []
    for b in range(bands):
        band = np.ascontiguousarray(signatures[:, b * rows : (b + 1) * rows])
        keys = band.view(np.dtype((np.void, band.dtype.itemsize * rows))).ravel()
        _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
        inverse = inverse.ravel()
        shared = np.flatnonzero(counts[inverse] > 1)
        if len(shared) == 0:
            continue
        # members of each bucket together, in increasing row order within a bucket
        order = shared[np.argsort(inverse[shared], kind="stable")]
        bounds = np.flatnonzero(np.diff(inverse[order])) + 1
        starts = np.concatenate([[0], bounds])
        sizes = np.diff(np.concatenate([starts, [len(order)]]))
        size_of = np.repeat(sizes, sizes)  # bucket size of each member
        rank = np.arange(len(order)) - np.repeat(starts, sizes)  # member's place in its bucket
        # small bucket: every later member of the bucket; large bucket: only the next one (a chain)
        later = np.where(size_of <= max_bucket_pairs, size_of - 1 - rank, np.minimum(1, size_of - 1 - rank))
        first = np.repeat(np.arange(len(order)), later)
        step = np.arange(len(first)) - np.repeat(np.cumsum(later) - later, later) + 1
        found.append(order[first] * np.int64(n) + order[first + step])
    if not found:
        return np.zeros((0, 2), dtype=np.int64)
    codes = np.unique(np.concatenate(found))
    return np.stack([codes // n, codes % n], axis=1).astype(np.int64)


@dataclass
class Sketches:
    """What near-duplicate detection keeps of each document: its signature and its shingle set.

    Document ``i`` (in keep order) has signature row ``i`` and the set ``sets[set_starts[i]:set_ends[i]]``
    (its distinct shingle fingerprints, the top 32 bits of each hash, sorted); the sets lie in the
    order the documents arrived, which need not be keep order. 32 bits halve the memory of the sets
    that must outlive shingling; a fingerprint collision between two distinct shingles of a pair of
    3,000-shingle documents has probability ~2e-3 and moves their Jaccard by one shingle in thousands.
    """

    signatures: np.ndarray  # (documents × num_perm) uint32
    sets: np.ndarray  # concatenated sorted 32-bit shingle fingerprints
    set_starts: np.ndarray  # int64 per document
    set_ends: np.ndarray

    def jaccard(self, a: int, b: int) -> float:
        """Exact Jaccard of documents ``a`` and ``b``'s shingle sets (1.0 for two empty ones)."""
        return set_jaccard(self.sets, self.set_starts, self.set_ends, a, b)


@dataclass
class Utf8Chunk:
    """Documents as UTF-8 bytes: document ``j`` is ``data[offsets[j]:offsets[j + 1]]`` and sits at
    place ``positions[j]`` of the whole (keep) order, so chunks may arrive in any order (e.g. as a
    table scan returns them, straight from Arrow buffers with no Python strings made)."""

    positions: np.ndarray  # int64
    data: np.ndarray  # uint8
    offsets: np.ndarray  # int64, len(positions) + 1

    @classmethod
    def from_texts(cls, texts: list[str], first: int = 0) -> Utf8Chunk:
        encoded = [t.encode("utf-8") for t in texts]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
        return cls(np.arange(first, first + len(texts), dtype=np.int64),
                   np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets)


def sketch_chunks(chunks: Iterable[list[str] | Utf8Chunk], size: int, hasher: MinHasher) -> Sketches:
    """Shingle, sign and set-ify consecutive chunks of documents in one pass.

    A chunk is a list of texts (the next documents in keep order) or a ``Utf8Chunk`` (documents at
    the keep positions it names, in any order); together the chunks must cover positions 0..n-1
    once each. Only the sketches outlive a chunk, which is what bounds peak memory at 100K files.
    """
    _check_size(size)
    a, b, bits = hasher.params()
    k = hasher.num_perm
    sigs, sets, positions, starts, ends = [], [], [], [], []
    total = next_position = 0
    for chunk in chunks:
        parts = [Utf8Chunk.from_texts(p, next_position + i) for p, i in _char_budget_parts(chunk)] \
            if isinstance(chunk, list) else [chunk]
        for part in parts:
            n = len(part.positions)
            if n == 0:
                continue
            sig = np.full((n, k), EMPTY, dtype=np.uint32)
            out = np.empty(_shingle_bound(part.offsets), dtype=np.uint32)
            counts = np.zeros(n, dtype=np.int64)
            sketch_kernel(part.data, part.offsets.astype(np.int64, copy=False), size, MIX, POSITION_MIX,
                          LOWERED, BYTE_CLASS, a, b, bits, sig, out, counts)
            ends_local = np.cumsum(counts)
            sigs.append(densify(sig))
            sets.append(out[: ends_local[-1]].copy() if len(ends_local) else out[:0])
            starts.append(ends_local - counts + total)
            ends.append(ends_local + total)
            positions.append(np.asarray(part.positions, dtype=np.int64))
            total += int(ends_local[-1])
        if isinstance(chunk, list):
            next_position += len(chunk)
    if not sigs:
        zero = np.zeros(0, dtype=np.int64)
        return Sketches(np.zeros((0, k), dtype=np.uint32), np.zeros(0, dtype=np.uint32), zero, zero)
    pos = np.concatenate(positions)
    n = len(pos)
    if not np.array_equal(np.sort(pos), np.arange(n)):
        raise ValueError("chunks must cover positions 0..n-1 exactly once")
    signatures = np.empty((n, k), dtype=np.uint32)
    signatures[pos] = np.concatenate(sigs)
    set_starts, set_ends = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    set_starts[pos] = np.concatenate(starts)
    set_ends[pos] = np.concatenate(ends)
    return Sketches(signatures, np.concatenate(sets), set_starts, set_ends)


def shingle_hashes(texts: list[str], size: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Every 64-bit shingle hash of each text, in order and with repeats: (hashes, per-text offsets).

    The values ``sketch_chunks`` signs and keeps the top 32 bits of, from the same compiled
    tokeniser, for a caller that needs the shingles themselves (the corpus benchmark hands them to
    datasketch). A text shorter than ``size`` tokens is one shingle; an empty one has none.
    """
    _check_size(size)
    hashes, counts = [np.zeros(0, dtype=np.uint64)], [np.zeros(0, dtype=np.int64)]
    for part, _ in _char_budget_parts(texts):
        chunk = Utf8Chunk.from_texts(part)
        out = np.empty(_shingle_bound(chunk.offsets), dtype=np.uint64)
        per_text = np.zeros(len(part), dtype=np.int64)
        shingle_kernel(chunk.data, chunk.offsets, size, MIX, POSITION_MIX, LOWERED, BYTE_CLASS, out, per_text)
        hashes.append(out[: int(per_text.sum())])
        counts.append(per_text)
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(np.concatenate(counts), out=offsets[1:])
    return np.concatenate(hashes), offsets


def _check_size(size: int) -> None:
    if size > len(MIX):
        raise ValueError(f"shingle size at most {len(MIX)}")


def _char_budget_parts(texts: list[str], budget: int = CHAR_BUDGET) -> Iterator[tuple[list[str], int]]:
    """(part, index of its first text in ``texts``) for consecutive parts of at most ``budget``
    characters each (a longer text is a part alone)."""
    start, used = 0, 0
    for i, t in enumerate(texts):
        if used and used + len(t) > budget:
            yield texts[start:i], start
            start, used = i, 0
        used += len(t)
    if start < len(texts):
        yield texts[start:], start


def _shingle_bound(offsets: np.ndarray) -> int:
    """Upper bound on a chunk's shingles: at most one per byte, at least one slot per document."""
    return int(offsets[-1] - offsets[0]) + len(offsets)
