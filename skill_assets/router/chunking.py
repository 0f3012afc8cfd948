"""Long requests keep their signal: text past an encoder's window is split and the pieces pooled.

A task statement of thousands of characters would lose everything after the first 256 tokens of
a bi-encoder. It is cut at paragraph, then sentence, then hard boundaries into pieces of at most
``max_chars``; the encoder embeds every piece and the request is the normalised mean of the pieces.
"""
from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*")


def text_chunks(text: str, max_chars: int) -> list[str]:
    """Pieces of ``text`` of at most ``max_chars`` each, cut at the widest boundary that fits."""
    text = text.strip()
    if len(text) <= max_chars:
        return [text]
    units: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        for sentence in _SENTENCE_END.split(para):
            units.extend(sentence[i : i + max_chars] for i in range(0, len(sentence), max_chars) if sentence.strip())
    chunks, current = [], ""
    for unit in units:
        if current and len(current) + 1 + len(unit) > max_chars:
            chunks.append(current)
            current = unit
        else:
            current = f"{current} {unit}" if current else unit
    if current:
        chunks.append(current)
    return chunks


def pooled_embeddings(texts: list[str], encode: Callable[[list[str]], np.ndarray], max_chars: int) -> np.ndarray:
    """One L2-normalised row per text: the mean of its chunks' embeddings (one encode call for all chunks)."""
    pieces, owner = [], []
    for i, text in enumerate(texts):
        chunks = text_chunks(text, max_chars)
        pieces.extend(chunks)
        owner.extend([i] * len(chunks))
    emb = np.asarray(encode(pieces), dtype=np.float32)
    emb /= np.clip(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12, None)
    out = np.zeros((len(texts), emb.shape[1]), dtype=np.float32)
    np.add.at(out, np.asarray(owner), emb)
    return out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
