"""Split the hand-written should-not-trigger requests into train / dev / test and write the card's counts.

    .venv/bin/python bench/no_fit_set.py [--corpus DIR]

Input: ``skill_assets/benchmarks/no_fit/written/*.jsonl`` (``id``, ``query``, ``lang``, ``kind``, ``near``, ``why``,
``writer``). Output: ``skill_assets/benchmarks/no_fit/requests.jsonl`` (the same fields and ``split``, by id) and the
counts section of the folder's ``README.md``. Deterministic: the same files give the same bytes (``build`` is what
the test compares).

The split is stratified by writer, kind and language, so every split holds each kind in both languages as the whole
set does: within each (writer, kind, language) the requests are ordered by a hash of their id and dealt 60 / 20 / 20 %
in that order. The writer is a stratum so that a file added later never moves a request of an earlier one (a test
request stays test, a train request train), as ``request_splits`` promises for the answerable sets. A no-fit request
has no skill, so there is no skill component to keep whole (as the answerable sets have).

Whether a request is truly not covered is its writer's finding (they searched the corpus under several phrasings);
it is checked here only as far as the writer said it: every skill a ``near_miss`` names in ``near`` is a skill of
the shared corpus (``near_problems``), and only near misses name one. Nothing is re-labelled.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from collections.abc import Iterable

from request_splits import write_counts, write_requests, written
from shared_corpus import CORPUS

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.router.shipped_abstention import NO_FIT_KINDS, NO_FIT_REQUESTS

NO_FIT_DIR = NO_FIT_REQUESTS.parent
TARGETS = {"train": 0.6, "dev": 0.2, "test": 0.2}
FIELDS = ("id", "query", "lang", "kind", "near", "why", "writer")
COUNTS_MARK = "## Counts"


def check(rows: list[dict]) -> None:
    """ValueError naming the first line that breaks the written format (unique ids, a known kind and language, a
    query, ``near`` skills on near misses only)."""
    seen: set[str] = set()
    for r in rows:
        where = r["_where"]
        if set(r) - {"_where"} != set(FIELDS):
            raise ValueError(f"{where}: fields must be {', '.join(FIELDS)}")
        if r["id"] in seen:
            raise ValueError(f"{where}: duplicate id {r['id']!r}")
        seen.add(r["id"])
        if r["kind"] not in NO_FIT_KINDS or r["lang"] not in ("en", "zh") or not str(r["query"]).strip():
            raise ValueError(f"{where}: kind must be one of {', '.join(NO_FIT_KINDS)}, lang en or zh, query not empty")
        if not isinstance(r["near"], list) or bool(r["near"]) != (r["kind"] == "near_miss"):
            raise ValueError(f"{where}: near lists the skills a near miss shares words with (only near misses)")


def near_problems(rows: Iterable[dict], pool_ids: set[str]) -> list[str]:
    """``id: skill`` for every ``near`` skill that is not a skill of the pool the writer searched."""
    return [f"{r['id']}: {sid}" for r in rows for sid in r["near"] if sid not in pool_ids]


def build(rows: list[dict]) -> tuple[list[dict], str, dict]:
    """(the records of ``requests.jsonl`` by id, the README's counts section, a one-line summary)."""
    check(rows)
    strata: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for r in rows:
        strata[(r["writer"], r["kind"], r["lang"])].append(r)
    out = []
    for members in strata.values():
        members.sort(key=lambda r: digest(r["id"]))
        n_train, n_dev = round(TARGETS["train"] * len(members)), round(TARGETS["dev"] * len(members))
        for i, r in enumerate(members):
            split = "train" if i < n_train else "dev" if i < n_train + n_dev else "test"
            out.append({**{f: r[f] for f in FIELDS}, "split": split})
    out.sort(key=lambda r: r["id"])
    by = Counter((r["kind"], r["lang"], r["split"]) for r in out)
    lines = [COUNTS_MARK, "", "_Written by `bench/no_fit_set.py`._", "",
             "| kind | language | train | dev | test | all |", "|---|---|---|---|---|---|"]
    for kind in NO_FIT_KINDS:
        for lang in ("en", "zh"):
            row = [by[(kind, lang, s)] for s in TARGETS]
            lines.append(f"| {kind} | {lang} | {' | '.join(map(str, row))} | {sum(row)} |")
    splits = Counter(r["split"] for r in out)
    lines += [f"| all | | {' | '.join(str(splits[s]) for s in TARGETS)} | {len(out)} |", ""]
    summary = {"requests": len(out), "splits": dict(splits), "kinds": dict(Counter(r["kind"] for r in out))}
    return out, "\n".join(lines), summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS), help="the corpus the writers searched, to check near skills in")
    args = ap.parse_args()
    rows = written(NO_FIT_DIR / "written")
    out, section, summary = build(rows)
    if problems := near_problems(rows, {s.id for s in load_pool(args.corpus).skills}):
        raise SystemExit(f"near skills not in {args.corpus}: {', '.join(problems)}")
    write_requests(NO_FIT_REQUESTS, out)
    write_counts(NO_FIT_DIR / "README.md", COUNTS_MARK, section, "Should-not-trigger requests")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
