"""Fuzz: generated hostile SKILL.md front matter through the one reader of ingest and the router (issue 31).

Each case (``FRONT_MATTER`` in bench/hostile_texts.py) is built at 1 MB, which the front-matter
cap refuses before YAML reads it, and at 90,000 characters, under that cap, so YAML itself reads the
hostile text. The parser must return a skill or refuse it with one of its own reason codes in one
line; nothing else escapes, and read from a file the catch-all ``parse_error`` (the name of an
exception the parser let through) never appears. No wall-clock time is asserted: each case runs under
a 120 s timeout, which YAML's base-60 integers overran (a 1 MB ``1:1:…:0`` took 83 s); the per-input
seconds are measured by bench/parser_bounds.py.
"""
from __future__ import annotations

import pytest
from hostile_inputs import FRONT_MATTER, MB, repeated, write

from skill_assets.lib.core.frontmatter import (
    DEFAULT_LIMITS,
    MAX_INT_CHARS,
    ParsedSkill,
    SkillParseError,
    parse_skill_markdown,
)
from skill_assets.lib.core.skill_files import read_skill

#: every reason the reader gives a file it refuses for its text (the file-system reasons aside)
TEXT_REASONS = {"missing_front_matter", "unterminated_front_matter", "invalid_yaml", "front_matter_too_deep",
                "front_matter_too_large", "yaml_alias_cycle", "missing_name", "missing_description", "empty_body",
                "not_utf8", "binary"}
#: under the front-matter cap: YAML reads the whole hostile header
UNDER_CAP = DEFAULT_LIMITS.max_header_chars - 10_000
SIZES = {"1mb": MB, "under_cap": UNDER_CAP}


def parsed_or_reason(parse, *args) -> str:
    """'ok' for a skill, else the reason code, after checking the refusal is one line."""
    try:
        skill = parse(*args)
    except SkillParseError as exc:
        assert exc.code in TEXT_REASONS, exc.code
        assert exc.message and "\n" not in exc.message
        return exc.code
    parsed = skill[1] if isinstance(skill, tuple) else skill
    assert isinstance(parsed, ParsedSkill) and parsed.name and parsed.body
    return "ok"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("case", sorted(FRONT_MATTER))
def test_hostile_front_matter_is_a_skill_or_one_reason(case, size):
    parsed_or_reason(parse_skill_markdown, FRONT_MATTER[case](SIZES[size]))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", sorted(FRONT_MATTER))
def test_a_hostile_skill_file_gets_the_parsers_own_reason(case, tmp_path):
    """Through ``read_skill`` (size cap, NULs, UTF-8, then the front matter) as ingest and pools call it;
    a lone surrogate is written as the bytes it would be (not UTF-8)."""
    text = FRONT_MATTER[case](UNDER_CAP)
    path = write(tmp_path / "s" / "SKILL.md", text.encode("utf-8", "surrogatepass"))
    parsed_or_reason(read_skill, path, tmp_path, 2 * MB)


def test_front_matter_over_the_cap_is_refused_before_yaml_reads_it():
    text = "---\nname: n\ndescription: d\n" + repeated("k: v\n", DEFAULT_LIMITS.max_header_chars) + "---\nbody\n"
    with pytest.raises(SkillParseError) as refused:
        parse_skill_markdown(text)
    assert refused.value.code == "front_matter_too_large" and "not parsed" in refused.value.message


def test_a_long_base_60_integer_is_refused_before_it_is_built():
    """YAML 1.1 reads '1:1:…:0' as one base-60 integer, built by big-integer arithmetic quadratic in its length."""
    with pytest.raises(SkillParseError) as refused:
        parse_skill_markdown("---\nname: n\ndescription: d\nm: " + repeated("1:", MAX_INT_CHARS + 2) + "0\n---\nb\n")
    assert refused.value.code == "invalid_yaml" and f"more than {MAX_INT_CHARS}" in refused.value.message
    short = parse_skill_markdown("---\nname: n\ndescription: d\nm: 1:30\n---\nb\n")
    assert short.extra == {"m": 90}  # a short one is still YAML's integer


@pytest.mark.parametrize("value, why", [
    ("2024-13-45", "month must be in 1..12"),
    ("1" * 5_000, "an integer of 5000 characters"),
])
def test_a_value_yaml_cannot_build_is_invalid_yaml(value, why):
    """A well-formed date or integer that Python refuses raised ValueError out of the parser."""
    with pytest.raises(SkillParseError) as refused:
        parse_skill_markdown(f"---\nname: n\ndescription: d\nm: {value}\n---\nb\n")
    assert refused.value.code == "invalid_yaml" and why in refused.value.message


def test_a_lone_surrogate_in_decoded_text_is_not_utf8():
    """Text decoded from a JSON escape can hold a lone surrogate, which libyaml cannot take."""
    with pytest.raises(SkillParseError) as refused:
        parse_skill_markdown("---\nname: n\ndescription: d\u00e9\ud800\n---\nb\n")
    assert refused.value.code == "not_utf8"
