"""MinHash near-duplicate detection over word shingles, vectorised across whole corpora.

The stages mirror datatrove's split (signature → buckets → clusters) as functions:
``token_hashes_batch`` tokenises and hashes every document at once with numpy over the UTF-8
bytes, ``shingle_hashes_batch`` rolls 5-token shingle hashes from them; ``MinHasher.signatures`` computes one-permutation MinHash
signatures for all documents in one vectorised pass (no Python loop per document or shingle);
``lsh_candidate_pairs`` buckets band signatures with ``np.unique``; ``jaccard_sorted`` verifies a
candidate pair exactly on the two shingle sets. ``sketch_chunks`` runs the first stages chunk by
chunk so that only signatures and compact shingle sets are ever held for a whole corpus.

The numpy functions are the specification; the corpus path runs the same arithmetic as compiled
kernels (numba), one pass over each document's UTF-8 bytes: tokens, shingles, signature and
shingle set without the ~40 bytes of numpy intermediates per input byte, bit for bit the same
values (``tests/lib/corpus/test_dedup.py`` checks the two against each other).

Tokens: lower-cased runs of letters/digits, except that each CJK character is its own token, so
Chinese text needs no segmenter.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
from numba import njit

_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9], dtype=np.uint64)


_POSITION_MIX = np.random.default_rng(20261129).integers(1, 2**63, size=64, dtype=np.uint64) * np.uint64(2) + np.uint64(1)


def token_hashes_batch(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Hash every token of every text in one vectorised pass over the UTF-8 bytes.

    A token is a run of ASCII letters/digits/underscore or non-ASCII non-CJK characters
    (accented words), or a single CJK character (lead bytes 0xE3–0xE9 of a 3-byte sequence);
    ASCII letters are lower-cased. Returns (token hashes, per-text token offsets).
    """
    encoded = [t.encode("utf-8") for t in texts]
    lengths = np.fromiter((len(e) + 1 for e in encoded), dtype=np.int64, count=len(encoded))
    buf = np.frombuffer(b"\n".join(encoded) + b"\n", dtype=np.uint8).copy()
    upper = (buf >= 65) & (buf <= 90)
    buf[upper] += 32
    alnum = ((buf >= 97) & (buf <= 122)) | ((buf >= 48) & (buf <= 57)) | (buf == 95)
    non_ascii = buf >= 0x80
    cjk_lead = (buf >= 0xE3) & (buf <= 0xE9)
    # bytes of a CJK character: its lead byte and the two continuation bytes after it
    cjk = cjk_lead.copy()
    cjk[1:] |= cjk_lead[:-1]
    cjk[2:] |= cjk_lead[:-2]
    word = alnum | non_ascii
    prev_word = np.concatenate([[False], word[:-1]])
    prev_cjk = np.concatenate([[False], cjk[:-1]])
    starts = word & (~prev_word | cjk_lead | (prev_cjk & ~cjk))
    idx = np.flatnonzero(word)
    token_id = np.cumsum(starts)[idx] - 1
    start_pos = np.flatnonzero(starts)
    pos_in_token = idx - start_pos[token_id]
    with np.errstate(over="ignore"):
        vals = (buf[idx].astype(np.uint64) + np.uint64(1)) * _POSITION_MIX[pos_in_token & 63]
        hashes = np.add.reduceat(vals, np.flatnonzero(np.diff(np.concatenate([[-1], token_id])) > 0)) \
            if len(vals) else np.zeros(0, dtype=np.uint64)
    doc_bounds = np.concatenate([[0], np.cumsum(lengths)])
    offsets = np.searchsorted(start_pos, doc_bounds).astype(np.int64)
    return hashes.astype(np.uint64), offsets


def shingle_hashes_batch(texts: list[str], size: int = 5, chunk_docs: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """(shingle hashes, per-document offsets); a document shorter than ``size`` tokens is one shingle.

    Documents are processed ``chunk_docs`` at a time: the byte-level intermediates are ~40 bytes
    per input byte, so chunking bounds memory (and keeps the arrays cache-friendly).
    """
    return shingle_hashes_chunks((texts[i : i + chunk_docs] for i in range(0, len(texts), chunk_docs)), size)


def shingle_hashes_chunks(chunks: Iterable[list[str]], size: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """``shingle_hashes_batch`` over consecutive chunks of documents (e.g. streamed from disk)."""
    if size > len(_MIX):
        raise ValueError(f"shingle size at most {len(_MIX)}")
    parts, offsets, total = [], [np.zeros(1, dtype=np.int64)], 0
    for texts in chunks:
        if not texts:
            continue
        sh, off = _shingle_chunk(texts, size)
        parts.append(sh)
        offsets.append(off[1:] + total)
        total += len(sh)
    return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)), np.concatenate(offsets)


