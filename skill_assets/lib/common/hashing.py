"""Normalisation and hashing that decide when two skills are "the same".

Forks and mirrors differ in line endings, trailing spaces, case and Unicode width; the
normalisation removes exactly those differences and nothing that changes meaning.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata

_NAME_SEP = re.compile(r"[\s_]+")
#: a word of normalised text, and a run of CJK characters (each character its own token: no segmenter)
WORD = re.compile(r"[\w\u3400-\u9fff]+", re.UNICODE)
CJK_RUN = re.compile(r"^[\u3400-\u9fff]+$")


def normalise_text(text: str) -> str:
    """NFKC, whitespace runs (any line endings) collapsed to one space, lower case."""
    return " ".join(unicodedata.normalize("NFKC", text).split()).lower()


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
