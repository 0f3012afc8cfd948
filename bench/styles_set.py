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
any earlier set is dropped whole (counted in the card), never moved to dev. A request whose label the blind second
reading (``train_review.jsonl``) disputes is left out too, and every kept one carries its ``review_status``.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from request_splits import (assign_splits, build_main, copy_groups, curated_record, earlier_splits, grouped,
                            split_table, written)

from skill_assets.lib.common.hashing import normalise_name
from skill_assets.lib.common.jsonl import json_objects
from skill_assets.lib.evaluation.curated_benchmark import LONG_TASK_MAX_GROUPS, LONG_TASK_REQUESTS, load_requests
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.lib.review.agreement import blind_pass_agrees
from skill_assets.router.shipped_embedder import CURATED_REQUESTS, MEANING_REQUESTS
from skill_assets.router.shipped_router import STYLES_REQUESTS, STYLES_TRAIN_REQUESTS

STYLES_DIR = STYLES_TRAIN_REQUESTS.parent
COUNTS_MARK = "## Train counts"
#: the blind second reading of the train requests: one row per request, the reader's picks made before the label
REVIEW_FILE = "train_review.jsonl"


def build(corpus: Path) -> tuple[list[dict], str, dict]:
    """(the records of ``train.jsonl``, the README's train counts section, a one-line summary)."""
    skills = {s.id: s for s in load_pool(corpus).skills}
    earlier = [*load_requests(CURATED_REQUESTS), *load_requests(MEANING_REQUESTS),
               *load_requests(LONG_TASK_REQUESTS, max_groups=LONG_TASK_MAX_GROUPS), *load_requests(STYLES_REQUESTS)]
    forced, known_groups = earlier_splits(earlier)
    rows, unreadable = grouped(written(STYLES_DIR / "written"), skills, copy_groups(skills, known_groups))
    split_of, dropped = assign_splits(rows, forced, {"train": 1.0})
    held_out = sorted(rid for rid, split in split_of.items() if split != "train")
    train = sorted((curated_record(r, "train", r["style"]) for r in rows if split_of.get(r["id"]) == "train"),
                   key=lambda r: r["id"])
    verdicts = second_reading(train, {sid: normalise_name(s.name) for sid, s in skills.items()})
    out = [{**r, "review_status": verdicts.get(r["id"], "unreviewed")} for r in train
           if verdicts.get(r["id"]) != "disputed"]
    disputed = sorted(rid for rid, verdict in verdicts.items() if verdict == "disputed")
    counts = {key: Counter(r[key] for r in out) for key in ("style", "lang", "k")}
    section = "\n".join([
        COUNTS_MARK, "", "_Written by `bench/styles_set.py`._", "", *split_table(out), "",
        "Styles: " + ", ".join(f"{s} {n}" for s, n in sorted(counts["style"].items()))
        + f"; in Chinese: {counts['lang']['zh']}; k = 1 / 2 / 3: {counts['k'][1]} / {counts['k'][2]} / "
        f"{counts['k'][3]}; groups with a copy: {sum(len(g) > 1 for r in out for g in r['gt_groups'])}. Dropped "
        f"because a skill (or a copy) is a dev or test skill of an earlier set: {len(held_out) + len(dropped)}; "
        f"because a skill is not in the pool the router reads: {unreadable}. Left out because the blind second "
        f"reading (`train_review.jsonl`) disputes the label: {len(disputed)} ({', '.join(disputed) or 'none'}); "
        f"read and agreed: {sum(r['review_status'] == 'agreed' for r in out)}, not read: "
        f"{sum(r['review_status'] == 'unreviewed' for r in out)}.", ""])
    summary = {"requests": len(out), "dropped_held_out": len(held_out) + len(dropped), "unreadable": unreadable,
               "disputed": len(disputed),
               "directions": dict(Counter(r["direction"] for r in out))}
    return out, section, summary


def second_reading(train: list[dict], name_of: dict[str, str]) -> dict[str, str]:
    """Each read request's verdict (``agreed`` / ``disputed``), recomputed from ``train_review.jsonl``'s picks with the
    sets' one rule (``blind_pass_agrees``); a row whose stated resolution is not the rule's, or whose writer label is
    not the one the set holds, is an error, since it was read against another label."""
    labels = {r["id"]: r["gt_groups"] for r in train}
    verdicts = {}
    for where, row in json_objects(STYLES_DIR / REVIEW_FILE):
        if row["id"] not in labels:
            continue  # a request the set leaves out before the reading (held out): its row is kept, unused
        verdict = "agreed" if blind_pass_agrees(labels[row["id"]], row["reviewer_gt_groups"], name_of) else "disputed"
        if row["writer_gt_groups"] != labels[row["id"]] or row["resolution"] != verdict:
            raise SystemExit(f"{where}: {row['id']} was read against another label or says {row['resolution']!r} "
                             f"where the rule gives {verdict!r}")
        verdicts[row["id"]] = verdict
    return verdicts


def main() -> int:
    return build_main(__doc__.splitlines()[0], build, STYLES_TRAIN_REQUESTS, STYLES_DIR / "README.md", COUNTS_MARK,
                      "Styles requests")


if __name__ == "__main__":
    raise SystemExit(main())