def _shingle_chunk(texts: list[str], size: int) -> tuple[np.ndarray, np.ndarray]:
    th, tok_offsets = token_hashes_batch(texts)
    counts = np.diff(tok_offsets)
    starts = tok_offsets[:-1]
    n = len(th)
    width = max(0, n - size + 1)
    sh = np.zeros(width, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(size):
            sh += th[j : j + width] * _MIX[j]
    # a shingle is valid when it starts inside its document at least `size` tokens before the end
    ends = np.repeat(starts + counts, counts)[:width]
    valid = np.arange(width, dtype=np.int64) + size <= ends
    per_doc = np.where(counts >= size, counts - size + 1, (counts > 0).astype(np.int64))
    offsets = np.concatenate([[0], np.cumsum(per_doc)]).astype(np.int64)
    out = np.empty(int(offsets[-1]), dtype=np.uint64)
    long_docs = counts >= size
    # positions in `out` that belong to long documents, in order
    slot_is_long = np.repeat(long_docs, per_doc)
    out[slot_is_long] = sh[valid]
    with np.errstate(over="ignore"):
        for d in np.flatnonzero((counts > 0) & (counts < size)):
            out[offsets[d]] = np.uint64(np.sum(th[starts[d] : starts[d] + counts[d]] * _MIX[: counts[d]]))
    return out, offsets


class MinHasher:
    """One-permutation MinHash with rotation densification (Li, Owen & Zhang 2012; Shrivastava 2017).

    Each shingle is hashed once; the top bits pick one of ``num_perm`` bins and the low 32 bits
    are the value; a document's signature is the minimum per bin. Empty bins borrow the value of
    the next non-empty bin to the right (circularly), offset by the distance, so every position
    stays a valid MinHash and two documents collide on a bin with probability ≈ their Jaccard.
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
        """(multiplier, offset, bin shift): what the compiled kernel needs to sign as ``signatures`` does."""
        return self._a, self._b, self._bits

    def signatures(self, sh: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """(documents × num_perm) uint32 signatures; an empty document gets all-max (matches nothing real)."""
        n, k = len(offsets) - 1, self.num_perm
        empty = np.iinfo(np.uint32).max
        doc = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
        with np.errstate(over="ignore"):
            h = sh * self._a + self._b
            h ^= h >> np.uint64(31)
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(29)
        bins = (h >> self._bits).astype(np.int64)
        sig = np.full(n * k, empty, dtype=np.uint32)
        np.minimum.at(sig, doc * k + bins, (h & np.uint64(0xFFFFFFFF)).astype(np.uint32))
        return self._densify(sig.reshape(n, k), empty)

    @staticmethod
    def _densify(sig: np.ndarray, empty: int) -> np.ndarray:
        n, k = sig.shape
        if n == 0 or (sig != empty).all():
            return sig
        ext = np.concatenate([sig, sig], axis=1)
        idx = np.where(ext != empty, np.arange(2 * k), 2 * k)
        nxt = np.minimum.accumulate(idx[:, ::-1], axis=1)[:, ::-1][:, :k]
        has = nxt < 2 * k
        src = np.where(has, nxt, 0)
        dist = (src - np.arange(k)).astype(np.uint32)
        with np.errstate(over="ignore"):
            filled = np.take_along_axis(ext, src, axis=1) + dist * np.uint32(0x9E3779B1)
        return np.where(has, np.where(sig != empty, sig, filled), empty).astype(np.uint32)


def lsh_candidate_pairs(signatures: np.ndarray, bands: int, max_bucket_pairs: int = 20) -> set[tuple[int, int]]:
    """Pairs of rows agreeing on at least one band. Buckets larger than ``max_bucket_pairs``
    emit a chain (consecutive members) instead of all pairs; union-find still joins them."""
    return {(a, b) for a, b in lsh_pair_array(signatures, bands, max_bucket_pairs).tolist()}


def lsh_pair_array(signatures: np.ndarray, bands: int, max_bucket_pairs: int = 20) -> np.ndarray:
    """``lsh_candidate_pairs`` as a sorted, duplicate-free (pairs × 2) int64 array (first < second), vectorised:
    each band is bucketed by one sort, and a bucket's pairs are generated without a Python loop."""
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


def unique_per_document(sh: np.ndarray, offsets: np.ndarray, chunk: int = 4_000_000) -> tuple[np.ndarray, np.ndarray]:
    """Each document's shingle set as a sorted, duplicate-free slice of 32-bit fingerprints (for exact Jaccard).

    Sorted in one vectorised pass per chunk of documents by a key of (document, top 32 bits of the
    shingle hash). 32 bits halve the memory of the sets that must outlive shingling; a fingerprint
    collision between two distinct shingles of a pair of 3,000-shingle documents has probability
    ~2e-3 and moves their Jaccard by one shingle in thousands.
    """
    n = len(offsets) - 1
    out_parts, counts = [], np.zeros(n, dtype=np.int64)
    doc = 0
    while doc < n:
        end = doc
        while end < n and (end == doc or offsets[end + 1] - offsets[doc] <= chunk):
            end += 1
        seg = sh[offsets[doc] : offsets[end]]
        local = np.repeat(np.arange(end - doc, dtype=np.uint64), np.diff(offsets[doc : end + 1]))
        keys = np.sort((local << np.uint64(32)) | (seg >> np.uint64(32)))
        keep = np.ones(len(keys), dtype=bool)
        keep[1:] = keys[1:] != keys[:-1]
        keys = keys[keep]
        counts[doc:end] = np.bincount((keys >> np.uint64(32)).astype(np.int64), minlength=end - doc)
        out_parts.append((keys & np.uint64(0xFFFFFFFF)).astype(np.uint32))
        doc = end
    uniq_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return (np.concatenate(out_parts) if out_parts else np.zeros(0, dtype=np.uint32)), uniq_offsets


@dataclass
class Sketches:
    """What near-duplicate detection keeps of each document: its signature and its shingle set.

    Document ``i`` (in keep order) has signature row ``i`` and the set ``sets[set_starts[i]:set_ends[i]]``
    (sorted 32-bit shingle fingerprints, as ``unique_per_document``); the sets lie in the order the
    documents arrived, which need not be keep order.
    """

    signatures: np.ndarray  # (documents × num_perm) uint32
    sets: np.ndarray  # concatenated sorted 32-bit shingle fingerprints
    set_starts: np.ndarray  # int64 per document
    set_ends: np.ndarray

    def jaccard(self, a: int, b: int) -> float:
        s = self.sets
        return jaccard_sorted(s[self.set_starts[a] : self.set_ends[a]], s[self.set_starts[b] : self.set_ends[b]])


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


#: characters tokenised at a time: the byte-level intermediates take ~40 bytes per input byte, so
#: this caps them near 250 MB whatever the document count (a corpus sorted longest-first puts
#: its largest files together)
CHAR_BUDGET = 6_000_000


def _by_char_budget(texts: list[str], budget: int = CHAR_BUDGET) -> Iterator[list[str]]:
    start, used = 0, 0
    for i, t in enumerate(texts):
        if used and used + len(t) > budget:
            yield texts[start:i]
            start, used = i, 0
        used += len(t)
    if start < len(texts):
        yield texts[start:]


def sketch_chunks(chunks: Iterable[list[str] | Utf8Chunk], size: int, hasher: MinHasher) -> Sketches:
    """Shingle, sign and set-ify consecutive chunks of documents in one pass.

    A chunk is a list of texts (the next documents in keep order) or a ``Utf8Chunk`` (documents at
    the keep positions it names, in any order); together the chunks must cover positions 0..n-1
    once each. Only the sketches outlive a chunk, which is what bounds peak memory at 100K files.
    """
    if size > len(_MIX):
        raise ValueError(f"shingle size at most {len(_MIX)}")
    a, b, bits = hasher.params()
    k = hasher.num_perm
    empty = np.iinfo(np.uint32).max
    sigs, sets, positions, starts, ends = [], [], [], [], []
    total = next_position = 0
    for chunk in chunks:
        parts = [Utf8Chunk.from_texts(p, next_position + i) for p, i in _char_budget_parts(chunk)] \
            if isinstance(chunk, list) else [chunk]
        for part in parts:
            n = len(part.positions)
            if n == 0:
                continue
            sig = np.full((n, k), empty, dtype=np.uint32)
            out = np.empty(_shingle_bound(part.offsets), dtype=np.uint32)
            counts = np.zeros(n, dtype=np.int64)
            _sketch_kernel(part.data, part.offsets.astype(np.int64, copy=False), size, _MIX, _POSITION_MIX,
                           _LOWERED, _BYTE_CLASS, a, b, bits, sig, out, counts)
            ends_local = np.cumsum(counts)
            sigs.append(MinHasher._densify(sig, empty))
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


def _char_budget_parts(texts: list[str]) -> Iterator[tuple[list[str], int]]:
    """(part, index of its first text in ``texts``) for each part of at most ``CHAR_BUDGET`` characters."""
    first = 0
    for part in _by_char_budget(texts):
        yield part, first
        first += len(part)


def _shingle_bound(offsets: np.ndarray) -> int:
    """Upper bound on a chunk's shingles: at most one per byte, at least one slot per document."""
    return int(offsets[-1] - offsets[0]) + len(offsets)


def _byte_tables() -> tuple[np.ndarray, np.ndarray]:
    """Per UTF-8 byte: its lower-cased value (ASCII letters only), and its class as ``token_hashes_batch``
    sees it: bit 0 a token byte ([a-z0-9_] or non-ASCII), bit 1 a CJK lead byte (0xE3–0xE9)."""
    lowered = np.arange(256, dtype=np.uint64)
    lowered[65:91] += np.uint64(32)
    classes = np.zeros(256, dtype=np.int64)
    for c in range(256):
        low = int(lowered[c])
        token = 97 <= low <= 122 or 48 <= low <= 57 or low == 95 or low >= 128
        classes[c] = int(token) | (2 if 0xE3 <= low <= 0xE9 else 0)
    return lowered, classes


_LOWERED, _BYTE_CLASS = _byte_tables()


@njit(cache=True, nogil=True)
def _radix_sort(keys, spare):  # pragma: no cover - compiled
    """``keys`` (uint32) sorted, least significant byte first; returns whichever buffer holds the result."""
    n = len(keys)
    count = np.zeros(256, dtype=np.int64)
    src, dst = keys, spare
    for shift in range(0, 32, 8):
        count[:] = 0
        for i in range(n):
            count[(src[i] >> shift) & 255] += 1
        if count[(src[0] >> shift) & 255] == n:  # every key has this byte: the order stands
            continue
        total = 0
        for j in range(256):
            c = count[j]
            count[j] = total
            total += c
        for i in range(n):
            k = (src[i] >> shift) & 255
            dst[count[k]] = src[i]
            count[k] += 1
        src, dst = dst, src
    return src


@njit(cache=True, nogil=True)
def _sketch_kernel(data, offsets, size, mix, position_mix, lowered, classes, a, b, bits,
                   sig, out, counts):  # pragma: no cover - compiled
    """Per document: token hashes (``token_hashes_batch``), shingle hashes (``_shingle_chunk``), the
    one-permutation signature before densification (``MinHasher.signatures``) and the sorted distinct
    top-32-bit fingerprints (``unique_per_document``), written to ``sig[d]`` and ``out`` (counts[d] each)."""
    n = len(offsets) - 1
    longest = 0
    for d in range(n):
        longest = max(longest, offsets[d + 1] - offsets[d])
    tokens = np.empty(longest + 1, dtype=np.uint64)
    prints = np.empty(longest + 1, dtype=np.uint32)
    spare = np.empty(longest + 1, dtype=np.uint32)
    one = np.uint64(1)
    low = np.uint64(0xFFFFFFFF)
    c31, c29, c32 = np.uint64(31), np.uint64(29), np.uint64(32)
    mult = np.uint64(0xBF58476D1CE4E5B9)
    cursor = 0
    for d in range(n):
        # tokens: runs of [a-z0-9_] or non-ASCII bytes; each CJK character (lead byte 0xE3-0xE9 and the
        # two bytes after it) is its own token. `pos` is the place in the current token (0: none open).
        nt = 0
        h = np.uint64(0)
        pos = 0
        prev_word = 0
        prev_cjk = 0
        lead1 = 0
        lead2 = 0
        for i in range(offsets[d], offsets[d + 1]):
            c = data[i]
            k = classes[c]
            lead = k >> 1
            cjk = lead | lead1 | lead2
            if k & 1:
                if prev_word == 0 or lead or (prev_cjk and not cjk):
                    if pos:
                        tokens[nt] = h
                        nt += 1
                    h = np.uint64(0)
                    pos = 0
                h += (lowered[c] + one) * position_mix[pos & 63]
                pos += 1
            elif pos:
                tokens[nt] = h
                nt += 1
                pos = 0
            prev_word = k & 1
            prev_cjk = cjk
            lead2 = lead1
            lead1 = lead
        if pos:
            tokens[nt] = h
            nt += 1
        # shingles: `size` consecutive tokens; a shorter document is one shingle of all its tokens
        if nt >= size:
            m = nt - size + 1
            width = size
        elif nt > 0:
            m = 1
            width = nt
        else:
            m = 0
            width = 0
        for j in range(m):
            s = np.uint64(0)
            for t in range(width):
                s += tokens[j + t] * mix[t]
            x = s * a + b
            x ^= x >> c31
            x *= mult
            x ^= x >> c29
            slot = np.int64(x >> bits)
            v = np.uint32(x & low)
            if v < sig[d, slot]:
                sig[d, slot] = v
            prints[j] = np.uint32(s >> c32)
        if m:
            ordered = _radix_sort(prints[:m], spare[:m])
            out[cursor] = ordered[0]
            kept = 1
            for j in range(1, m):
                if ordered[j] != ordered[j - 1]:
                    out[cursor + kept] = ordered[j]
                    kept += 1
            counts[d] = kept
            cursor += kept


@njit(cache=True, nogil=True)
def _jaccard_kernel(sets, starts, ends, a, b):  # pragma: no cover - compiled
    """``jaccard_sorted`` of documents ``a`` and ``b`` by a merge of their sorted sets."""
    i, i_end, j, j_end = starts[a], ends[a], starts[b], ends[b]
    la, lb = i_end - i, j_end - j
    if la == 0 and lb == 0:
        return 1.0
    if la == 0 or lb == 0:
        return 0.0
    inter = 0
    while i < i_end and j < j_end:
        x, y = sets[i], sets[j]
        if x == y:
            inter += 1
            i += 1
            j += 1
        elif x < y:
            i += 1
        else:
            j += 1
    return inter / (la + lb - inter)


@njit(cache=True, nogil=True)
def _find(parent, i):  # pragma: no cover - compiled
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@njit(cache=True, nogil=True)
def verified_groups(pairs, sets, starts, ends, threshold, parent, similarity):  # pragma: no cover - compiled
    """Union-find over candidate ``pairs``: a pair is joined when its exact Jaccard is ≥ ``threshold``,
    and pairs already in one group are not measured. Afterwards ``parent[i]`` is the smallest index
    of i's group and ``similarity[i]`` the measured Jaccard of i to it (1.0 for that smallest index)."""
    for p in range(len(pairs)):
        a, b = pairs[p, 0], pairs[p, 1]
        ra, rb = _find(parent, a), _find(parent, b)
        if ra != rb and _jaccard_kernel(sets, starts, ends, a, b) >= threshold:
            parent[max(ra, rb)] = min(ra, rb)
    for i in range(len(parent)):
        r = _find(parent, i)
        parent[i] = r
        similarity[i] = 1.0 if r == i else _jaccard_kernel(sets, starts, ends, i, r)


def jaccard_sorted(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard of two sorted, duplicate-free arrays (see ``unique_per_document``)."""
    if len(a) == 0 and len(b) == 0:
        return 1.0
    if len(a) > len(b):
        a, b = b, a
    if len(a) == 0:
        return 0.0
    idx = np.searchsorted(b, a)
    idx[idx == len(b)] = len(b) - 1
    inter = int(np.count_nonzero(b[idx] == a))
    return inter / (len(a) + len(b) - inter)


def jaccard_hashes(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard of two shingle-hash arrays in any order, repeats ignored."""
    return jaccard_sorted(np.unique(a), np.unique(b))
