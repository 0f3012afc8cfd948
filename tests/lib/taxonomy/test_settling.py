"""What a rationale settles on: markup stripped, the conclusion after its last turn, denied mentions."""
import pytest

from skill_assets.lib.taxonomy.settling import reasoning_text


@pytest.mark.parametrize("raw, settled", [
    ("thought: one paints, the other routes packets.\ndecision: SKIP", "one paints, the other routes packets"),
    ("<thought>Both format code.</thought>\n<decision>SKIP</decision>\n<reason>One is Python, one is Go.</reason>",
     "One is Python, one is Go"),
    ('{"decision": "SKIP", "reason": "两套生态无法共用"}', "两套生态无法共用"),
    ("**Decision:** SKIP\n**Reason:** two README generators.", "two README generators"),
])
def test_generator_markup_is_stripped_and_the_reason_is_the_conclusion(raw, settled):
    assert reasoning_text(raw).settled.strip() == settled


@pytest.mark.parametrize("text, conclusion", [
    ("At first glance these look redundant, but they serve different subjects.", "they serve different subjects"),
    ("I considered a shared use. However, the platforms exclude each other.", "the platforms exclude each other"),
    ("说它们功能重复并不准确，问题在于两者所处领域没有交集。", "两者所处领域没有交集"),
    ("不是技术栈的问题，而是受众不同。", "受众不同"),
])
def test_the_conclusion_starts_after_the_last_turn(text, conclusion):
    assert reasoning_text(text).settled.strip() == conclusion


@pytest.mark.parametrize("text, span, denied", [
    ("They are not redundant at all.", "redundant", True),
    ("It isn't a question of different platforms here.", "different platforms", True),
    ("Different platforms is not the issue.", "Different platforms", True),
    ("They are redundant.", "redundant", False),
    ("A request would never need both because they are redundant.", "redundant", False),
    ("这里不是技术栈不同的问题。", "技术栈不同", True),
    ("说它们功能重复并不准确。", "功能重复", True),
    ("两者功能重复。", "功能重复", False),
])
def test_negated_and_dismissed_mentions_are_denied(text, span, denied):
    r = reasoning_text(text)
    start = r.text.index(span)
    assert r.denies(start, start + len(span)) is denied
