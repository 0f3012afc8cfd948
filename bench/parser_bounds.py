"""What hostile text costs the parsers of untrusted input: rationales, SQL files, front matter, query files (issue 31).

    .venv/bin/python bench/parser_bounds.py [--sizes 10000,100000,1000000]
        [--only rationale|sql|front_matter|queries] [--no-results-doc]

Times each parser on the generated hostile inputs the fuzz tests feed it (``bench/hostile_texts.py``:
tests/lib/taxonomy/test_hostile_rationales.py, tests/lib/common/test_user_sql.py,
tests/lib/common/test_hostile_front_matter.py, tests/router/test_hostile_pools.py) at each size (10 KB,
100 KB, 1 MB by default), one call per input, wall seconds:

- ``classify_rationale``: ``classify_rationales`` with a stored-answers fallback, as ``skip_taxonomy``
  calls it (rules, model, fallback key), on a rationale read up to ``MAX_RATIONALE_CHARS``;
- ``rationale_reading_uncapped``: ``reasoning_text`` and the settled rule hits with that cap lifted,
  so the patterns themselves are timed on the whole input (linear: 10× the text, about 10× the time);
- ``match_rules`` (the bare rules) and ``parse_llm_label`` (an LLM fallback answer);
- ``sql_check``: ``checked_statements``, the read-only check of ``skill-assets sql``;
- ``front_matter``: ``parse_skill_markdown``, the SKILL.md reader of ingest and the router (its front-matter
  cap, 100,000 characters, refuses the larger inputs before YAML reads them: the 100 KB size is just over it,
  so ``front_matter_under_cap`` times each input again at 90,000 characters, read by YAML whole);
- ``queries_file``: ``read_queries``, the reader of ``route --queries``, on the input written as a file (the
  write is not timed).

The figures the issue (31, findings 5 and 12) names, before: 10,000 spaces in a rationale took 5.9 s
and 40,000 took 87.6 s, 40,000 newlines ran past 100 s, 1 MB of ordinary text 2.5-4.9 s; the SQL check
took 0.15 s at 72 KB and 21 s at 1.34 MB (53 s and 2 GB for the whole call); a 1 MB YAML base-60
integer in a front matter took 83 s. The target: each input ≤ 1 s on 2 cores. A parser that raises
anything but its own refusal on an input is recorded as ``"raised: <type>"``. Ends with ONE JSON line:
per parser, the worst seconds over the inputs at each size, the slowest input at the largest size and
any input that raised (each input's figures go to stderr as they are taken); writes the
``parser-bounds`` section of docs/RESULTS.md unless ``--no-results-doc``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from hostile_texts import FRONT_MATTER, QUERY_FILES, RATIONALES, SQL, Builders
from results_doc import write_section

from skill_assets.lib.core.frontmatter import DEFAULT_LIMITS, SkillParseError, parse_skill_markdown
from skill_assets.user_sql import UserSqlError, checked_statements
from skill_assets.lib.taxonomy import settling
from skill_assets.lib.taxonomy.classify import classify_rationales, settled_rule_label
from skill_assets.lib.taxonomy.llm_fallback import answers_fallback, parse_llm_label
from skill_assets.lib.taxonomy.rules import match_rules
from skill_assets.router.cli import RouteInputError, read_queries

#: the size ``front_matter_under_cap`` builds every input at: under the front-matter cap, so YAML reads it
UNDER_CAP = DEFAULT_LIMITS.max_header_chars - 10_000


def as_text(text: str) -> str:
    """The argument of every parser but ``queries_file``: the text itself."""
    return text


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


def front_matter(text: str) -> None:
    try:
        parse_skill_markdown(text)
    except SkillParseError:
        pass  # a refusal is an answer


def queries_file(path: Path) -> None:
    try:
        read_queries(path)
    except RouteInputError:
        pass  # a refusal is an answer


class QueriesFile:
    """Writes each input to one file (a lone surrogate as the bytes it would be), untimed, for ``queries_file``."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "queries.jsonl"

    def __call__(self, text: str) -> Path:
        self.path.write_bytes(text.encode("utf-8", "surrogatepass"))
        return self.path


