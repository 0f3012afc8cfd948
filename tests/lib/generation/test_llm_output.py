import pytest

from skill_assets.lib.generation.llm_output import GeneratorDecision, parse_generator_output


def test_plain_json_write():
    d = parse_generator_output('{"thought": "fits", "decision": "WRITE", "query": "  Set up CI for my repo  ", "reason": "x"}')
    assert d == GeneratorDecision("WRITE", query="Set up CI for my repo", reason="", thought="fits", parse_error="")


def test_fenced_json_skip_with_prose_around():
    text = 'Sure! Here is my answer:\n```json\n{"decision": "skip", "reason": "The two skills are unrelated."}\n```\nThanks'
    d = parse_generator_output(text)
    assert d.decision == "SKIP"
    assert d.reason == "The two skills are unrelated."
    assert d.query == ""


def test_json_after_non_json_braces():
    d = parse_generator_output('Template {name} ignored. {"decision": "WRITE", "query": "q1"}')
    assert (d.decision, d.query) == ("WRITE", "q1")


def test_tagged_text():
    text = "<thought>They chain well</thought>\n<decision> WRITE </decision>\n<query>\nDeploy my app and then\nmonitor it\n</query>"
    d = parse_generator_output(text)
    assert d.decision == "WRITE"
    assert d.query == "Deploy my app and then\nmonitor it"
    assert d.thought == "They chain well"


def test_tags_are_case_insensitive():
    d = parse_generator_output("<DECISION>write</DECISION><Query>do the thing</Query>")
    assert (d.decision, d.query) == ("WRITE", "do the thing")


def test_decision_lines():
    d = parse_generator_output("Thought: forced combination\nDecision: SKIP\nReason: no natural task uses both\n")
    assert d.decision == "SKIP"
    assert d.reason == "no natural task uses both"
    assert d.thought == "forced combination"


def test_bold_markdown_and_fullwidth_colon_lines():
    d = parse_generator_output("**Decision**: **WRITE**\n**Query**: 帮我清洗这份数据")
    assert (d.decision, d.query) == ("WRITE", "帮我清洗这份数据")
    d = parse_generator_output("决定如下\nDecision：SKIP\nReason：领域无关")
    assert (d.decision, d.reason) == ("SKIP", "领域无关")


def test_skip_without_reason_uses_thought_else_invalid():
    d = parse_generator_output('{"decision": "SKIP", "thought": "artificial pairing"}')
    assert (d.decision, d.reason, d.thought) == ("SKIP", "artificial pairing", "artificial pairing")
    d = parse_generator_output('{"decision": "SKIP"}')
    assert d.decision == "INVALID" and "SKIP without" in d.parse_error


@pytest.mark.parametrize(
    "text",
    [
        '{"decision": "MAYBE", "query": "q"}',
        "<decision>PERHAPS</decision><query>q</query>",
        "Decision: yes\nQuery: q",
    ],
)
def test_invalid_decision(text):
    d = parse_generator_output(text)
    assert d.decision == "INVALID"
    assert "not WRITE or SKIP" in d.parse_error
    assert d.query == ""


@pytest.mark.parametrize(
    "text",
    [
        '{"decision": "WRITE"}',
        '{"decision": "WRITE", "query": null, "thought": "t"}',
        '{"decision": "WRITE", "query": "   "}',
        "<decision>WRITE</decision>",
        "Decision: WRITE\nQuery:   \n",
    ],
)
def test_write_without_query_is_invalid(text):
    d = parse_generator_output(text)
    assert d.decision == "INVALID"
    assert d.parse_error == "WRITE without a query"


@pytest.mark.parametrize("text", [None, "", "   \n\t"])
def test_empty_is_invalid(text):
    d = parse_generator_output(text)
    assert d.decision == "INVALID" and d.parse_error == "empty response"


@pytest.mark.parametrize("text", ["I refuse to answer.", '{"answer": "WRITE"}', "```json\n[1, 2]\n```"])
def test_unreadable_is_invalid(text):
    d = parse_generator_output(text)
    assert d.decision == "INVALID"
    assert d.parse_error.startswith("no JSON object")


@pytest.mark.parametrize("text", [
    '{"decision":"SKIP","reason": ' + "[" * 3000,
    '{"decision":"SKIP","reason": ' + "{" * 50_000,
    "```" * 20_000,
    "<decision>" * 20_000,
    "\n" * 100_000 + "decision",
    " " * 100_000 + "Decision: SKIP",
    "{" * 190_000,
    "x" * 300_000,
])
def test_hostile_answers_are_invalid_records_never_exceptions(text):
    """Each once raised (RecursionError) or ran in time quadratic in the answer; the suite's timeout is the guard."""
    d = parse_generator_output(text)
    assert d.decision == "INVALID" and d.parse_error
