"""Leakage checks of meaning-only requests: a request must name its need, never its skill.

A meaning-only request (the R3-Skill setting) describes the user's situation in their own words. It
is worthless as training or test data if it can be matched by surface form, so each request is
checked against the skills it is labelled with:

- **name**: the skill's name, squashed of case, spaces, hyphens and underscores, is not a substring
  of the squashed request (the query audit's rule);
- **proper nouns**: no product, library or brand name from the skill's name or description. A word
  counts as one when it is CamelCase or carries a digit (outside ``GENERIC_ACRONYMS``), or is written
  capitalised in the middle of sentences across the pool's descriptions at least ``PROPER_SHARE`` of
  the time (``proper_nouns``: "Docker" and "AWS" are, "Review" is not, nor "NOT" written for emphasis);
- **copied phrases**: no run of ``WORD_RUN`` Latin words, nor of ``CJK_RUN`` Chinese characters,
  shared with the skill's name, description and body;
- **script**: a Chinese request is mostly CJK (``MIN_CJK_SHARE`` of its CJK characters + Latin
  words), so it cannot lean on English names an English skill shares; an English one is English.

A translation of a name cannot be caught by rule; the writing guide forbids it and the second pass
reads for it.

A long task statement (``long_task_problems``, issue 33) keeps the name, copied-phrase and script rules but not
the proper nouns: a real ticket names the tools it runs on, and the task is judged on whether it states each
need in its own words, not on avoiding a product. It must also be as long as the tasks it stands for
(``LONG_WORDS`` English words, ``LONG_CJK`` Chinese characters) and need ``LONG_K`` skills.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from skill_assets.lib.common.hashing import squash
from skill_assets.lib.common.language import count_length, detect_language, script_counts

WORD_RUN = 6
CJK_RUN = 10
MIN_CJK_SHARE = 0.75
PROPER_SHARE = 0.8
#: a long task statement's length (English words, Chinese CJK characters) and how many skills it needs
LONG_WORDS, LONG_CJK, LONG_K = (150, 600), (300, 1200), (2, 6)
#: acronyms that name a kind of thing, not a product: meaning-only requests may use them
GENERIC_ACRONYMS = frozenset("""
AI API APIS CLI CPU CSS CSV DB DNS FAQ GPU GUI HTML HTTP HTTPS ID IDE IO IP JSON KPI LLM ML OS PDF PNG JPG JPEG
QA README REST SDK SEO SQL SSH SSL TLS TODO UI UX URL URLS USB VM XML YAML MVP CEO CTO PR PRS CI CD OKR OKRS ROI
B2B B2C SaaS SMS TTS PII GDPR HR CRM ERP ETL
""".split())
#: words capitalised by English spelling, not because they name a product
ORDINARY_CAPITALISED = frozenset("""
english chinese japanese korean french german spanish italian portuguese russian arabic hindi word i
monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
september october november december
""".split())

_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9+#.'-]*[A-Za-z0-9+#]|[A-Za-z]")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*|[(\"'`]\s*)$")


@dataclass(frozen=True)
class SkillText:
    """What a request is checked against: one labelled skill."""

    id: str
    name: str
    description: str
    body: str


def _mid_sentence_words(text: str) -> Iterable[tuple[str, bool]]:
    """(word, written capitalised) for each Latin word not at a sentence start."""
    for m in _LATIN.finditer(text):
        if not _SENTENCE_START.search(text[max(0, m.start() - 3):m.start()]) and m.start() > 0:
            word = m.group().strip(".'-")
            if word:
                yield word.lower(), word[0].isupper()


def proper_nouns(descriptions: Iterable[str]) -> frozenset[str]:
    """Lower-cased words written capitalised mid-sentence in at least ``PROPER_SHARE`` of their uses."""
    caps, total = Counter(), Counter()
    for text in descriptions:
        for word, capitalised in _mid_sentence_words(text):
            total[word] += 1
            caps[word] += capitalised
    return frozenset(w for w, n in total.items()
                     if len(w) > 1 and caps[w] / n >= PROPER_SHARE and w not in ORDINARY_CAPITALISED)


def _marked_names(text: str) -> set[str]:
    """Words that are names by their own shape: CamelCase or with a digit, unless a generic acronym."""
    out = set()
    for m in _LATIN.finditer(text):
        word = m.group().strip(".'-")
        if len(word) < 2 or word.upper() in GENERIC_ACRONYMS:
            continue
        camel = any(c.isupper() for c in word[1:]) and any(c.islower() for c in word)
        if camel or any(c.isdigit() for c in word):
            out.add(word.lower())
    return out


def _words(text: str) -> list[str]:
    return [m.group().lower().strip(".'-") for m in _LATIN.finditer(text)]


def _runs(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def request_problems(query: str, lang: str, skills: Iterable[SkillText], proper: frozenset[str],
                     product_names: bool = True) -> list[str]:
    """Every rule the request breaks against its labelled ``skills``, one line each; empty when clean.

    ``product_names=False`` leaves out the proper-noun rule (``proper`` is then unused): long task statements."""
    problems = []
    if detect_language(query) != lang:
        problems.append(f"request reads as {detect_language(query)}, labelled {lang}")
    cjk, latin = script_counts(query)
    if lang == "zh" and cjk + latin and cjk / (cjk + latin) < MIN_CJK_SHARE:
        problems.append(f"Chinese request is {cjk / (cjk + latin):.0%} CJK, needs {MIN_CJK_SHARE:.0%}")
    squashed, words = squash(query), set(_words(query))
    q_word_runs = _runs(_words(query), WORD_RUN)
    q_cjk_runs = _runs(_CJK.findall(query), CJK_RUN)
    for skill in skills:
        if squash(skill.name) and squash(skill.name) in squashed:
            problems.append(f"names skill {skill.id} ({skill.name!r})")
        if product_names:
            head = f"{skill.name} {skill.description}"
            head_names = {w for w in _words(skill.description) if w in proper} | _marked_names(head)
            head_names |= {w for w in re.split(r"[-_\s]+", skill.name.lower()) if w in proper}
            if leaked := sorted(head_names & words):
                problems.append(f"uses names from {skill.id}: {', '.join(leaked)}")
        text = f"{skill.name}\n{skill.description}\n{skill.body}"
        copied = q_word_runs & _runs(_words(text), WORD_RUN)
        if copied:
            problems.append(f"copies {WORD_RUN} words of {skill.id}: {' '.join(sorted(copied)[0])!r}")
        copied_cjk = q_cjk_runs & _runs(_CJK.findall(text), CJK_RUN)
        if copied_cjk:
            problems.append(f"copies {CJK_RUN} characters of {skill.id}: {''.join(sorted(copied_cjk)[0])!r}")
    return problems


def long_task_problems(query: str, lang: str, skills: Sequence[SkillText]) -> list[str]:
    """Every rule a long task statement breaks against the ``skills`` it needs, one line each; empty when clean:
    its length and skill count, then ``request_problems`` without the proper-noun rule."""
    problems = []
    low, high = LONG_CJK if lang == "zh" else LONG_WORDS
    if not low <= (length := count_length(query, lang)) <= high:
        unit = "Chinese characters" if lang == "zh" else "words"
        problems.append(f"{length} {unit}, a long task has {low}-{high}")
    if not LONG_K[0] <= len(skills) <= LONG_K[1]:
        problems.append(f"needs {len(skills)} skills, a long task needs {LONG_K[0]}-{LONG_K[1]}")
    return problems + request_problems(query, lang, skills, frozenset(), product_names=False)
