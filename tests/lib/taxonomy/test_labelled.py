"""The labelled rationales: enough hand-written ones per class and language, a fixed, stratified train/dev split,
and a test split that is the held-out file alone."""
import json
from collections import Counter

import pytest

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.taxonomy.labelled import (
    curated_rationales,
    heldout_rationales,
    labelled_rationales,
    written_rationales,
)
from skill_assets.lib.taxonomy.scoring import CLASSES


def test_at_least_fifty_written_per_class_in_both_languages():
    written = written_rationales()
    per_class = Counter(r.label for r in written)
    assert sum(per_class[c] for c in CLASSES) >= 400
    for c in CLASSES:
        assert per_class[c] >= 50
        assert {r.lang for r in written if r.label == c} == {"en", "zh"}
    assert len({r.rationale for r in written}) == len(written)


def test_the_test_split_is_the_heldout_file_alone():
    heldout = heldout_rationales()
    assert {r.split for r in heldout} == {"test"} and {r.source for r in heldout} == {"heldout"}
    assert {r.split for r in curated_rationales() + written_rationales()} == {"train", "dev"}
    assert [r for r in labelled_rationales() if r.split == "test"] == sorted(
        heldout, key=lambda r: (r.source, r.split, r.label, digest(r.key)))


def test_the_heldout_set_covers_every_class_in_both_languages_and_shares_no_text():
    heldout = heldout_rationales()
    per = Counter((r.label, r.lang) for r in heldout)
    assert len(heldout) >= 80 and all(per[(c, lang)] >= 5 for c in CLASSES for lang in ("en", "zh"))
    fitted = {r.rationale for r in labelled_rationales() if r.split != "test"}
    assert not fitted & {r.rationale for r in heldout}


def test_a_file_that_names_its_split_keeps_it(tmp_path):
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(
        {"rationale": f"text {i}", "label": "domain_mismatch", "lang": "en"}) + "\n" for i in range(10)))
    (tmp_path / "b.jsonl").write_text(json.dumps(
        {"rationale": "later", "label": "domain_mismatch", "lang": "en", "split": "train"}) + "\n")
    rows = written_rationales(tmp_path)
    assert Counter(r.split for r in rows if r.rationale != "later") == {"dev": 4, "train": 6}
    assert [r.split for r in rows if r.rationale == "later"] == ["train"]
    (tmp_path / "c.jsonl").write_text(json.dumps(
        {"rationale": "sneaky", "label": "domain_mismatch", "lang": "en", "split": "test"}) + "\n")
    with pytest.raises(ValueError, match="heldout_test.jsonl"):
        written_rationales(tmp_path)


def test_the_split_is_stable_and_disjoint():
    first, second = labelled_rationales(), labelled_rationales()
    assert first == second
    curated = curated_rationales()
    assert len(curated) == 210
    by_key = {}
    for r in curated:
        assert by_key.setdefault(r.key, r.split) == r.split
    shares = Counter(r.split for r in curated)
    assert 0.35 < shares["dev"] / 210 < 0.45  # the old 15 % dev part and the old 25 % test part
