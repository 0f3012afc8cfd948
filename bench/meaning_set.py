"""Build the meaning-only request set from its writers' files: copy groups, splits by skill, the card's counts.

Input: ``skill_assets/benchmarks/meaning/written/*.jsonl`` (one file per writer, ``gt`` one skill id per
needed skill), the curated benchmark (whose skills keep their split here) and the shared corpus. Output:
``skill_assets/benchmarks/meaning/requests.jsonl`` in the curated format (``load_requests`` reads it) and
the counts section of the folder's ``README.md``. Deterministic: the same files give the same bytes.
Copy groups and splits by skill component are ``request_splits``' (a component holding a curated skill takes
that skill's curated split, so the curated test skills stay test skills for every model trained on either set);
free components are dealt at ``TARGETS``.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter

from request_splits import (assign_splits, copy_groups, curated_record, earlier_splits, grouped, split_table,
                            write_counts, write_requests, written)
from shared_corpus import CORPUS

from skill_assets.lib.evaluation.curated_benchmark import CURATED_DIR, load_requests
from skill_assets.lib.retrieval.pools import load_pool

MEANING_DIR = CURATED_DIR.parent / "meaning"
TARGETS = {"train": 0.66, "dev": 0.19, "test": 0.15}
COUNTS_MARK = "## Counts"


def counts_section(rows: list[dict], dropped: list[dict], unreadable: int) -> str:
    lines = [COUNTS_MARK, "", "_Written by `bench/meaning_set.py`._", "", *split_table(rows)]
    ks = Counter(r["k"] for r in rows)
    lines += ["", f"k = 1 / 2 / 3: {ks[1]} / {ks[2]} / {ks[3]}; groups with a copy: "
                  f"{sum(len(g) > 1 for r in rows for g in r['gt_groups'])}; requests dropped because their skills "
                  f"carry two curated splits: {len(dropped)}; because a skill is not in the pool the router reads "
                  f"(its loader rejects the file): {unreadable}.", ""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS))
    args = ap.parse_args()
    skills = {s.id: s for s in load_pool(args.corpus).skills}
    forced, curated_groups = earlier_splits(load_requests())
    rows, unreadable = grouped(written(MEANING_DIR / "written"), skills, copy_groups(skills, curated_groups))
    split_of, dropped = assign_splits(rows, forced, TARGETS)
    out = [curated_record(r, split_of[r["id"]], r.get("style", "task_direct")) for r in rows if r["id"] in split_of]
    write_requests(MEANING_DIR / "requests.jsonl", out)
    write_counts(MEANING_DIR / "README.md", COUNTS_MARK, counts_section(out, dropped, unreadable),
                 "Meaning-only requests")
    print(json.dumps({"requests": len(out), "dropped": len(dropped),
                      "splits": dict(Counter(r["split"] for r in out)),
                      "directions": dict(Counter(r["direction"] for r in out))}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
