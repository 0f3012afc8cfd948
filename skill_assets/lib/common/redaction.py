"""One redaction for every secret (the LLM key, the Label Studio key): any piece of it long enough to matter.

Servers echo request headers in error bodies, whole or cut: a message cut before it was redacted
leaves a prefix, an echo of ``…{key[-14:]}`` or a log that wraps leaves a tail or a middle piece.
A plain replace of the whole key, or a search from its first characters, misses those; so every
run of ``MIN_SECRET_RUN`` or more characters of the key, wherever it starts in the key, is
replaced. Standard library only: the review environment's side of the Label Studio bridge imports it.
"""
from __future__ import annotations

#: a run of the key this long is redacted wherever it appears (shorter runs are too common to be the key)
MIN_SECRET_RUN = 6
REDACTED = "[REDACTED]"


def redact(text: str, secret: str | None) -> str:
    """``text`` with every run of ``MIN_SECRET_RUN``+ characters of ``secret`` (whole, prefix, tail, middle) replaced.

    Leftmost first, each run as long as it stays a piece of the key, so two copies of the key side
    by side are two replacements.
    """
    if not secret or not text:
        return text
    n = min(MIN_SECRET_RUN, len(secret))
    pieces = {secret[i:i + n] for i in range(len(secret) - n + 1)}
    out, i, j = [], 0, 0
    while j <= len(text) - n:
        if text[j:j + n] not in pieces:
            j += 1
            continue
        k = j + n
        while k < len(text) and text[j:k + 1] in secret:
            k += 1
        out += [text[i:j], REDACTED]
        i = j = k
    return "".join(out) + text[i:]
