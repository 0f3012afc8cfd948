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


#: UTF-8 byte → b"a" for an ASCII letter, b" " for anything else (every byte of a non-ASCII character)
_LETTER_MASK = bytes(ord("a") if (65 <= i <= 90 or 97 <= i <= 122) else ord(" ") for i in range(256))
#: the lead bytes of every UTF-8 sequence in ``_CJK``'s ranges (U+3400–U+9FFF, U+F900–U+FAFF)
_CJK_LEAD_BYTES = tuple(bytes([b]) for b in (*range(0xE3, 0xEA), 0xEF))


def script_counts(text: str) -> tuple[int, int]:
    """(CJK characters, Latin words) in the first SAMPLE_CHARS characters of prose.

    A Latin word is a maximal run of [A-Za-z] (what ``_CJK_OR_WORD`` finds between CJK characters),
    counted as the run starts in the text's UTF-8 bytes mapped to letter / not-letter; CJK characters
    are searched for only when a byte that can start one is there. At ingest this runs 300K times,
    and token lists were most of its cost.
    """
    prose = strip_code(text[: SAMPLE_CHARS * 2])[:SAMPLE_CHARS]
    data = prose.encode("utf-8", "surrogatepass")  # a query may hold a lone surrogate
    letters = data.translate(_LETTER_MASK)
    latin = letters.count(b" a") + letters.startswith(b"a")
    if prose.isascii() or not any(lead in data for lead in _CJK_LEAD_BYTES):
        return 0, latin
    return len(_CJK.findall(prose)), latin


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
