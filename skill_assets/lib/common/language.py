"""Tell English from Chinese text.

Only two languages matter for the four query directions, so a CJK-character ratio over prose
(code stripped, since Chinese skills are full of English code) is enough: it costs one regex pass
over at most ``SAMPLE_CHARS`` characters, which matters at 100K files.
"""
from __future__ import annotations

import re

_INLINE_CODE = re.compile(r"`[^`\n]*`")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK_OR_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[A-Za-z]+")

#: query direction -> (skill language, query language), as in R3-Skill
DIRECTIONS: dict[str, tuple[str, str]] = {
    "en2en": ("en", "en"),
    "en2zh": ("en", "zh"),
    "zh2en": ("zh", "en"),
    "zh2zh": ("zh", "zh"),
}

#: share of CJK characters among (CJK characters + Latin words) above which text counts as Chinese
ZH_THRESHOLD = 0.3
#: prose characters inspected: a skill's language is settled long before its 30K-character tail
SAMPLE_CHARS = 4000


def strip_code(text: str) -> str:
    """Drop fenced code blocks (every other segment between ``` fences) and inline code."""
    return _INLINE_CODE.sub(" ", " ".join(text.split("```")[::2]))


def script_counts(text: str) -> tuple[int, int]:
    """(CJK characters, Latin words) in the first SAMPLE_CHARS characters of prose."""
    tokens = _CJK_OR_WORD.findall(strip_code(text[: SAMPLE_CHARS * 2])[:SAMPLE_CHARS])
    cjk = sum(1 for t in tokens if len(t) == 1 and t >= "\u3400")
    return cjk, len(tokens) - cjk


def language_of_counts(cjk: int, latin: int) -> str:
    return "zh" if cjk + latin and cjk / (cjk + latin) > ZH_THRESHOLD else "en"


def detect_language(text: str) -> str:
    """Return ``'zh'`` or ``'en'``; text with neither script counts as English."""
    return language_of_counts(*script_counts(text))


def count_length(text: str, language: str) -> int:
    """Length in the unit of the generation constraint: words for English, CJK characters for Chinese."""
    if language == "zh":
        return len(_CJK.findall(text))
    return len(text.split())
