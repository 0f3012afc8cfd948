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


#: what the bi-encoder reads of a request, as a fusion's card names it (``DENSE_READING_CARD_KEY``). The English MiniLM
#: reads Chinese poorly: alone it found the right English skill first for 14.3 % of the 91 dev requests written in
#: Chinese for one, and 36.3 % reading each skill's better cosine to the request or to its words' English glosses
#: (``glossary``). That is ``DENSE_READING``, what every fusion fitted now reads: the shipped router refit over it
#: ranked the 365 dev requests at NDCG@10 0.759 -> 0.769 (paired 95 % interval +0.002 to +0.017) and FC@10 0.764 ->
#: 0.784 (+0.005 to +0.036), those in Chinese for English skills FC@10 60.4 -> 67.0, Hit@1 unchanged (71.5 -> 71.8
#: pooled). A card without the key was fitted over the request alone (``LEGACY_DENSE_READING``) and is routed so.
DENSE_READING = "request|glosses"
LEGACY_DENSE_READING = "request"
DENSE_READINGS = (LEGACY_DENSE_READING, DENSE_READING)
DENSE_READING_CARD_KEY = "dense_reading"


def signal_version(fingerprint: str, reading: str, legacy: str) -> str:
    """What produced a signal's scores: its encoder's fingerprint, and the reading where it is not the ``legacy`` one
    every score was made by before readings were named (so a run, an abstention or a card of then keeps its key)."""
    return fingerprint if reading == legacy else f"{fingerprint}|{reading}"


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
