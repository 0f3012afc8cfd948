"""MinHash near-duplicate detection over word shingles, vectorised across whole corpora.

The stages mirror datatrove's split (signature → buckets → clusters) as functions:
``token_hashes_batch`` tokenises and hashes every document at once with numpy over the UTF-8
bytes, ``shingle_hashes_batch`` rolls 5-token shingle hashes from them; ``MinHasher.signatures`` computes one-permutation MinHash
signatures for all documents in one vectorised pass (no Python loop per document or shingle);
``lsh_candidate_pairs`` buckets band signatures with ``np.unique``; ``jaccard_sorted`` verifies a
candidate pair exactly on the two shingle sets. ``sketch_chunks`` runs the first stages chunk by
chunk so that only signatures and compact shingle sets are ever held for a whole corpus.

Tokens: lower-cased runs of letters/digits, except that each CJK character is its own token, so
Chinese text needs no segmenter.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import combinations, pairwise

import numpy as np

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
    num_perm = signatures.shape[1]
    rows = num_perm // bands
    pairs: set[tuple[int, int]] = set()
    for b in range(bands):
        band = np.ascontiguousarray(signatures[:, b * rows : (b + 1) * rows])
        keys = band.view(np.dtype((np.void, band.dtype.itemsize * rows))).ravel()
        _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
        shared = np.flatnonzero(counts[inverse] > 1)
        if len(shared) == 0:
            continue
        order = shared[np.argsort(inverse[shared], kind="stable")]
        groups = np.split(order, np.flatnonzero(np.diff(inverse[order])) + 1)
        for g in groups:
            members = g.tolist()
            if len(members) <= max_bucket_pairs:
                pairs.update(combinations(members, 2))
            else:
                pairs.update(pairwise(members))
    return pairs


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
    """What near-duplicate detection keeps of each document: its signature and its shingle set."""

    signatures: np.ndarray  # (documents × num_perm) uint32
    sets: np.ndarray  # concatenated sorted 32-bit shingle fingerprints (``unique_per_document``)
    set_offsets: np.ndarray

    def jaccard(self, a: int, b: int) -> float:
        s, o = self.sets, self.set_offsets
        return jaccard_sorted(s[o[a] : o[a + 1]], s[o[b] : o[b + 1]])


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


def sketch_chunks(chunks: Iterable[list[str]], size: int, hasher: MinHasher) -> Sketches:
    """Shingle, sign and set-ify consecutive chunks of documents in one pass.

    Only the sketches outlive a chunk: the raw shingle hashes (8 bytes each, with repeats) and the
    signing intermediates are never held for the whole corpus, which is what bounds peak memory
    at 100K files.
    """
    if size > len(_MIX):
        raise ValueError(f"shingle size at most {len(_MIX)}")
    sigs, sets, set_offsets, total = [], [], [np.zeros(1, dtype=np.int64)], 0
    for texts in (part for chunk in chunks for part in _by_char_budget(chunk)):
        sh, off = _shingle_chunk(texts, size)
        sigs.append(hasher.signatures(sh, off))
        uniq, uniq_off = unique_per_document(sh, off)
        del sh
        sets.append(uniq)
        set_offsets.append(uniq_off[1:] + total)
        total += len(uniq)
    return Sketches(np.concatenate(sigs) if sigs else np.zeros((0, hasher.num_perm), dtype=np.uint32),
                    np.concatenate(sets) if sets else np.zeros(0, dtype=np.uint32), np.concatenate(set_offsets))


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
