"""Split the hand-written should-not-trigger requests into train / dev / test and write the card's counts.

    .venv/bin/python bench/no_fit_set.py [--corpus DIR]

Input: ``skill_assets/benchmarks/no_fit/written/*.jsonl`` (``id``, ``query``, ``lang``, ``kind``, ``near``, ``why``,
``writer``) and the second reader's ``review.jsonl`` beside them. Output:
``skill_assets/benchmarks/no_fit/requests.jsonl`` (the same fields and ``split``, by id) and the counts section of the
folder's ``README.md``, with the number of disputed requests left out also printed. Deterministic: the same files
give the same bytes (``build`` is what the test compares).

The split is stratified by writer, kind and language, so every split holds each kind in both languages as the whole
set does: within each (writer, kind, language) the requests are ordered by a hash of their id and dealt 60 / 20 / 20 %
in that order. The writer is a stratum so that a file added later never moves a request of an earlier one (a test
request stays test, a train request train), as ``request_splits`` promises for the answerable sets. A no-fit request
has no skill, so there is no skill component to keep whole (as the answerable sets have).

Whether a request is truly not covered is its writer's finding (they searched the corpus under several phrasings);
it is checked here only as far as the writer said it: every skill a ``near_miss`` names in ``near`` is a skill of
the shared corpus (``near_problems``), and only near misses name one. Nothing is re-labelled.

A second reader then went over the requests (``review.jsonl``: ``id``, ``verdict``, ``reader_kind``, ``serving``,
``why``). A request the reader ``disputed`` (a corpus skill, named in ``serving``, serves it) is left out of
``requests.jsonl``: the deal is computed over every written request first and the disputed ones are dropped after,
so leaving one out never moves another request's split (a dropped request's place is not refilled). The counts
section says how many were left out and which.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from request_splits import write_counts, write_requests, written
from shared_corpus import CORPUS

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.router.shipped_abstention import NO_FIT_KINDS, NO_FIT_REQUESTS

NO_FIT_DIR = NO_FIT_REQUESTS.parent
TARGETS = {"train": 0.6, "dev": 0.2, "test": 0.2}
FIELDS = ("id", "query", "lang", "kind", "near", "why", "writer")
REVIEW = NO_FIT_DIR / "review.jsonl"
REVIEW_FIELDS = ("id", "verdict", "reader_kind", "serving", "why")
VERDICTS = ("agreed", "disputed")
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


def read_review(path: Path = REVIEW) -> list[dict]:
    """The second reader's rows in file order (none before anyone has read)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def review_problems(review: Sequence[dict], rows: list[dict], pool_ids: set[str] | None = None) -> list[str]:
    """``id: problem`` for every review row that breaks the format: the fields, one row per request it names, a
    known verdict and kind, a ``why``, and ``serving`` agreeing with the verdict (a dispute names the skills that
    serve the request, an agreement none); with ``pool_ids``, also every ``serving`` skill missing from the pool."""
    ids = {r["id"] for r in rows}
    seen: set[str] = set()
    out = []
    for r in review:
        rid = r.get("id", "?")
        if set(r) != set(REVIEW_FIELDS):
            out.append(f"{rid}: fields must be {', '.join(REVIEW_FIELDS)}")
            continue
        if rid not in ids:
            out.append(f"{rid}: names no written request")
        if rid in seen:
            out.append(f"{rid}: reviewed twice")
        seen.add(rid)
        if r["verdict"] not in VERDICTS or r["reader_kind"] not in NO_FIT_KINDS or not str(r["why"]).strip():
            out.append(f"{rid}: verdict one of {', '.join(VERDICTS)}, reader_kind a known kind, why not empty")
        if not isinstance(r["serving"], list) or bool(r["serving"]) != (r["verdict"] == "disputed"):
            out.append(f"{rid}: serving lists the skills that serve a disputed request (and only a disputed one)")
        elif pool_ids is not None:
            out += [f"{rid}: {sid} is not a corpus skill" for sid in r["serving"] if sid not in pool_ids]
    return out


