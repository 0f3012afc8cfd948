"""The text a model sees for a skill: ``name | description | body`` with per-field caps.

Both papers route on the full document (the body carries most of the signal) but cap fields so
a 30K-token skill does not dominate a batch; defaults are SkillRouter's encoder caps.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TextCaps:
    description_chars: int = 300
    body_chars: int = 2500


ENCODER_CAPS = TextCaps(description_chars=300, body_chars=2500)
RERANKER_CAPS = TextCaps(description_chars=500, body_chars=2000)
QUERY_CHARS = 1500


def skill_document(name: str, description: str, body: str, caps: TextCaps = ENCODER_CAPS) -> str:
    return f"{name} | {description[: caps.description_chars]} | {body[: caps.body_chars]}"
