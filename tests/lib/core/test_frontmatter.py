import pytest

from skill_assets.lib.core.frontmatter import ParsedSkill, SkillParseError, parse_skill_markdown


def test_parses_bom_crlf_tabs_and_keeps_extra_keys():
    text = (
        "\ufeff---\r\n"
        "name: docker-compose-debugging\r\n"
        "description: Debug failing docker compose stacks\r\n"
        "metadata:\r\n"
        "\tversion: 2\r\n"
        "\towner: infra\r\n"
        "tags: [docker, compose]\r\n"
        "---\r\n"
        "\r\n"
        "# Docker Compose Debugging\r\n"
        "Run `docker compose logs` first.\r\n"
    )
    parsed = parse_skill_markdown(text)
    assert isinstance(parsed, ParsedSkill)
    assert parsed.name == "docker-compose-debugging"
    assert parsed.description == "Debug failing docker compose stacks"
    assert parsed.body == "# Docker Compose Debugging\nRun `docker compose logs` first."
    assert "\r" not in parsed.body
    assert parsed.extra == {"metadata": {"version": 2, "owner": "infra"}, "tags": ["docker", "compose"]}
    assert "name" not in parsed.extra and "description" not in parsed.extra


def test_yaml_document_end_marker_closes_front_matter_and_lists_are_joined():
    text = "---\nname:  spaced name  \ndescription:\n  - first part\n  - second part\n...\nBody text\n"
    parsed = parse_skill_markdown(text)
    assert parsed.name == "spaced name"
    assert parsed.description == "first part second part"
    assert parsed.body == "Body text"
    assert parsed.extra == {}


def test_old_mac_line_endings_are_normalised():
    parsed = parse_skill_markdown("---\rname: a\rdescription: b\r---\rline one\rline two\r")
    assert parsed.body == "line one\nline two"


@pytest.mark.parametrize(
    "text, code",
    [
        ("name: x\ndescription: y\n---\nbody\n", "missing_front_matter"),
        ("", "missing_front_matter"),
        ("# Title\n---\nname: x\n---\nbody", "missing_front_matter"),
        ("---\nname: x\ndescription: y\nbody without a closing fence\n", "unterminated_front_matter"),
        ("---\nname: [unclosed\ndescription: y\n---\nbody\n", "invalid_yaml"),
        ("---\n- just\n- a list\n---\nbody\n", "invalid_yaml"),
        ("---\njust a scalar\n---\nbody\n", "invalid_yaml"),
        ("---\n---\nbody\n", "invalid_yaml"),
        ("---\ndescription: y\n---\nbody\n", "missing_name"),
        ("---\nname: '   '\ndescription: y\n---\nbody\n", "missing_name"),
        ("---\nname: x\n---\nbody\n", "missing_description"),
        ("---\nname: x\ndescription:\n---\nbody\n", "missing_description"),
        ("---\nname: x\ndescription: y\n---\n", "empty_body"),
        ("---\nname: x\ndescription: y\n---\n  \n\t\n\n", "empty_body"),
    ],
)
def test_each_parse_error_code(text, code):
    with pytest.raises(SkillParseError) as info:
        parse_skill_markdown(text)
    assert info.value.code == code
    assert info.value.message
    assert isinstance(info.value, ValueError)


def test_name_checked_before_description():
    with pytest.raises(SkillParseError) as info:
        parse_skill_markdown("---\nother: 1\n---\nbody\n")
    assert info.value.code == "missing_name"


def test_invalid_yaml_message_is_single_line():
    with pytest.raises(SkillParseError) as info:
        parse_skill_markdown("---\nname: x\n  bad: [indent\ndescription: y\n---\nbody\n")
    assert info.value.code == "invalid_yaml"
    assert "\n" not in info.value.message
    assert info.value.message.startswith("front matter is not valid YAML")


def test_repeated_front_matter_is_parsed_once_and_no_caller_shares_its_extra():
    from skill_assets.lib.core import frontmatter

    frontmatter._HEADER_CACHE.clear()
    text = "---\nname: fork\ndescription: same header in every mirror\nversion: 2\n---\nbody {}\n"
    first = parse_skill_markdown(text.format(1))
    first.extra["version"] = 99  # a caller changing its copy
    second = parse_skill_markdown(text.format(2))
    assert second.extra == {"version": 2} and second.body == "body 2" and len(frontmatter._HEADER_CACHE) == 1
    # nested values are mutable: such a front matter is parsed every time, never cached
    nested = "---\nname: n\ndescription: d\nmetadata:\n  tags: [a]\n---\nbody\n"
    parse_skill_markdown(nested).extra["metadata"]["tags"].append("b")
    assert parse_skill_markdown(nested).extra == {"metadata": {"tags": ["a"]}}
    assert len(frontmatter._HEADER_CACHE) == 1
    # an error is never cached away: the same bad header fails the same way each time
    for _ in range(2):
        with pytest.raises(SkillParseError) as info:
            parse_skill_markdown("---\nname: x\n---\nbody\n")
        assert info.value.code == "missing_description"
    # the limits and the description requirement are part of what a cached result answers
    assert parse_skill_markdown("---\nname: x\n---\nbody\n", require_description=False).description == ""
