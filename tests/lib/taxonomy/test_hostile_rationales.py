"""Fuzz: hostile SKIP rationales and LLM answers through the rejection taxonomy (issue 31, finding 5).

A rationale is a generator's answer, untrusted text. Every case is a 1 MB input; no exception may
escape and the work must be linear in the input. No wall-clock time is asserted: each case runs
under a 120 s timeout, which the quadratic patterns this replaced overran by far (10,000 spaces took
5.9 s, 40,000 took 87.6 s; 40,000 newlines ran past 100 s), while a linear reading takes seconds.
The cap (``MAX_RATIONALE_CHARS``) bounds the work on real calls, so the second test lifts it: the
patterns themselves must stay linear, or a quadratic one would hide under the cap.
"""
from __future__ import annotations

import re
from re import _parser as pattern_parser  # private, but the one place that knows a pattern's widest match

import pytest
from hostile_inputs import MB, RATIONALES, repeated

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.taxonomy import settling
from skill_assets.lib.taxonomy.classify import classify_rationale, classify_rationales, settled_rule_label
from skill_assets.lib.taxonomy.llm_fallback import answers_fallback, llm_messages, parse_llm_label, rationale_key
from skill_assets.lib.taxonomy.rules import TAXONOMY_CLASSES, match_rules
from skill_assets.lib.taxonomy.settling import _DISMISSED_AFTER, _NEGATION_BEFORE, reasoning_text


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", sorted(RATIONALES))
def test_hostile_rationales_are_classified_never_raise(case):
    """The public calls on a 1 MB rationale: a label, a prompt, a key; nothing raises."""
    text = RATIONALES[case](MB)
    (label,) = classify_rationales([text], fallback=answers_fallback({}))
    assert label.label in TAXONOMY_CLASSES
    assert match_rules(text).label in TAXONOMY_CLASSES
    assert len(llm_messages(text)[1]["content"]) <= settling.MAX_RATIONALE_CHARS + 20
    assert re.fullmatch(r"[0-9a-f]{16}", rationale_key(text))
    assert parse_llm_label(text) in (*TAXONOMY_CLASSES, None)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", sorted(RATIONALES))
def test_reading_a_rationale_is_linear_past_the_cap(case, monkeypatch):
    """The patterns themselves, on the whole 1 MB: markup stripped, turns found, every rule hit checked
    for negation within its clause."""
    monkeypatch.setattr(settling, "MAX_RATIONALE_CHARS", None, raising=False)  # [:None] reads it all
    text = RATIONALES[case](MB)
    reasoning = reasoning_text(text)
    assert 0 <= reasoning.settled_from <= len(reasoning.text)
    label = settled_rule_label(reasoning)
    assert label is None or label.label in TAXONOMY_CLASSES


def test_a_rationale_over_the_cap_is_read_on_its_first_cap_characters():
    head = repeated("filler ", settling.MAX_RATIONALE_CHARS)
    text = head + "The two skills are redundant."
    assert "redundant" not in reasoning_text(text).text
    assert classify_rationale(text) == classify_rationale(head)
    assert llm_messages(text) == llm_messages(head)


@pytest.mark.parametrize("pattern", [_NEGATION_BEFORE, _DISMISSED_AFTER], ids=["before", "after"])
def test_the_clause_window_holds_every_negation_match(pattern):
    """A span's clause is read within CLAUSE_WINDOW characters: a negation match and the character its
    word boundary looks at must fit, or cutting the clause would change a verdict."""
    widest = pattern_parser.parse(pattern.pattern, pattern.flags).getwidth()[1]
    assert widest + 1 <= settling.CLAUSE_WINDOW


def test_a_negation_far_from_a_clause_end_is_still_seen():
    filler = repeated("word ", 5_000)
    r = reasoning_text(filler + "they are not really redundant at all " + filler)
    start = r.text.index("redundant")
    assert r.denies(start, start + len("redundant"))
    r = reasoning_text(filler + "they are redundant " + filler)
    start = r.text.index("redundant")
    assert not r.denies(start, start + len("redundant"))


@pytest.mark.parametrize("answer, label", [
    ("[" * 100_000, None),  # json raised RecursionError
    ('{"label": ' + "[" * 100_000, None),
    ("1" * 5_000, None),  # an int over Python's 4,300-digit limit: json raised ValueError
    ('{"label": "domain_mismatch"}' + "\x00" * 1_000, "domain_mismatch"),
    ("\ud800" * 1_000 + "audience_mismatch", "audience_mismatch"),
])
def test_hostile_llm_answers_never_raise(answer, label):
    assert parse_llm_label(answer) == label


def test_a_rationale_key_is_the_same_for_valid_text_and_defined_for_a_lone_surrogate():
    assert rationale_key("两者面向的人群完全不同。") == digest("两者面向的人群完全不同。")[:16]
    assert rationale_key("a\ud800") != rationale_key("a\udfff")
