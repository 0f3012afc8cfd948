"""The shipped model: rebuilt byte for byte from its data by one command, and round-tripped without pickle."""
from collections import Counter

import numpy as np

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.taxonomy.fitting import fit_shipped
from skill_assets.lib.taxonomy.labelled import labelled_rationales
from skill_assets.lib.taxonomy.model import MODEL_PATH, RationaleModel, load_model
from skill_assets.lib.taxonomy.settling import reasoning_text


def test_the_shipped_model_is_what_its_data_rebuilds():
    rebuilt, figures = fit_shipped(labelled_rationales())
    assert rebuilt.to_bytes() == MODEL_PATH.read_bytes(), "rerun python -m skill_assets.lib.taxonomy.fitting"
    assert figures["rows"] == sum(r.split != "test" for r in labelled_rationales())


def test_the_model_never_saw_the_test_split():
    fitted = [r for r in labelled_rationales() if r.split in ("train", "dev")]
    assert load_model().fitted_on == digest("\n".join(f"{r.source}\t{r.label}\t{r.rationale}" for r in fitted))[:12]


def test_bytes_round_trip_to_the_same_probabilities():
    model = load_model()
    again = RationaleModel.from_bytes(model.to_bytes())
    texts = [reasoning_text(t) for t in ("Two PDF mergers, pick one.", "一个面向新手，一个面向专家，但其实是平台不同。")]
    assert np.allclose(model.probabilities(texts), again.probabilities(texts))
    assert again.version == model.version and again.floor == model.floor


def test_the_card_says_what_it_was_fitted_on():
    card = MODEL_PATH.with_name("MODEL_CARD.md").read_text(encoding="utf-8")
    model = load_model()
    assert model.version in card and model.fitted_on in card and f"floor {model.floor}" in card
    counts = Counter(r.source for r in labelled_rationales() if r.split != "test")
    assert "| curated |" in card and "| written |" in card and counts["curated"] and counts["written"]