def build(rows: list[dict], review: Sequence[dict] = ()) -> tuple[list[dict], str, dict]:
    """(the records of ``requests.jsonl`` by id, the README's counts section, a one-line summary); the requests
    ``review`` disputes are dealt their split like every other and then left out."""
    check(rows)
    if problems := review_problems(review, rows):
        raise ValueError(f"review.jsonl: {'; '.join(problems)}")
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
    disputed = {r["id"] for r in review if r["verdict"] == "disputed"}
    dealt = {r["id"]: (r["split"], r["writer"]) for r in out}
    left_out = [r for r in out if r["id"] in disputed]
    out = [r for r in out if r["id"] not in disputed]
    by = Counter((r["kind"], r["lang"], r["split"]) for r in out)
    lines = [COUNTS_MARK, "", "_Written by `bench/no_fit_set.py`._", "",
             "| kind | language | train | dev | test | all |", "|---|---|---|---|---|---|"]
    for kind in NO_FIT_KINDS:
        for lang in ("en", "zh"):
            row = [by[(kind, lang, s)] for s in TARGETS]
            lines.append(f"| {kind} | {lang} | {' | '.join(map(str, row))} | {sum(row)} |")
    splits = Counter(r["split"] for r in out)
    lines += [f"| all | | {' | '.join(str(splits[s]) for s in TARGETS)} | {len(out)} |", ""]
    lines += review_section(review, dealt, left_out)
    summary = {"requests": len(out), "splits": dict(splits), "kinds": dict(Counter(r["kind"] for r in out)),
               "disputed_left_out": len(left_out)}
    return out, "\n".join(lines), summary


def review_section(review: Sequence[dict], dealt: dict[str, tuple[str, str]], left_out: list[dict]) -> list[str]:
    """The card's lines on the second reading: requests read and their verdicts by the split each was dealt and by
    writer (out of how many there are), and the disputed requests left out of ``requests.jsonl``."""
    if not review:
        return ["No request has been read by a second reader yet (`review.jsonl`).", ""]
    by = Counter((*dealt[r["id"]], r["verdict"]) for r in review)
    of = Counter(dealt.values())
    lines = ["Second reading (`review.jsonl`), by the split each request was dealt:", "",
             "| split | writer | read | agreed | disputed | of |", "|---|---|---|---|---|---|"]
    for split in TARGETS:
        for w in sorted({w for _, w in dealt.values()}):
            n = [by[(split, w, v)] for v in VERDICTS]
            total = of[(split, w)]
            lines.append(f"| {split} | {w} | {sum(n)} | {n[0]} | {n[1]} | {total} |")
    lines.append(f"| all | | {len(review)} | {sum(r['verdict'] == 'agreed' for r in review)} | "
                 f"{sum(r['verdict'] == 'disputed' for r in review)} | {len(dealt)} |")
    ids = ", ".join(f"{r['id']} ({r['split']})" for r in left_out) or "none"
    return lines + ["", f"Left out of `requests.jsonl` as disputed: {len(left_out)} ({ids}).", ""]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS), help="the corpus the writers searched, to check near skills in")
    args = ap.parse_args()
    rows, review = written(NO_FIT_DIR / "written"), read_review()
    out, section, summary = build(rows, review)
    pool_ids = {s.id for s in load_pool(args.corpus).skills}
    if problems := near_problems(rows, pool_ids):
        raise SystemExit(f"near skills not in {args.corpus}: {', '.join(problems)}")
    if problems := review_problems(review, rows, pool_ids):
        raise SystemExit(f"review.jsonl: {'; '.join(problems)}")
    write_requests(NO_FIT_REQUESTS, out)
    write_counts(NO_FIT_DIR / "README.md", COUNTS_MARK, section, "Should-not-trigger requests")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
