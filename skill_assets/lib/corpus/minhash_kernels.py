"""The compiled (numba) kernels of near-duplicate detection, and the constants their hashes use.

One pass over each document's UTF-8 bytes gives its tokens, shingles, one-permutation signature
(before densification) and sorted set of distinct 32-bit shingle fingerprints, with no per-byte
intermediates. ``verified_groups`` then measures candidate pairs by exact Jaccard on those sets and
joins them with union-find. ``minhash`` is the API over these; ``tests/lib/corpus/minhash_reference.py``
restates the same arithmetic as plain Python loops, and the tests check the kernels against it.

Each piece is its own small compiled function; numba inlines them into the loops that call them
(``inline="always"``), so the split costs nothing per byte or shingle.
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: multiplier of a shingle's i-th token hash (the shingle size is at most ``len(MIX)``)
MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9], dtype=np.uint64)

#: multiplier of a token's byte at place ``i`` (``i & 63``): odd 64-bit constants from a fixed seed
POSITION_MIX = np.random.default_rng(20261129).integers(1, 2**63, size=64, dtype=np.uint64) * np.uint64(2) \
    + np.uint64(1)


def _byte_tables() -> tuple[np.ndarray, np.ndarray]:
    """Per UTF-8 byte: its lower-cased value (ASCII letters only), and its class: bit 0 a token byte
    ([a-z0-9_] or non-ASCII), bit 1 a CJK lead byte (0xE3–0xE9, the first of a 3-byte sequence)."""
    lowered = np.arange(256, dtype=np.uint64)
    lowered[65:91] += np.uint64(32)
    classes = np.zeros(256, dtype=np.int64)
    for c in range(256):
        low = int(lowered[c])
        token = 97 <= low <= 122 or 48 <= low <= 57 or low == 95 or low >= 128
        classes[c] = int(token) | (2 if 0xE3 <= low <= 0xE9 else 0)
    return lowered, classes


LOWERED, BYTE_CLASS = _byte_tables()


@njit(cache=True, nogil=True, inline="always")
def _token_hashes(data, start, end, position_mix, lowered, classes, tokens):  # pragma: no cover - compiled
    """Hash the tokens of ``data[start:end]`` into ``tokens``; returns how many there are.

    A token is a run of [a-z0-9_] or non-ASCII bytes (ASCII letters lower-cased), except that each
    CJK character (lead byte 0xE3–0xE9 and the two bytes after it) is its own token. Its hash is the
    sum of (byte + 1) × ``position_mix[place & 63]`` over its bytes, modulo 2**64.
    """
    one = np.uint64(1)
    nt = 0
    h = np.uint64(0)
    pos = 0  # the place in the current token (0: none open)
    prev_word = 0
    prev_cjk = 0
    lead1 = 0
    lead2 = 0
    for i in range(start, end):
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
    return nt


@njit(cache=True, nogil=True, inline="always")
def _shingle_shape(nt, size):  # pragma: no cover - compiled
    """(shingles, tokens per shingle) of a document of ``nt`` tokens: ``size`` consecutive tokens each,
    and a shorter document is one shingle of all its tokens (an empty one has none)."""
    if nt >= size:
        return nt - size + 1, size
    if nt > 0:
        return 1, nt
    return 0, 0


@njit(cache=True, nogil=True, inline="always")
def _shingle_hash(tokens, j, width, mix):  # pragma: no cover - compiled
    """The hash of the shingle of ``width`` tokens starting at token ``j``: Σ tokens[j + t] × mix[t]."""
    s = np.uint64(0)
    for t in range(width):
        s += tokens[j + t] * mix[t]
    return s


@njit(cache=True, nogil=True, inline="always")
def _sign(s, a, b, bits, sig, d):  # pragma: no cover - compiled
    """Fold shingle hash ``s`` into row ``d`` of ``sig``: mix it (splitmix64 finaliser over s·a + b),
    its top bits pick the bin, its low 32 bits are the value, and a bin keeps its minimum."""
    x = s * a + b
    x ^= x >> np.uint64(31)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(29)
    slot = np.int64(x >> bits)
    v = np.uint32(x & np.uint64(0xFFFFFFFF))
    if v < sig[d, slot]:
        sig[d, slot] = v


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


@njit(cache=True, nogil=True, inline="always")
def _write_distinct(ordered, out, cursor):  # pragma: no cover - compiled
    """Copy the distinct values of sorted, non-empty ``ordered`` to ``out[cursor:]``; returns how many."""
    out[cursor] = ordered[0]
    kept = 1
    for j in range(1, len(ordered)):
        if ordered[j] != ordered[j - 1]:
            out[cursor + kept] = ordered[j]
            kept += 1
    return kept


@njit(cache=True, nogil=True, inline="always")
def _longest(offsets):  # pragma: no cover - compiled
    longest = 0
    for d in range(len(offsets) - 1):
        longest = max(longest, offsets[d + 1] - offsets[d])
    return longest


@njit(cache=True, nogil=True)
def sketch_kernel(data, offsets, size, mix, position_mix, lowered, classes, a, b, bits,
                  sig, out, counts):  # pragma: no cover - compiled
    """Per document ``d`` (``data[offsets[d]:offsets[d + 1]]``): its signature before densification,
    minimised into ``sig[d]`` (filled with the empty value by the caller), and the sorted distinct top
    32 bits of its shingle hashes, appended to ``out`` (``counts[d]`` of them)."""
    longest = _longest(offsets)
    tokens = np.empty(longest + 1, dtype=np.uint64)
    prints = np.empty(longest + 1, dtype=np.uint32)
    spare = np.empty(longest + 1, dtype=np.uint32)
    c32 = np.uint64(32)
    cursor = 0
    for d in range(len(offsets) - 1):
        nt = _token_hashes(data, offsets[d], offsets[d + 1], position_mix, lowered, classes, tokens)
        m, width = _shingle_shape(nt, size)
        for j in range(m):
            s = _shingle_hash(tokens, j, width, mix)
            _sign(s, a, b, bits, sig, d)
            prints[j] = np.uint32(s >> c32)
        if m:
            kept = _write_distinct(_radix_sort(prints[:m], spare[:m]), out, cursor)
            counts[d] = kept
            cursor += kept


@njit(cache=True, nogil=True)
def shingle_kernel(data, offsets, size, mix, position_mix, lowered, classes, out, counts):  # pragma: no cover
    """Every shingle hash of each document, in order and with repeats (what ``sketch_kernel`` signs),
    appended to ``out`` (``counts[d]`` for document ``d``)."""
    tokens = np.empty(_longest(offsets) + 1, dtype=np.uint64)
    cursor = 0
    for d in range(len(offsets) - 1):
        nt = _token_hashes(data, offsets[d], offsets[d + 1], position_mix, lowered, classes, tokens)
        m, width = _shingle_shape(nt, size)
        for j in range(m):
            out[cursor + j] = _shingle_hash(tokens, j, width, mix)
        counts[d] = m
        cursor += m


@njit(cache=True, nogil=True)
def set_jaccard(sets, starts, ends, a, b):  # pragma: no cover - compiled
    """Exact Jaccard of documents ``a`` and ``b`` by a merge of their sorted sets
    (``sets[starts[i]:ends[i]]``); two empty sets are the same (1.0)."""
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
        if ra != rb and set_jaccard(sets, starts, ends, a, b) >= threshold:
            parent[max(ra, rb)] = min(ra, rb)
    for i in range(len(parent)):
        r = _find(parent, i)
        parent[i] = r
        similarity[i] = 1.0 if r == i else set_jaccard(sets, starts, ends, i, r)
