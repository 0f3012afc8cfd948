"""Tell English from Chinese text.

Only two languages matter for the four query directions, so a CJK-character ratio over prose
(code blocks stripped, since Chinese skills are full of English code) is enough and costs
microseconds per skill.
"""
from __future__ import annotations

import re

_CODE_BLOCK = re.compile(r"```.*?(```|$)", re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")

#: share of CJK characters among (CJK characters + Latin words) above which text counts as Chinese
ZH_THRESHOLD = 0.3


def strip_code(text: str) -> str:
    return _INLINE_CODE.sub(" ", _CODE_BLOCK.sub(" ", text))


def cjk_share(text: str) -> float:
    prose = strip_code(text)
    cjk = len(_CJK.findall(prose))
    latin = len(_LATIN_WORD.findall(prose))
    return cjk / (cjk + latin) if cjk + latin else 0.0


def detect_language(text: str) -> str:
    """Return ``'zh'`` or ``'en'``; text with neither script counts as English."""
    return "zh" if cjk_share(text) > ZH_THRESHOLD else "en"


def count_length(text: str, language: str) -> int:
    """Length in the unit of the generation constraint: words for English, CJK characters for Chinese."""
    if language == "zh":
        return len(_CJK.findall(text))
    return len(text.split())
