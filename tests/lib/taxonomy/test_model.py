"""The shipped model: rebuilt byte for byte from its data by one command, and round-tripped without pickle."""
from collections import Counter

import numpy as np

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.taxonomy.fitting import MIN_COVERAGE, calibrate_on_dev, choose_floor, fit_shipped
from skill_assets.lib.taxonomy.labelled import labelled_rationales
from skill_assets.lib.taxonomy.model import MODEL_PATH, RationaleModel, load_model
from skill_assets.lib.taxonomy.settling import reasoning_text


def test_the_shipped_model_is_what_its_data_rebuilds():
    """A refit is byte-identical to itself, and to the shipped model up to the optimiser's last digits.

    lbfgs' iterates depend on the BLAS kernels of the CPU and on SciPy's version, so a refit on another
    machine moves coefficients by about 0.01 (of 4); everything the model decides with must come back the
    same: vocabulary, idf, classes, temperature, confidence floor, the data hash, and the label of every
    labelled rationale. Digests, not bytes, are compared: pytest's diff of two 1 MB byte strings runs for hours."""
    rebuilt, figures = fit_shipped(labelled_rationales())
    again, _ = fit_shipped(labelled_rationales())
    assert digest(rebuilt.to_bytes().hex()) == digest(again.to_bytes().hex())
    assert figures["rows"] == sum(r.split != "test" for r in labelled_rationales())
    shipped = load_model()
    hint = "rerun python -m skill_assets.lib.taxonomy.fitting"
    assert rebuilt.classes == shipped.classes and rebuilt.vectorizer.vocabulary_ == shipped.vectorizer.vocabulary_, hint
    assert np.array_equal(rebuilt.vectorizer.idf_, shipped.vectorizer.idf_), hint
    assert (rebuilt.temperature, rebuilt.floor, rebuilt.fitted_on) == (shipped.temperature, shipped.floor,
                                                                        shipped.fitted_on), hint
    assert np.abs(rebuilt.coef - shipped.coef).max() < 0.05 and np.abs(rebuilt.intercept - shipped.intercept).max() < 0.05
    texts = [reasoning_text(r.rationale) for r in labelled_rationales()]
    ours, theirs = rebuilt.probabilities(texts), shipped.probabilities(texts)
    assert np.array_equal(ours.argmax(axis=1), theirs.argmax(axis=1)) and np.abs(ours - theirs).max() < 0.02


def test_the_model_never_saw_the_test_split():
    fitted = [r for r in labelled_rationales() if r.split in ("train", "dev")]
    assert load_model().fitted_on == digest("\n".join(f"{r.source}\t{r.label}\t{r.rationale}" for r in fitted))[:12]


def test_bytes_round_trip_to_the_same_probabilities():
    model = load_model()
    again = RationaleModel.from_bytes(model.to_bytes())
    texts = [reasoning_text(t) for t in ("Two PDF mergers, pick one.", "一个面向新手，一个面向专家，但其实是平台不同。")]
    assert np.allclose(model.probabilities(texts), again.probabilities(texts))
    assert again.version == model.version and again.floor == model.floor


def test_the_floor_is_set_on_dev_with_enough_coverage():
    """Temperature and floor come from the dev predictions of a train-only fit: the floor keeps dev coverage
    >= 0.90 and no other such floor has a better dev F1."""
    rows = labelled_rationales()
    temperature, dev = calibrate_on_dev([r for r in rows if r.split == "train"], [r for r in rows if r.split == "dev"])
    chosen = choose_floor(dev)
    model = load_model()
    assert (model.temperature, model.floor) == (temperature, chosen.floor)
    assert chosen.coverage >= MIN_COVERAGE and 0.0 < chosen.unknown_kept
    others = [dev.score(f) for f in np.round(np.arange(0.0, 0.96, 0.05), 2)]
    assert all(s.f1 <= chosen.f1 for s in others if s.coverage >= MIN_COVERAGE)
    assert dev.score(0.0).coverage == 1.0 or chosen.floor > 0


def test_the_card_says_what_it_was_fitted_on():
    card = MODEL_PATH.with_name("MODEL_CARD.md").read_text(encoding="utf-8")
    model = load_model()
    assert model.version in card and model.fitted_on in card and f"floor {model.floor}" in card
    counts = Counter(r.source for r in labelled_rationales() if r.split != "test")
    assert "| curated | dev |" in card and "| written | train |" in card and counts["curated"] and counts["written"]
    assert "heldout" not in counts and "(chosen)" in card
