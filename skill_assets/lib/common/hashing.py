"""Normalisation and hashing that decide when two skills are "the same".

Forks and mirrors differ in line endings, trailing spaces, case and Unicode width; the
normalisation removes exactly those differences and nothing that changes meaning.
"""
from __future__ import annotations

import hashlib
import re
import sys
import unicodedata

import numpy as np

_NAME_SEP = re.compile(r"[\s_]+")
#: a word of normalised text, and a run of CJK characters (each character its own token: no segmenter)
WORD = re.compile(r"[\w\u3400-\u9fff]+", re.UNICODE)
CJK_RUN = re.compile(r"^[\u3400-\u9fff]+$")


#: texts at least this long collapse their whitespace in a compiled pass over their UTF-8 bytes (same result)
FAST_COLLAPSE_CHARS = 2000


def normalise_text(text: str) -> str:
    """NFKC, whitespace runs (any line endings) collapsed to one space, lower case.

    ``" ".join(nfkc.split()).lower()``; for a long text the same string is built as lower case first
    (no character lower-cases to or from whitespace) and then collapsed over its UTF-8 bytes, which
    skips making a string per word — half of ingest's per-file cost at 100K files.
    """
    nfkc = text if text.isascii() else unicodedata.normalize("NFKC", text)
    if len(nfkc) < FAST_COLLAPSE_CHARS:
        return " ".join(nfkc.split()).lower()
    data = nfkc.lower().encode("utf-8", "surrogatepass")
    out = bytearray(len(data))
    kernel, tables = _collapse_kernel()
    n = kernel(np.frombuffer(data, dtype=np.uint8), np.frombuffer(out, dtype=np.uint8), *tables)
    return out[:n].decode("utf-8", "surrogatepass")


def _whitespace_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What ``str.split()`` splits on, as UTF-8: single bytes, lead bytes of longer sequences, and those
    sequences as big-endian integers (derived from this Python's Unicode database, not written out)."""
    single, lead, sequences = np.zeros(256, np.bool_), np.zeros(256, np.bool_), []
    for code in range(sys.maxunicode + 1):
        if chr(code).isspace():
            encoded = chr(code).encode("utf-8")
            if len(encoded) == 1:
                single[encoded[0]] = True
            else:
                lead[encoded[0]] = True
                sequences.append(int.from_bytes(encoded, "big"))
    return single, lead, np.array(sorted(sequences), dtype=np.int64)


def _collapse_whitespace(data, out, ws_byte, ws_lead, ws_sequences):  # pragma: no cover - compiled
    """Copy ``data`` (UTF-8) to ``out`` with every run of whitespace characters made one space and none
    at either end; return the length written."""
    n = len(data)
    written = 0
    pending = False  # a whitespace run since the last character written
    i = 0
    while i < n:
        c = data[i]
        width = 1
        space = False
        if c < 0x80:
            space = ws_byte[c]
        else:
            width = 2 if c < 0xE0 else (3 if c < 0xF0 else 4)
            if ws_lead[c] and i + width <= n:
                key = 0
                for k in range(width):
                    key = (key << 8) | data[i + k]
                for seq in ws_sequences:
                    if seq == key:
                        space = True
                        break
            width = min(width, n - i)
        if space:
            pending = written > 0
        else:
            if pending:
                out[written] = 32
                written += 1
                pending = False
            for k in range(width):
                out[written + k] = data[i + k]
            written += width
        i += width
    return written


_COMPILED: list = []


def _collapse_kernel():
    """(``_collapse_whitespace`` compiled, its tables), made on first use: numba and the scan of the Unicode
    database (0.15 s) are paid only by a process that normalises long texts, not by every importer."""
    if not _COMPILED:
        from numba import njit

        _COMPILED.append((njit(cache=True, nogil=True)(_collapse_whitespace), _whitespace_tables()))
    return _COMPILED[0]


_SQUASH = re.compile(r"[\s\-_]+")


def squash(text: str) -> str:
    """Lower case without spaces, hyphens or underscores: how a skill name is looked for inside a request
    (R3-Skill's leakage audit), so "Docker Compose", "docker-compose" and "dockercompose" are one name."""
    return _SQUASH.sub("", text.lower())


def normalise_name(name: str) -> str:
    return _NAME_SEP.sub("-", unicodedata.normalize("NFKC", name).strip().lower())


def digest(data: bytes | str) -> str:
    """A 128-bit hex digest: collision-free in practice at any corpus size we handle."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def content_hash(description: str, body: str) -> str:
    """Hash of the normalised skill content (description + body); the name is hashed apart."""
    return normalised_content_hash(normalise_text(description), normalise_text(body))


def normalised_content_hash(description: str, body: str) -> str:
    """``content_hash`` of texts already passed through ``normalise_text`` (saves a second pass)."""
    return digest(description + "\x1f" + body)


def word_tokens(text: str) -> list[str]:
    """Words of normalised text (each CJK character a word): what near-duplicate checks compare."""
    tokens: list[str] = []
    for tok in WORD.findall(normalise_text(text)):
        tokens.extend(tok) if CJK_RUN.match(tok) else tokens.append(tok)
    return tokens


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
