"""Signals are read as the fusion they serve was fitted. The multilingual signal: a fusion fitted before each skill's
description was read alone names no reading in its card and is routed with the document cosine alone, as its weights
were learned; the shipped fusion names the mean of the two readings. The bi-encoder: the shipped fusion reads a
request with Chinese in it by the better of its own and its glosses' cosine, an older card the request alone. A card
naming a reading this code does not know is refused at construction. Over the real encoders (USE, the bundled MiniLM)
and the small bilingual pool."""
from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest
from bilingual_pool import REQUESTS, SKILLS

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from skill_assets.lib.models.bundled_models import bundled_minilm  # noqa: E402
from skill_assets.lib.retrieval.defaults import shipped_router  # noqa: E402
from skill_assets.lib.retrieval.engine import Engine  # noqa: E402
from skill_assets.lib.retrieval.engine_config import FittedRouting  # noqa: E402
from skill_assets.lib.retrieval.glossary import gloss  # noqa: E402
from skill_assets.lib.retrieval.multilingual import LEGACY_READING, READING, READING_CARD_KEY  # noqa: E402
from skill_assets.lib.retrieval.pools import Skill  # noqa: E402
from skill_assets.lib.retrieval.signals import (  # noqa: E402
    DENSE_READING,
    DENSE_READING_CARD_KEY,
    LEGACY_DENSE_READING,
    signal_version,
)

POOL = [Skill(sid, *fields) for sid, fields in SKILLS.items()]
QUERIES = [query for _, query, _, _ in REQUESTS[:6]]


def _engine(tmp_path, card: dict) -> Engine:
    model, cut = shipped_router()
    engine = Engine(bundled_minilm(), cache_dir=tmp_path / "cache",
                    fitted=FittedRouting(replace(model, card=card), cut))
    engine.index(POOL)
    return engine


def test_the_shipped_fusion_reads_the_mean_of_document_and_description(tmp_path):
    model, _ = shipped_router()
    assert model.card[READING_CARD_KEY] == READING
    engine = _engine(tmp_path, model.card)
    readings = engine.pool.multilingual.readings(QUERIES)
    scores = engine.signal_scores(QUERIES, signals=("multilingual",))
    assert np.allclose(scores["multilingual"], (readings.document + readings.description) / 2, atol=1e-6)
    assert not np.allclose(readings.document, readings.description)  # the two readings differ
    assert engine.signal_versions()["multilingual"] == signal_version(engine.multilingual.fingerprint, READING,
                                                                      LEGACY_READING)


def test_a_fusion_fitted_before_descriptions_were_read_is_routed_with_the_document_alone(tmp_path):
    model, _ = shipped_router()
    engine = _engine(tmp_path, {k: v for k, v in model.card.items() if k != READING_CARD_KEY})
    assert engine.multilingual_reading == LEGACY_READING
    readings = engine.pool.multilingual.readings(QUERIES)
    scores = engine.signal_scores(QUERIES, signals=("multilingual",))
    assert np.array_equal(scores["multilingual"], readings.document)
    assert engine.signal_versions()["multilingual"] == engine.multilingual.fingerprint  # the key runs had then


def test_the_shipped_fusion_reads_a_chinese_request_also_by_its_glosses_and_an_older_one_by_the_request_alone(
        tmp_path):
    model, _ = shipped_router()
    assert model.card[DENSE_READING_CARD_KEY] == DENSE_READING
    engine = _engine(tmp_path, model.card)
    chinese = [q for q in QUERIES if gloss(q)]
    assert chinese and len(chinese) < len(QUERIES)  # both kinds of request
    own = engine.dense.scores(QUERIES, engine.pool.dense)
    glossed = engine.dense.scores([gloss(q) or q for q in QUERIES], engine.pool.dense)
    read = engine.signal_scores(QUERIES, signals=("dense",))["dense"]
    for i, query in enumerate(QUERIES):  # an English request reads as itself; a Chinese one by the better of the two
        want = np.maximum(own[i], glossed[i]) if gloss(query) else own[i]
        assert np.allclose(read[i], want, atol=1e-6), query
    assert any(not np.allclose(read[i], own[i]) for i, q in enumerate(QUERIES) if gloss(q))
    older = _engine(tmp_path, {k: v for k, v in model.card.items() if k != DENSE_READING_CARD_KEY})
    assert older.dense_reading == LEGACY_DENSE_READING
    assert np.allclose(older.signal_scores(QUERIES, signals=("dense",))["dense"], own, atol=1e-6)
    assert older.signal_versions()["dense"] == older.dense.fingerprint


@pytest.mark.parametrize("key", [READING_CARD_KEY, DENSE_READING_CARD_KEY])
def test_a_card_naming_an_unknown_reading_is_refused_at_construction(tmp_path, key):
    model, cut = shipped_router()
    with pytest.raises(ValueError, match="unknown (multilingual|dense) reading 'telepathy'"):
        Engine(bundled_minilm(), cache_dir=tmp_path / "cache",
               fitted=FittedRouting(replace(model, card={**model.card, key: "telepathy"}), cut))
