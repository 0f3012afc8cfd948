"""The router's signals and the text each one reads of a skill.

- ``bm25``: lexical, over name, description and the first ``LEXICAL_BODY_CHARS`` of the body
  (Chinese as character bigrams);
- ``dense``: the bi-encoder (newest trained embedder, else the bundled MiniLM) over the capped
  document it was trained on (``skill_text.ENCODER_CAPS``);
- ``multilingual``: USE multilingual v3, the mean of the request's cosine to name, description and the head of the
  body and its cosine to the description alone (``multilingual``);
- ``gloss``: BM25 over the same index, of the request with the English dictionary glosses of its Chinese words
  added (``glossary``): a Chinese request's words matched against English skills. A request with no Chinese scores
  as under ``bm25``.

Every signal scores the whole pool for a request; ``fusion`` turns those scores into one ranking.
"""
from __future__ import annotations

from skill_assets.lib.common.language import detect_language
from skill_assets.lib.core.skill_text import ENCODER_CAPS, TextCaps, skill_document
from skill_assets.lib.retrieval.pools import Skill

SIGNALS = ("bm25", "dense", "multilingual", "gloss")
#: signals scored over the lexical (BM25) index
LEXICAL_SIGNALS = ("bm25", "gloss")
#: what the multilingual encoder reads. Hit@1 of USE alone on the provisional curated train + dev
#: requests: description (300 chars) only 0.462, description (1,000) only 0.447, description (1,000)
#: + body head (600) 0.511
MULTILINGUAL_CAPS = TextCaps(description_chars=1000, body_chars=600)
#: body characters BM25 reads. Hit@1 on the provisional curated train + dev requests (bigram tokens):
#: 1,200 → 0.544, 2,500 → 0.559, 5,000 → 0.553, 30,000 → 0.520 (a long body's tail is examples and
#: reference tables that match everything); jieba words instead of bigrams: 0.505 (zh2zh 0.79 vs 0.92)
LEXICAL_BODY_CHARS = 2_500


def dense_document(skill: Skill) -> str:
    """The capped document the bi-encoders are trained on."""
    return skill_document(skill.name, skill.description, skill.body, ENCODER_CAPS)


def lexical_document(skill: Skill) -> str:
    return skill_document(skill.name, skill.description, skill.body, TextCaps(100_000, LEXICAL_BODY_CHARS))


def multilingual_document(skill: Skill, caps: TextCaps = MULTILINGUAL_CAPS) -> str:
    """What the multilingual encoder reads (a fusion's card may name shorter ``caps``: ``Engine``)."""
    return skill_document(skill.name, skill.description, skill.body, caps)


def multilingual_description(skill: Skill, caps: TextCaps = MULTILINGUAL_CAPS) -> str:
    """The multilingual encoder's second reading of a skill: its description alone (to the same cap as in the
    document), what the skill does without the name and body a near miss shares words with; the name where the
    description is empty."""
    return skill.description[: caps.description_chars] or skill.name


def skill_language(skill: Skill) -> str:
    """en/zh of the skill's prose, as ``raw_skills.language`` (description + body). A re-index keeps it by the skill's
    text (``index_builder.LexicalValues``), so an unchanged skill is not detected again."""
    return detect_language(f"{skill.description}\n{skill.body}")
