"""Quality of the rejection-taxonomy rules against a hand-labelled set of SKIP rationales.

``tests/data/skip_rationales.jsonl`` holds rationales written and labelled by hand by meaning
(English and Chinese). Run with ``-s`` to see the per-class precision/recall table.
"""
import json
from collections import Counter
from pathlib import Path

import pytest

from skill_assets.lib.taxonomy.rules import RULES, TAXONOMY_CLASSES, match_rules

DATA = Path(__file__).resolve().parents[2] / "data" / "skip_rationales.jsonl"
MIN_ITEMS = 150
MIN_MICRO_F1 = 0.9


def _load() -> list[dict]:
    with DATA.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def items() -> list[dict]:
    return _load()


def _scores(items: list[dict]):
    tp, fp, fn = Counter(), Counter(), Counter()
    misses = []
    for it in items:
        pred = match_rules(it["rationale"]).label
        if pred == it["label"]:
            tp[pred] += 1
        else:
            fp[pred] += 1
            fn[it["label"]] += 1
            misses.append((it["label"], pred, it["rationale"]))
    return tp, fp, fn, misses


def test_dataset_is_well_formed(items):
    assert len(items) >= MIN_ITEMS
    assert len({it["rationale"] for it in items}) == len(items), "duplicate rationales"
    for it in items:
        assert set(it) == {"rationale", "label", "language"}
        assert it["label"] in TAXONOMY_CLASSES
        assert it["language"] in ("en", "zh")
    covered = {(it["label"], it["language"]) for it in items}
    for label in TAXONOMY_CLASSES:
        assert (label, "en") in covered and (label, "zh") in covered, label


def test_micro_f1_over_labelled_set(items):
    tp, fp, fn, misses = _scores(items)
    support = Counter(it["label"] for it in items)
    print(f"\n{'class':<30}{'n':>5}{'P':>8}{'R':>8}{'F1':>8}")
    for label in TAXONOMY_CLASSES:
        p = tp[label] / (tp[label] + fp[label]) if tp[label] + fp[label] else 0.0
        r = tp[label] / (tp[label] + fn[label]) if tp[label] + fn[label] else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        print(f"{label:<30}{support[label]:>5}{p:>8.3f}{r:>8.3f}{f:>8.3f}")
    # single-label multiclass with "unknown" as a class: micro-P = micro-R = micro-F1 = accuracy
    micro_p = sum(tp.values()) / (sum(tp.values()) + sum(fp.values()))
    micro_r = sum(tp.values()) / (sum(tp.values()) + sum(fn.values()))
    micro_f1 = 2 * micro_p * micro_r / (micro_p + micro_r)
    print(f"micro-F1 = {micro_f1:.3f} over {len(items)} items")
    for gold, pred, text in misses:
        print(f"  MISS gold={gold} pred={pred}: {text}")
    assert micro_f1 >= MIN_MICRO_F1


@pytest.mark.parametrize("rule", RULES, ids=[r.rule_id for r in RULES])
def test_no_rule_matches_the_empty_string(rule):
    pattern = rule.compiled()
    assert pattern.search("") is None
    assert pattern.fullmatch("") is None
    # nor a string of blanks/punctuation only
    assert pattern.search("  。，.  ") is None
