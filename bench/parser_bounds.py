"""What hostile text costs the parsers of untrusted input: SKIP rationales and user SQL files (issue 31).

    .venv/bin/python bench/parser_bounds.py [--sizes 10000,100000,1000000] [--only rationale|sql]

Times each parser on the same kinds of hostile input the fuzz tests use (tests/lib/taxonomy/
test_hostile_rationales.py, tests/lib/common/test_user_sql.py) at each size (10 KB, 100 KB, 1 MB by
default), one call per input, wall seconds:

- ``classify_rationale``: ``classify_rationales`` with a stored-answers fallback, as ``skip_taxonomy``
  calls it (rules, model, fallback key), on a rationale read up to ``MAX_RATIONALE_CHARS``;
- ``rationale_reading_uncapped``: ``reasoning_text`` and the settled rule hits with that cap lifted,
  so the patterns themselves are timed on the whole input (linear: 10× the text, about 10× the time);
- ``match_rules`` (the bare rules) and ``parse_llm_label`` (an LLM fallback answer);
- ``sql_check``: ``checked_statements``, the read-only check of ``skill-assets sql``.

The figures the issue (31, findings 5 and 12) names, before: 10,000 spaces in a rationale took 5.9 s
and 40,000 took 87.6 s, 40,000 newlines ran past 100 s, 1 MB of ordinary text 2.5-4.9 s; the SQL check
took 0.15 s at 72 KB and 21 s at 1.34 MB (53 s and 2 GB for the whole call). A parser that raises on
an input is recorded as ``"raised: <type>"``. Ends with ONE JSON line: per parser, the
worst seconds over the inputs at each size, the slowest input at the largest size and any input
that raised (each input's figures go to stderr as they are taken).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import time
from collections.abc import Callable

from skill_assets.lib.common.user_sql import UserSqlError, checked_statements
from skill_assets.lib.taxonomy import settling
from skill_assets.lib.taxonomy.classify import classify_rationales, settled_rule_label
from skill_assets.lib.taxonomy.llm_fallback import answers_fallback, parse_llm_label
from skill_assets.lib.taxonomy.rules import match_rules


def repeated(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def random_text(n: int, seed: int, surrogates: bool) -> str:
    rng = random.Random(seed)
    points = [rng.randrange(0x110000) for _ in range(n)]
    return "".join(chr(p) if surrogates or not 0xD800 <= p < 0xE000 else "?" for p in points)


def sql_list(item: str, n: int) -> str:
    return repeated(item + ",", n - 10) + "1"


RATIONALES: dict[str, Callable[[int], str]] = {
    "spaces": lambda n: repeated(" ", n),
    "newlines": lambda n: repeated("\n", n),
    "label_then_spaces": lambda n: "Decision" + repeated(" ", n) + ": SKIP",
    "decision_lines": lambda n: repeated("Decision: SKIP\n", n),
    "brackets": lambda n: repeated("[", n),
    "braces": lambda n: repeated("{", n),
    "open_angles": lambda n: repeated("<a", n),
    "quotes": lambda n: repeated("\"'", n),
    "denied_hits": lambda n: repeated("not redundant ", n),
    "languages": lambda n: repeated("python rust ", n),
    "chinese": lambda n: repeated("不是平台不同而是受众不同 ", n),
    "nuls": lambda n: repeated("\x00", n),
    "lone_surrogates": lambda n: repeated("a\ud800 \udfff", n),
    "random_unicode": lambda n: random_text(n, 31, surrogates=True),
    "ordinary": lambda n: repeated("At first glance these look redundant, but one is for Python and the other "
                                   "for Go, so the ecosystems do not mix. ", n),
}
SQL: dict[str, Callable[[int], str]] = {
    "spaces": lambda n: repeated(" ", n),
    "newlines": lambda n: repeated("\n", n),
    "nested_parens": lambda n: "SELECT " + "(" * (n // 2) + "1" + ")" * (n // 2),
    "single_quotes": lambda n: repeated("'", n),
    "unterminated_string": lambda n: "SELECT '" + repeated("é", n),
    "statements": lambda n: repeated("SELECT 1;", n),
    "ascii_list": lambda n: "SELECT " + sql_list("1", n),
    "accented_list": lambda n: "SELECT " + sql_list("é", n),
    "emoji_list": lambda n: "SELECT " + sql_list("😀", n),
    "explained_list": lambda n: "EXPLAIN (FORMAT json) SELECT " + sql_list("é", n),
    "late_call": lambda n: "SELECT " + sql_list("'路由'", n) + ", enable_logging()",
    "nuls": lambda n: repeated("\x00", n),
    "lone_surrogates": lambda n: "SELECT '" + repeated("\ud800", n) + "'",
    "random_unicode": lambda n: random_text(n, 12, surrogates=False),
}


def classify(text: str) -> None:
    classify_rationales([text], fallback=answers_fallback({}))


def read_uncapped(text: str) -> None:
    cap, settling.MAX_RATIONALE_CHARS = settling.MAX_RATIONALE_CHARS, None
    try:
        settled_rule_label(settling.reasoning_text(text))
    finally:
        settling.MAX_RATIONALE_CHARS = cap


def sql_check(text: str) -> None:
    try:
        checked_statements(text, "q.sql")
    except UserSqlError:
        pass  # a refusal is an answer


PARSERS: dict[str, tuple[str, Callable[[str], None], dict[str, Callable[[int], str]]]] = {
    "classify_rationale": ("rationale", classify, RATIONALES),
    "rationale_reading_uncapped": ("rationale", read_uncapped, RATIONALES),
    "match_rules": ("rationale", match_rules, RATIONALES),
    "parse_llm_label": ("rationale", parse_llm_label, RATIONALES),
    "sql_check": ("sql", sql_check, SQL),
}


def seconds(parse: Callable[[str], None], text: str) -> float | str:
    start = time.perf_counter()
    try:
        parse(text)
    except Exception as exc:  # recorded: what a fuzz test would fail on
        return f"raised: {type(exc).__name__}"
    return round(time.perf_counter() - start, 4)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000", help="input sizes in characters, comma-separated")
    ap.add_argument("--only", choices=["rationale", "sql"], help="time one kind of parser")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    classify("warm up: the model loads once")
    out: dict = {"sizes": sizes, "load_before": round(os.getloadavg()[0], 2), "parsers": {}}
    for name, (kind, parse, inputs) in PARSERS.items():
        if args.only and kind != args.only:
            continue
        per_input: dict[str, list[float | str]] = {}
        for case, build in inputs.items():
            per_input[case] = [seconds(parse, build(n)) for n in sizes]
            print(f"{name:28s} {case:22s} " + "  ".join(f"{n:>9,}: {s}" for n, s in zip(sizes, per_input[case])),
                  file=sys.stderr, flush=True)
        worst = {}
        for i, n in enumerate(sizes):
            timed = {case: s[i] for case, s in per_input.items() if isinstance(s[i], float)}
            worst[str(n)] = max(timed.values())
        raised = sorted({f"{case}: {s}" for case, row in per_input.items() for s in row if isinstance(s, str)})
        slowest = max(per_input, key=lambda case: per_input[case][-1] if isinstance(per_input[case][-1], float) else 0)
        out["parsers"][name] = {"worst_s": worst, "slowest_input": slowest, "raised": raised}
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    out["load_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
