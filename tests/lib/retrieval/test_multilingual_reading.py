"""The multilingual signal is read as the fusion it serves was fitted: a fusion fitted before each skill's description
was read alone names no reading in its card and is routed with the document cosine alone, as its weights were
learned; the shipped fusion names the mean of the two readings; a card naming a reading this code does not know is
refused at construction. Over the real USE encoder and the small bilingual pool."""
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
from skill_assets.lib.retrieval.multilingual import (  # noqa: E402
    LEGACY_READING,
    READING,
    READING_CARD_KEY,
    signal_version,
)
from skill_assets.lib.retrieval.pools import Skill  # noqa: E402

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
    assert engine.signal_versions()["multilingual"] == signal_version(engine.multilingual.fingerprint, READING)


def test_a_fusion_fitted_before_descriptions_were_read_is_routed_with_the_document_alone(tmp_path):
    model, _ = shipped_router()
    engine = _engine(tmp_path, {k: v for k, v in model.card.items() if k != READING_CARD_KEY})
    assert engine.multilingual_reading == LEGACY_READING
    readings = engine.pool.multilingual.readings(QUERIES)
    scores = engine.signal_scores(QUERIES, signals=("multilingual",))
    assert np.array_equal(scores["multilingual"], readings.document)
    assert engine.signal_versions()["multilingual"] == engine.multilingual.fingerprint  # the key runs had then


def test_a_card_naming_an_unknown_reading_is_refused_at_construction(tmp_path):
    model, cut = shipped_router()
    with pytest.raises(ValueError, match="unknown multilingual reading 'telepathy'"):
        Engine(bundled_minilm(), cache_dir=tmp_path / "cache",
               fitted=FittedRouting(replace(model, card={**model.card, READING_CARD_KEY: "telepathy"}), cut))
