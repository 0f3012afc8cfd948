"""Build the long task statement set from its writers' files: copy groups, splits by skill, the card's counts.

    .venv/bin/python bench/long_task_set.py [--corpus DIR]

Input: ``skill_assets/benchmarks/long_tasks/written/*.jsonl`` (``gt`` one skill id per needed skill, ``parts``
what each serves), the curated and meaning-only sets (whose skills keep their splits here) and the shared corpus.
Output: ``skill_assets/benchmarks/long_tasks/requests.jsonl`` in the curated format (``load_requests`` reads it
with ``LONG_TASK_MAX_GROUPS``), each line keeping its ``parts``, and the counts section of the folder's
``README.md``. Deterministic: the same files give the same bytes (``build`` is what the test compares).

Copy groups and splits by skill component are ``request_splits``'. The long tasks were written over skills the
short sets use as well (five in six tasks hold one), so most components inherit a split: a component holding
an earlier set's dev skill goes to dev even beside that set's train skills (dev chooses; train must not see a dev
skill), and a task whose skills join an earlier test split with another is dropped. Free components are dealt
at ``TARGETS``, the shares the issue asks of the whole set.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from request_splits import (assign_splits, build_main, copy_groups, curated_record, earlier_splits, grouped,
                            split_table, written)

from skill_assets.lib.evaluation.curated_benchmark import LONG_TASK_REQUESTS, load_requests
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.router.shipped_embedder import CURATED_REQUESTS, MEANING_REQUESTS

LONG_TASK_DIR = LONG_TASK_REQUESTS.parent
TARGETS = {"train": 0.6, "dev": 0.2, "test": 0.2}
#: the curated style a task statement is filed under: several needs, each in its own part
STYLE = "multi_step"
COUNTS_MARK = "## Counts"


def build(corpus: Path) -> tuple[list[dict], str, dict]:
    """(the records of ``requests.jsonl``, the README's counts section, a one-line summary)."""
    skills = {s.id: s for s in load_pool(corpus).skills}
    earlier = [*load_requests(CURATED_REQUESTS), *load_requests(MEANING_REQUESTS)]
    forced, known_groups = earlier_splits(earlier)
    rows, unreadable = grouped(written(LONG_TASK_DIR / "written"), skills, copy_groups(skills, known_groups))
    split_of, dropped = assign_splits(rows, forced, TARGETS)
    out = sorted((curated_record(r, split_of[r["id"]], STYLE, parts=r["parts"]) for r in rows if r["id"] in split_of),
                 key=lambda r: r["id"])
    inherited = Counter(r["split"] for r in out if any(s in forced for s in r["gt"]))
    dev_on_train = sum(r["split"] == "dev" and any(forced.get(s) == "train" for s in r["gt"]) for r in out)
    ks = Counter(r["k"] for r in out)
    section = "\n".join([
        COUNTS_MARK, "", "_Written by `bench/long_task_set.py`._", "", *split_table(out), "",
        f"k = 2 / 3 / 4 / 5 / 6: {' / '.join(str(ks[k]) for k in range(2, 7))}; groups with a copy: "
        f"{sum(len(g) > 1 for r in out for g in r['gt_groups'])}; requests holding a skill of the curated or "
        f"meaning-only set (train / dev / test): {inherited['train']} / {inherited['dev']} / {inherited['test']}, "
        f"of which dev requests holding a skill those sets train on: {dev_on_train}; requests dropped because their skills join an earlier set's test split with another: "
        f"{len(dropped)} ({', '.join(sorted(r['id'] for r in dropped))}); because a skill is not in the pool the "
        f"router reads (its loader rejects the file): {unreadable}.", ""])
    summary = {"requests": len(out), "dropped": len(dropped), "splits": dict(Counter(r["split"] for r in out)),
               "directions": dict(Counter(r["direction"] for r in out))}
    return out, section, summary


def main() -> int:
    return build_main(__doc__.splitlines()[0], build, LONG_TASK_REQUESTS, LONG_TASK_DIR / "README.md", COUNTS_MARK,
                      "Long task statements")


if __name__ == "__main__":
    raise SystemExit(main())
