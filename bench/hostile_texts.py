"""Generated hostile texts for the parsers of untrusted input: one set for the fuzz tests and the bench that times them.

Each table maps a case name to a builder of an input of about ``n`` characters, so the fuzz tests
(tests/lib/taxonomy/test_hostile_rationales.py, tests/lib/common/test_user_sql.py,
tests/lib/common/test_hostile_front_matter.py, tests/router/test_hostile_pools.py, through
tests/hostile_inputs.py) feed a parser the very inputs ``bench/parser_bounds.py`` times on it.
It lives beside the benches because benches do not import ``tests/`` (tests/test_layers.py).

- ``RATIONALES``: a generator's SKIP rationale (the rejection taxonomy);
- ``SQL``: a user's ``skill-assets sql`` file;
- ``FRONT_MATTER``: a SKILL.md, front matter and body;
- ``QUERY_FILES``: a ``route --queries`` JSONL file, whole.
"""
from __future__ import annotations

import json
import random
from collections.abc import Callable

#: the size of the generated hostile texts the parser fuzz tests feed (1 MB of characters)
MB = 1_000_000


def repeated(unit: str, n: int) -> str:
    """``unit`` repeated to exactly ``n`` characters."""
    return (unit * (n // len(unit) + 1))[:n]


def random_text(n: int, seed: int, surrogates: bool) -> str:
    """``n`` seeded random code points; lone surrogates kept only where ``surrogates``."""
    rng = random.Random(seed)
    points = [rng.randrange(0x110000) for _ in range(n)]
    return "".join(chr(p) if surrogates or not 0xD800 <= p < 0xE000 else "?" for p in points)


def sql_list(item: str, n: int) -> str:
    """A comma-separated list of ``item`` of about ``n`` characters."""
    return repeated(item + ",", n - 10) + "1"


def numbered(template: str, n: int) -> str:
    """``template`` formatted with 0, 1, 2, … until the text reaches ``n`` characters (distinct keys, ids)."""
    parts, size, i = [], 0, 0
    while size < n:
        part = template.format(i=i)
        parts.append(part)
        size, i = size + len(part), i + 1
    return "".join(parts)


def skill(header: str, body: str = "body\n") -> str:
    """A SKILL.md of ``header`` between fences, then ``body``."""
    return f"---\n{header}\n---\n{body}"


def query_line(query: str, qid: str = "q1") -> str:
    return json.dumps({"id": qid, "query": query}, ensure_ascii=False) + "\n"


Builders = dict[str, Callable[[int], str]]

RATIONALES: Builders = {
    "spaces": lambda n: repeated(" ", n),
    "newlines": lambda n: repeated("\n", n),
    "mixed_whitespace": lambda n: repeated(" \t\r\n\x0b\x0c\x1c\x85\xa0\u3000", n),
    "label_then_spaces": lambda n: "Decision" + repeated(" ", n) + ": SKIP",
    "label_then_stars": lambda n: "reason " + repeated("*", n) + " x",
    "newlines_then_decision": lambda n: repeated("\n", n) + "decision: SKIP\nreason: redundant",
    "decision_lines": lambda n: repeated("Decision: SKIP\n", n),
    "labels": lambda n: repeated("thought: reason: 理由： ", n),
    "brackets": lambda n: repeated("[", n),
    "braces": lambda n: repeated("{", n),
    "json_reason": lambda n: '{"decision": "SKIP", "reason": "' + repeated("they are redundant ", n) + '"}',
    "tags": lambda n: repeated("<reason>", n),
    "open_angles": lambda n: repeated("<a", n),
    "quotes": lambda n: repeated("\"'", n),
    "headings": lambda n: repeated("\n### ", n),
    "turns": lambda n: repeated("but however 但 ", n),
    "denied_hits": lambda n: repeated("not redundant ", n),
    "dismissed_hits": lambda n: repeated("different platforms is not the issue ", n),
    "languages": lambda n: repeated("python rust ", n),
    "strategy": lambda n: repeated("strategy operations ", n),
    "chinese": lambda n: repeated("不是平台不同而是受众不同 ", n),
    "nuls": lambda n: repeated("\x00", n),
    "lone_surrogates": lambda n: repeated("a\ud800 \udfff", n),
    "random_unicode": lambda n: random_text(n, 31, surrogates=True),
    "ordinary": lambda n: repeated("At first glance these look redundant, but one is for Python and the other "
                                   "for Go, so the ecosystems do not mix. ", n),
}

SQL: Builders = {
    "spaces": lambda n: repeated(" ", n),
    "newlines": lambda n: repeated("\n", n),
    "open_parens": lambda n: "SELECT " + repeated("(", n),
    "nested_parens": lambda n: "SELECT " + "(" * (n // 2) + "1" + ")" * (n // 2),
    "nested_calls": lambda n: "SELECT " + "abs(" * (n // 5) + "1" + ")" * (n // 5),
    "single_quotes": lambda n: repeated("'", n),
    "double_quotes": lambda n: repeated('"', n),
    "unterminated_string": lambda n: "SELECT '" + repeated("é", n),
    "unterminated_comment": lambda n: "SELECT 1 /* " + repeated("…", n),
    "keywords": lambda n: repeated("SELECT ", n),
    "statements": lambda n: repeated("SELECT 1;", n),
    "explains": lambda n: repeated("EXPLAIN SELECT 1;", n),
    "ascii_list": lambda n: "SELECT " + sql_list("1", n),
    "accented_list": lambda n: "SELECT " + sql_list("é", n),
    "chinese_literals": lambda n: "SELECT " + sql_list("'路由'", n),
    "emoji_list": lambda n: "SELECT " + sql_list("😀", n),
    "explained_list": lambda n: "EXPLAIN (FORMAT json) SELECT " + sql_list("é", n),
    "calls": lambda n: "SELECT " + sql_list("lower('x')", n),
    "refused_names_uncalled": lambda n: "SELECT " + sql_list("Query", n),  # every statement named: tokenised whole
    "explained_after_comment": lambda n: "EXPLAIN /* " + repeated("…", n) + " */ SELECT 1",
    "quoted_names": lambda n: "SELECT " + sql_list('"é""x"', n),
    "comment_then_query": lambda n: "-- " + repeated("哪个系统… ", n) + "\nSELECT 1",
    "nuls": lambda n: repeated("\x00", n),
    "query_then_nuls": lambda n: "SELECT 1" + repeated("\x00", n),
    "lone_surrogates": lambda n: "SELECT '" + repeated("\ud800", n) + "'",
    "random_unicode": lambda n: random_text(n, 12, surrogates=False),
    "random_unicode_surrogates": lambda n: random_text(n, 12, surrogates=True),
}

_NAMED = "name: n\ndescription: d\n"
FRONT_MATTER: Builders = {
    "fences": lambda n: repeated("---\n", n),
    "unclosed": lambda n: "---\n" + _NAMED + repeated("a: b\n", n),
    "spaces_then_fence": lambda n: "---\n" + repeated(" ", n) + "\n---\nbody\n",
    "blank_lines": lambda n: "---\n" + repeated("\n", n) + _NAMED + "---\nbody\n",
    "crlf": lambda n: "---\r\n" + repeated("\r\n", n) + "---\r\nbody\r\n",
    "carriage_returns": lambda n: "---\r" + repeated("\r", n),
    "bom": lambda n: repeated("\ufeff", n) + skill(_NAMED),
    "long_name": lambda n: skill("name: " + repeated("a", n) + "\ndescription: d"),
    "long_key": lambda n: skill(repeated("k", n) + ": v\n" + _NAMED),
    "many_keys": lambda n: skill(_NAMED + numbered("k{i}: v\n", n)),
    "duplicate_keys": lambda n: skill(_NAMED + repeated("k: v\n", n)),
    "list_items": lambda n: skill(_NAMED + "tags:\n" + repeated("- x\n", n)),
    "flow_items": lambda n: skill(_NAMED + "tags: [" + repeated("x, ", n) + "]"),
    "open_flow": lambda n: skill(_NAMED + "tags: " + repeated("[", n)),
    "nested_flow": lambda n: skill(_NAMED + "m: " + "[" * (n // 2) + "]" * (n // 2)),
    "nested_maps": lambda n: skill(_NAMED + "m: " + "{a: " * (n // 5) + "b" + "}" * (n // 5)),
    "indented_maps": lambda n: skill(_NAMED + "".join(" " * d + "a:\n" for d in range(int((2 * n) ** 0.5)))),
    "anchors": lambda n: skill(_NAMED + "a: &a x\n" + numbered("b{i}: *a\n", n)),
    "alias_list": lambda n: skill(_NAMED + "a: &a [x, y]\nb: [" + repeated("*a, ", n) + "]"),
    "undefined_aliases": lambda n: skill(_NAMED + "b: [" + repeated("*a, ", n) + "]"),
    "tags": lambda n: skill(_NAMED + "m: " + repeated("!t ", n) + "x"),
    "python_tags": lambda n: skill(_NAMED + numbered("k{i}: !!python/object/apply:os.system ['true']\n", n)),
    "double_quotes": lambda n: skill('name: "' + repeated('\\"', n)),
    "escapes": lambda n: skill(_NAMED + 'm: "' + repeated("\\x00\\ud800\\U0010ffff", n) + '"'),
    "block_scalar": lambda n: skill(_NAMED + "m: |\n" + repeated("  line\n", n)),
    "comments": lambda n: skill(repeated("# comment\n", n) + _NAMED),
    "long_integer": lambda n: skill(_NAMED + "m: " + repeated("1", n)),
    "integers": lambda n: skill(_NAMED + "m: [" + repeated("9" * 5000 + ", ", n) + "]"),
    "bad_dates": lambda n: skill(_NAMED + numbered("d{i}: 2024-13-45\n", n)),
    "sexagesimal": lambda n: skill(_NAMED + "m: " + repeated("1:", n) + "0"),
    "floats": lambda n: skill(_NAMED + "m: [" + repeated("1e999, ", n) + "]"),
    "directives": lambda n: "---\n" + repeated("%YAML 1.1\n", n) + "---\nbody\n",
    "documents": lambda n: "---\n" + _NAMED + repeated("...\n---\n", n),
    "long_body": lambda n: skill(_NAMED, repeated("A body line of the skill.\n", n)),
    "nuls": lambda n: skill(_NAMED + "m: " + repeated("\x00", n)),
    "lone_surrogates": lambda n: skill(_NAMED + "m: " + repeated("\ud800", n)),
    "random_unicode": lambda n: skill(random_text(n, 7, surrogates=False)),
    "random_unicode_surrogates": lambda n: skill(random_text(n, 7, surrogates=True)),
}

QUERY_FILES: Builders = {
    "brackets": lambda n: repeated("[", n),
    "braces": lambda n: repeated("{", n),
    "nested_in_record": lambda n: '{"id": "q1", "query": "x", "m": ' + repeated("[", n),
    "long_integer": lambda n: repeated("1", n),
    "long_integer_id": lambda n: '{"id": ' + repeated("1", n) + ', "query": "x"}',
    "huge_float_id": lambda n: '{"id": 1e999, "query": "' + repeated("x", n) + '"}',
    "long_query": lambda n: query_line(repeated("route this ", n)),
    "chinese_query": lambda n: query_line(repeated("哪个技能能帮我部署 ", n)),
    "escaped_query": lambda n: json.dumps({"id": "q1", "query": repeated("😀", n // 12)}) + "\n",  # \ud83d\ude00
    "lone_surrogate_escapes": lambda n: '{"id": "q1", "query": "' + repeated("\\ud800", n) + '"}',
    "many_lines": lambda n: numbered('{{"id": "q{i}", "query": "find a skill"}}\n', n),
    "duplicate_ids": lambda n: repeated(query_line("find a skill"), n),
    "blank_lines": lambda n: repeated("\n", n),
    "whitespace_lines": lambda n: repeated(" \t\r\n", n),
    "empty_objects": lambda n: repeated("{}\n", n),
    "lists": lambda n: repeated("[]\n", n),
    "no_newline_at_end": lambda n: numbered('{{"id": {i}, "query": "q"}}\n', n).rstrip("\n"),
    "unterminated_string": lambda n: '{"id": "q1", "query": "' + repeated("é", n),
    "nuls": lambda n: repeated("\x00", n),
    "nuls_in_query": lambda n: query_line(repeated("\x00", n // 6)),  # each written as \u0000
    "random_unicode": lambda n: random_text(n, 5, surrogates=False),
    "random_unicode_surrogates": lambda n: random_text(n, 5, surrogates=True),
}
