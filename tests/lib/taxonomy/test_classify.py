"""``classify_rationale``: settled rules first, then the model with its confidence floor, then an optional fallback."""
from dataclasses import replace

import pytest

from skill_assets.lib.taxonomy.classify import classify_rationale, classify_rationales, shipped_model
from skill_assets.lib.taxonomy.rules import TaxonomyLabel


@pytest.mark.parametrize("text, not_label", [
    ("At first glance these look redundant, but one tracks bird migrations and the other audits payroll taxes.",
     "function_redundant"),
    ("They are not redundant; one writes Dart for Flutter apps and the other writes Kotlin for native Android.",
     "function_redundant"),
    ("It's not a platform issue, since both run on Linux; the real problem is one is a Perl helper and one a "
     "Haskell helper.", "platform_exclusive"),
    ("说它们功能重复并不准确，它们做的事情完全不一样：问题在于两者所处领域没有任何交集。", "function_redundant"),
    ("这里不是技术栈不同的问题，而是一个讲中医养生、一个讲编译器优化，主题毫不相干。", "language_ecosystem_mismatch"),
    ("与其说是强行拼凑，不如说两者压根不在一个领域：一个管理宠物医院预约，一个做卫星轨道计算。", "forced_chaining"),
])
def test_a_class_named_to_be_set_aside_is_not_the_label(text, not_label):
    assert classify_rationale(text).label != not_label


@pytest.mark.parametrize("text, label", [
    ("At first glance these look redundant, but they cover unrelated domains.", "domain_mismatch"),
    ("不是功能重复的问题，而是平台互斥：一个只在 iOS 上，一个只在安卓上。", "platform_exclusive"),
])
def test_the_settled_reason_wins_by_rule(text, label):
    result = classify_rationale(text)
    assert (result.label, result.method, result.confidence) == (label, "rule", 1.0)
    assert result.rule_id and result.matched_span in text


def test_a_rule_miss_goes_to_the_model_with_its_provenance():
    text = "Whoever is tuning the oven temperature for bread is not, in the same breath, writing a Go gRPC server."
    result = classify_rationale(text)
    model = shipped_model()
    assert result.rule_id is None and result.matched_span == ""
    assert result.method in ("model", "none") and result.model_version == model.version
    assert 0.0 < result.confidence <= 1.0
    assert (result.method == "model") == (result.confidence >= model.floor)


def test_below_the_confidence_floor_the_label_stays_unknown():
    text = "The two skills would hardly ever meet in one request, I think."
    model = shipped_model()
    low, high = replace(model, floor=1.01), replace(model, floor=0.0)
    (unsure,), (sure,) = classify_rationales([text], model=low), classify_rationales([text], model=high)
    assert (unsure.label, unsure.method) == ("unknown", "none") and unsure.confidence == sure.confidence
    assert sure.method == "model" and sure.label != "unknown"


@pytest.mark.parametrize("text", [
    "The weather was lovely, so I sat outside for a while.",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
    "I like turtles.",
    "今天天气不错，我去买了杯咖啡。",
    "周末打算去爬山。",
])
def test_an_off_topic_rationale_stays_unknown_under_the_shipped_floor(text):
    """The shipped floor is calibrated on dev to leave something unknown: off-topic text gets no class."""
    model = shipped_model()
    (result,) = classify_rationales([text])
    assert (result.label, result.method, result.rule_id) == ("unknown", "none", None)
    assert 0.0 <= result.confidence < model.floor and result.model_version == model.version


def test_the_shipped_floor_is_no_formality():
    """Calibrated on dev (coverage >= 0.90, best F1), the floor sits well above chance for eight classes."""
    assert 0.3 <= shipped_model().floor <= 0.9


def test_rules_only_without_a_model():
    (result,) = classify_rationales(["Two hammers for one nail."], model=None)
    assert result == TaxonomyLabel("unknown", None, "", method="none", confidence=0.0)


def test_the_fallback_is_asked_only_for_what_stays_unknown():
    asked = []

    def fallback(texts):
        asked.extend(texts)
        return ["audience_mismatch" for _ in texts]

    out = classify_rationales(["They serve different audiences.", "Meh."], model=replace(shipped_model(), floor=1.01),
                              fallback=fallback)
    assert asked == ["Meh."]
    assert (out[0].method, out[1].method, out[1].label) == ("rule", "llm", "audience_mismatch")


def test_reasonless_rationales_stay_unknown():
    assert classify_rationale("").label == "unknown"
    assert classify_rationale("SKIP").label == "unknown"
