"""The labelled rationales: enough hand-written ones per class and language, and a fixed, stratified split."""
from collections import Counter

from skill_assets.lib.taxonomy.labelled import curated_rationales, labelled_rationales, written_rationales
from skill_assets.lib.taxonomy.scoring import CLASSES


def test_at_least_fifty_written_per_class_in_both_languages():
    written = written_rationales()
    per_class = Counter(r.label for r in written)
    assert sum(per_class[c] for c in CLASSES) >= 400
    for c in CLASSES:
        assert per_class[c] >= 50
        assert {r.lang for r in written if r.label == c} == {"en", "zh"}
    assert len({r.rationale for r in written}) == len(written)


def test_every_class_has_test_rows_in_both_languages_from_both_sources():
    for source in (curated_rationales(), written_rationales()):
        test = {(r.label, r.lang) for r in source if r.split == "test"}
        assert {(c, lang) for c in CLASSES for lang in ("en", "zh")} <= test


def test_the_split_is_stable_and_disjoint():
    first, second = labelled_rationales(), labelled_rationales()
    assert first == second
    curated = curated_rationales()
    assert len(curated) == 210
    by_key = {}
    for r in curated:
        assert by_key.setdefault(r.key, r.split) == r.split
    shares = Counter(r.split for r in curated)
    assert 0.2 < shares["test"] / 210 < 0.3 and shares["dev"] > 20
