"""Build the styles train set from its writer's file: copy groups, train-only by skill, the card's counts.

    .venv/bin/python bench/styles_set.py [--corpus DIR]

Input: ``skill_assets/benchmarks/styles/written/*.jsonl`` (``gt`` one skill id per needed skill), every earlier
hand-written set (curated, meaning-only, long tasks, the styles dev set: their skills keep their splits) and the
shared corpus. Output: ``skill_assets/benchmarks/styles/train.jsonl`` in the curated format and the train counts
section of the folder's ``README.md``. Deterministic: the same files give the same bytes (``build`` is what the
test compares).

The set exists to train on: the fusion and the abstention had seen only the curated and meaning-only writers'
registers, and the styles dev set's terse and casual requests were the ones they misread most. So every request is
train or dropped: copy groups and components are ``request_splits``', and a component holding a dev or test skill of
any earlier set is dropped whole (counted in the card), never moved to dev.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from request_splits import (assign_splits, build_main, copy_groups, curated_record, earlier_splits, grouped,
                            split_table, written)

from skill_assets.lib.evaluation.curated_benchmark import LONG_TASK_MAX_GROUPS, LONG_TASK_REQUESTS, load_requests
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.router.shipped_embedder import CURATED_REQUESTS, MEANING_REQUESTS
from skill_assets.router.shipped_router import STYLES_REQUESTS, STYLES_TRAIN_REQUESTS

STYLES_DIR = STYLES_TRAIN_REQUESTS.parent
COUNTS_MARK = "## Train counts"


def build(corpus: Path) -> tuple[list[dict], str, dict]:
    """(the records of ``train.jsonl``, the README's train counts section, a one-line summary)."""
    skills = {s.id: s for s in load_pool(corpus).skills}
    earlier = [*load_requests(CURATED_REQUESTS), *load_requests(MEANING_REQUESTS),
               *load_requests(LONG_TASK_REQUESTS, max_groups=LONG_TASK_MAX_GROUPS), *load_requests(STYLES_REQUESTS)]
    forced, known_groups = earlier_splits(earlier)
    rows, unreadable = grouped(written(STYLES_DIR / "written"), skills, copy_groups(skills, known_groups))
    split_of, dropped = assign_splits(rows, forced, {"train": 1.0})
    held_out = sorted(rid for rid, split in split_of.items() if split != "train")
    out = sorted((curated_record(r, "train", r["style"]) for r in rows if split_of.get(r["id"]) == "train"),
                 key=lambda r: r["id"])
    counts = {key: Counter(r[key] for r in out) for key in ("style", "lang", "k")}
    section = "\n".join([
        COUNTS_MARK, "", "_Written by `bench/styles_set.py`._", "", *split_table(out), "",
        "Styles: " + ", ".join(f"{s} {n}" for s, n in sorted(counts["style"].items()))
        + f"; in Chinese: {counts['lang']['zh']}; k = 1 / 2 / 3: {counts['k'][1]} / {counts['k'][2]} / "
        f"{counts['k'][3]}; groups with a copy: {sum(len(g) > 1 for r in out for g in r['gt_groups'])}. Dropped "
        f"because a skill (or a copy) is a dev or test skill of an earlier set: {len(held_out) + len(dropped)}; "
        f"because a skill is not in the pool the router reads: {unreadable}.", ""])
    summary = {"requests": len(out), "dropped_held_out": len(held_out) + len(dropped), "unreadable": unreadable,
               "directions": dict(Counter(r["direction"] for r in out))}
    return out, section, summary


def main() -> int:
    return build_main(__doc__.splitlines()[0], build, STYLES_TRAIN_REQUESTS, STYLES_DIR / "README.md", COUNTS_MARK,
                      "Styles requests")


if __name__ == "__main__":
    raise SystemExit(main())
