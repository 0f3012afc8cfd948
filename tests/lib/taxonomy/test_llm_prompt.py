"""The LLM fallback's prompt and answer parsing (the calls themselves: tests/defs/taxonomy/test_llm_fallback.py)."""
import pytest

from skill_assets.lib.taxonomy.classify import classify_rationales, shipped_model
from skill_assets.lib.taxonomy.llm_fallback import (
    CLASSES,
    answers_fallback,
    llm_messages,
    parse_llm_label,
    rationale_key,
)


@pytest.mark.parametrize("answer, label", [
    ('{"label": "audience_mismatch"}', "audience_mismatch"),
    ("platform_exclusive", "platform_exclusive"),
    ("The class is: Function redundant.", "function_redundant"),
    ('{"label": "unknown"}', None),
    ("domain_mismatch or forced_chaining", None),  # more than one class: no answer
    ("I cannot tell.", None),
    ("", None),
    (None, None),
])
def test_an_answer_names_one_class_or_none(answer, label):
    assert parse_llm_label(answer) == label


def test_the_prompt_names_every_class_and_carries_the_rationale():
    system, user = llm_messages("  两者面向的人群完全不同。 ")
    assert all(c in system["content"] for c in CLASSES) and "set aside" in system["content"]
    assert user["content"].startswith("Rationale:\n两者面向的人群完全不同。\n")


def test_stored_answers_label_only_what_stays_unknown_and_send_nothing():
    texts = ["They serve different audiences.", "The weather is nice today and I am not sure what to write."]
    out = classify_rationales(texts, fallback=answers_fallback({rationale_key(t): "granularity_mismatch"
                                                                for t in texts}))
    assert (out[0].method, out[0].label) == ("rule", "audience_mismatch")
    assert (out[1].method, out[1].label) == ("llm", "granularity_mismatch")
    assert out[1].model_version == shipped_model().version and out[1].confidence < shipped_model().floor
