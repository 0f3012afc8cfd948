"""The bare rule set (``match_rules``): first hit wins on the raw text; ``test_classify.py`` covers the entry point."""
import re

import pytest

from skill_assets.lib.taxonomy.rules import RULES, RULESET_VERSION, TAXONOMY_CLASSES, match_rules

CASES = [
    ("domain_mismatch", "en", "These skills cover unrelated domains: cooking recipes and kernel debugging."),
    ("domain_mismatch", "zh", "这两个技能的领域完全不同，一个是烹饪一个是内核调试。"),
    ("forced_chaining", "en", "Any request using both would be contrived."),
    ("forced_chaining", "zh", "把这两个技能放在一起很牵强。"),
    ("language_ecosystem_mismatch", "en", "They target different programming languages and toolchains."),
    ("language_ecosystem_mismatch", "zh", "两个技能的技术栈不同，很难一起使用。"),
    ("function_redundant", "en", "The two skills are redundant with each other."),
    ("function_redundant", "zh", "两个技能功能重叠，用户只需要其中一个。"),
    ("platform_exclusive", "en", "The platforms are mutually incompatible for one user."),
    ("platform_exclusive", "zh", "这两个工具的平台互斥，用户不会同时使用。"),
    ("audience_mismatch", "en", "They serve different audiences entirely."),
    ("audience_mismatch", "zh", "两个技能的目标用户不同。"),
    ("granularity_mismatch", "en", "One is a low-level helper while the other is a high-level planning tool."),
    ("granularity_mismatch", "zh", "两个技能的粒度差别太大。"),
    ("business_layer_mismatch", "en", "One is executive strategy work, the other is day-to-day operations."),
    ("business_layer_mismatch", "zh", "一个是公司战略规划，另一个是日常执行工作。"),
]


def test_every_class_except_unknown_has_an_en_and_zh_case():
    covered = {(label, lang) for label, lang, _ in CASES}
    for label in TAXONOMY_CLASSES:
        if label != "unknown":
            assert (label, "en") in covered and (label, "zh") in covered


@pytest.mark.parametrize("label, lang, rationale", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_rationale_resolves_to_class(label, lang, rationale):
    result = match_rules(rationale)
    assert result.label == label
    assert result.rule_id is not None and result.rule_id.endswith("." + lang)
    assert result.matched_span and result.matched_span in rationale


@pytest.mark.parametrize("rationale", ["", "Looks fine but I prefer not to.", "我觉得不太好。", "The weather is nice"])
def test_no_hit_is_unknown(rationale):
    result = match_rules(rationale)
    assert (result.label, result.rule_id, result.matched_span, result.method) == ("unknown", None, "", "none")


def test_priority_redundancy_beats_forced():
    r = "Combining them is forced because the two skills are redundant."
    assert match_rules(r).label == "function_redundant"
    assert match_rules("Combining them is forced.").label == "forced_chaining"
    zh = "强行组合，而且两者功能重复。"
    assert match_rules(zh).label == "function_redundant"


def test_priority_more_specific_before_domain():
    r = "Different domains, and the audiences differ as well."
    assert match_rules(r).label == "audience_mismatch"


def test_matching_is_case_insensitive():
    assert match_rules("THESE ARE UNRELATED DOMAINS").label == "domain_mismatch"


def test_rules_are_well_formed():
    ids = [r.rule_id for r in RULES]
    assert len(ids) == len(set(ids))
    assert len({r.priority for r in RULES}) == len(RULES)
    assert {r.label for r in RULES} == set(TAXONOMY_CLASSES) - {"unknown"}
    for r in RULES:
        assert isinstance(r.compiled(), re.Pattern)
    assert re.fullmatch(r"[0-9a-f]{12}", RULESET_VERSION)