def seconds(parse: Callable[[object], None], arg: object) -> float | str:
    start = time.perf_counter()
    try:
        parse(arg)
    except Exception as exc:  # recorded: what a fuzz test would fail on
        return f"raised: {type(exc).__name__}"
    return round(time.perf_counter() - start, 4)


def table(out: dict) -> str:
    """The RESULTS.md section: per parser, the worst seconds at each size, the slowest input, what raised."""
    rows = ["| parser | inputs | worst seconds (characters: s) | slowest input (largest size) | raised |",
            "| --- | --- | --- | --- | --- |"]
    for name, p in out["parsers"].items():
        worst = " · ".join(f"{int(n):,}: {s}" for n, s in p["worst_s"].items())
        raised = ", ".join(p["raised"]) or "none"
        rows.append(f"| `{name}` | {p['inputs']} | {worst} | {p['slowest_input']} | {raised} |")
    return (f"`bench/parser_bounds.py --sizes {','.join(map(str, out['sizes']))}`: each generated hostile input "
            "(`bench/hostile_texts.py`, the fuzz tests' inputs) once per size; target ≤ 1 s per input on 2 cores. "
            f"`front_matter_under_cap` builds every input at {UNDER_CAP:,} characters, under the front-matter cap. "
            f"Load average {out['load_before']} before, {out['load_after']} after; "
            f"peak RSS {out['peak_rss_mb']} MB.\n\n"
            + "\n".join(rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000", help="input sizes in characters, comma-separated")
    ap.add_argument("--only", choices=["rationale", "sql", "front_matter", "queries"], help="time one kind of parser")
    ap.add_argument("--no-results-doc", action="store_true", help="do not write the section of docs/RESULTS.md")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    classify("warm up: the model loads once")
    folder = tempfile.TemporaryDirectory()
    as_file = QueriesFile(Path(folder.name))
    #: name -> (kind, inputs, sizes, the untimed step from the text to the parser's argument, the parser)
    parsers: dict[str, tuple[str, Builders, list[int], Callable[[str], object], Callable]] = {
        "classify_rationale": ("rationale", RATIONALES, sizes, as_text, classify),
        "rationale_reading_uncapped": ("rationale", RATIONALES, sizes, as_text, read_uncapped),
        "match_rules": ("rationale", RATIONALES, sizes, as_text, match_rules),
        "parse_llm_label": ("rationale", RATIONALES, sizes, as_text, parse_llm_label),
        "sql_check": ("sql", SQL, sizes, as_text, sql_check),
        "front_matter": ("front_matter", FRONT_MATTER, sizes, as_text, front_matter),
        "front_matter_under_cap": ("front_matter", FRONT_MATTER, [UNDER_CAP], as_text, front_matter),
        "queries_file": ("queries", QUERY_FILES, sizes, as_file, queries_file),
    }
    out: dict = {"sizes": sizes, "load_before": round(os.getloadavg()[0], 2), "parsers": {}}
    for name, (kind, inputs, at, prepare, parse) in parsers.items():
        if args.only and kind != args.only:
            continue
        per_input: dict[str, list[float | str]] = {}
        for case, build in inputs.items():
            per_input[case] = [seconds(parse, prepare(build(n))) for n in at]
            print(f"{name:28s} {case:26s} " + "  ".join(f"{n:>9,}: {s}" for n, s in zip(at, per_input[case])),
                  file=sys.stderr, flush=True)
        worst = {}
        for i, n in enumerate(at):
            timed = [s[i] for s in per_input.values() if isinstance(s[i], float)]
            worst[str(n)] = max(timed, default=None)
        raised = sorted({f"{case}: {s}" for case, row in per_input.items() for s in row if isinstance(s, str)})
        slowest = max(per_input, key=lambda case: per_input[case][-1] if isinstance(per_input[case][-1], float) else 0)
        out["parsers"][name] = {"inputs": len(inputs), "worst_s": worst, "slowest_input": slowest, "raised": raised}
    folder.cleanup()
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    out["load_after"] = round(os.getloadavg()[0], 2)
    if not args.no_results_doc and not args.only:
        write_section("parser-bounds", table(out))
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
