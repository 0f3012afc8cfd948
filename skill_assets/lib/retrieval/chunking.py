"""Long requests keep their signal: text past an encoder's window is split and scored piece by piece.

A task statement of thousands of characters would lose everything after the first 256 tokens of
a bi-encoder, and one mean embedding of all its parts is dominated by whatever it says most. It
is cut at paragraph, then sentence, then hard boundaries into pieces of at most ``max_chars``;
every piece is embedded and a skill's score is its best similarity to any piece (MaxP, as in
passage-level document ranking), so the one paragraph that names the problem is enough.
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


def chunk_embeddings(texts: list[str], encode: Callable[[list[str]], np.ndarray], max_chars: int,
                     group: int | None = None, checkpoint: Callable[[], None] = lambda: None
                     ) -> tuple[np.ndarray, list[int]]:
    """(L2-normalised embeddings of every piece of every text, the first piece's row of each text).

    The pieces are encoded ``group`` at a time (None: all in one call), ``checkpoint()`` before each call: a request
    of 20,000 characters is twenty bi-encoder windows, about a second of encoding, and a caller whose client has gone
    stops at the next call instead of after the whole signal (issue 31)."""
    pieces, starts = [], []
    for text in texts:
        starts.append(len(pieces))
        pieces.extend(text_chunks(text, max_chars))
    step = group or max(len(pieces), 1)
    parts = []
    for start in range(0, max(len(pieces), 1), step):  # no texts: one call with none, as the encoder answers it
        checkpoint()
        parts.append(np.asarray(encode(pieces[start:start + step]), dtype=np.float32))
    emb = np.vstack(parts)
    return emb / np.clip(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12, None), starts


def best_piece(sims: np.ndarray, starts: list[int]) -> np.ndarray:
    """(texts, pool) from (pieces, pool) similarities: each text's best piece (a one-piece text as is)."""
    return sims if len(starts) == len(sims) else np.maximum.reduceat(sims, starts, axis=0)
