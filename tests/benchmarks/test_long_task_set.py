"""The long task statement set (``skill_assets/benchmarks/long_tasks/``) keeps the rules it was written to.

Every written task is checked against the skills it was written for in the shared corpus (length, 2-6 skills,
no skill name, no copied run, Chinese tasks mostly CJK: ``long_task_problems``); ``requests.jsonl`` and the
card's counts are what ``bench/long_task_set.py`` builds from ``written/``; the split by skill holds across the
hand-written sets.
"""
from __future__ import annotations

import json
from collections import Counter

import pytest

from skill_assets.lib.evaluation.curated_benchmark import (
    LONG_TASK_MAX_GROUPS,
    LONG_TASK_REQUESTS,
    CuratedFormatError,
    load_requests,
)
from skill_assets.lib.evaluation.meaning_leakage import SkillText, long_task_problems
from skill_assets.lib.retrieval.pools import load_pool
from skill_assets.router.shipped_embedder import CURATED_REQUESTS, MEANING_REQUESTS
from bench_scripts import bench_module

REQUESTS = load_requests(LONG_TASK_REQUESTS, max_groups=LONG_TASK_MAX_GROUPS)


def _written() -> list[dict]:
    return [json.loads(line) for path in sorted((LONG_TASK_REQUESTS.parent / "written").glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _builder(monkeypatch):
    return bench_module("long_task_set", monkeypatch)


def test_counts_directions_and_sizes_meet_the_issue():
    written = _written()
    assert len(written) >= 200 and {r["lang"] for r in written} == {"en", "zh"}
    assert all(2 <= r["k"] == len(r["gt"]) == len(r["parts"]) <= 6 for r in written)
    splits = Counter(r.split for r in REQUESTS)
    assert set(splits) == {"train", "dev", "test"} and min(splits.values()) >= 40
    assert {r.direction for r in REQUESTS} == {"en2en", "en2zh", "zh2en", "zh2zh"}


def test_every_long_task_keeps_the_long_task_rules_against_its_skills(shared_corpus):
    pool = {s.id: s for s in load_pool(shared_corpus).skills}
    problems = {}
    for r in _written():
        missing = [sid for sid in r["gt"] if sid not in pool]
        assert not missing, (r["id"], missing)
        found = long_task_problems(r["query"], r["lang"], [SkillText(s, pool[s].name, pool[s].description,
                                                                     pool[s].body) for s in r["gt"]])
        if found:
            problems[r["id"]] = found
    assert problems == {}


def test_requests_and_counts_are_what_the_script_builds_from_written(shared_corpus, monkeypatch):
    builder = _builder(monkeypatch)
    records, section, _ = builder.build(shared_corpus)
    built = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    assert LONG_TASK_REQUESTS.read_text(encoding="utf-8") == built
    assert (LONG_TASK_REQUESTS.parent / "README.md").read_text(encoding="utf-8").endswith(section)


def test_no_test_skill_is_seen_in_training_and_no_dev_skill_is_a_train_positive():
    """Split by skill across every hand-written set: the long test split holds no skill any set trains or chooses
    on, and the long train split no skill any set chooses or tests on."""
    every = [*REQUESTS, *load_requests(CURATED_REQUESTS), *load_requests(MEANING_REQUESTS)]
    held = {split: {sid for r in every if r.split == split for sid in r.gt} for split in ("train", "dev", "test")}
    long_split = {split: {sid for r in REQUESTS if r.split == split for sid in r.gt} for split in held}
    assert not long_split["test"] & (held["train"] | held["dev"])
    assert not long_split["train"] & (held["dev"] | held["test"])


def _request(groups: int) -> dict:
    ids = [[f"r/s{i}"] for i in range(groups)]
    return {"id": "x", "query": "q", "lang": "en", "direction": "en2en", "k": groups, "gt_groups": ids,
            "style": "multi_step", "split": "dev"}


@pytest.mark.parametrize("groups, short_ok, long_ok", [(3, True, True), (4, False, True), (6, False, True),
                                                       (7, False, False)])
def test_only_the_long_task_reader_takes_more_than_three_skills(tmp_path, groups, short_ok, long_ok):
    path = tmp_path / "requests.jsonl"
    path.write_text(json.dumps(_request(groups)) + "\n", encoding="utf-8")
    for max_groups, ok in ((3, short_ok), (LONG_TASK_MAX_GROUPS, long_ok)):
        if ok:
            assert load_requests(path, max_groups=max_groups)[0].k == groups
        else:
            with pytest.raises(CuratedFormatError, match=f"must be 1-{max_groups} non-empty"):
                load_requests(path, max_groups=max_groups)


def test_the_long_task_check_catches_length_skill_count_and_a_copied_run():
    body = "Run the migration in a transaction so a failure leaves the schema as it was before."
    skill = SkillText("x/migrations", "migrations", "Schema changes.", body)
    short = long_task_problems("Please fix our schema change.", "en", [skill])
    assert any("words, a long task has 150-600" in p for p in short)
    assert any("needs 1 skills" in p for p in short)
    long_copy = " ".join(["Our nightly job broke."] * 40) + " Please run the migration in a transaction so a failure"
    assert any("copies 6 words" in p for p in long_task_problems(long_copy, "en", [skill, skill]))
    named = " ".join(["Our Postgres job broke overnight again."] * 40)  # a tool name is allowed, a skill name is not
    assert long_task_problems(named, "en", [skill, skill]) == []
    assert any("names skill" in p for p in long_task_problems(named + " use migrations", "en", [skill, skill]))


def test_every_dev_and_test_task_has_one_second_pass_row():
    """``review.jsonl`` holds the blind second pass: exactly one row per dev and test task (train rows, where read, at
    most one each), the writer's label as built, a verdict, and for a dispute the reviewer's reason (the writer's label
    stands until a third look)."""
    rows = [json.loads(line) for line in (LONG_TASK_REQUESTS.parent / "review.jsonl").read_text(encoding="utf-8")
            .splitlines() if line.strip()]
    by_id = {r.id: r for r in REQUESTS}
    counts = Counter(row["id"] for row in rows)
    assert set(counts) <= set(by_id) and max(counts.values()) == 1
    assert {rid for rid, r in by_id.items() if r.split in ("dev", "test")} <= set(counts)
    for row in rows:
        request = by_id[row["id"]]
        assert row["resolution"] in ("agreed", "disputed"), row["id"]
        assert row["reviewer_confidence"] in ("high", "medium", "low"), row["id"]
        assert row["reviewer"] != row["writer"] and row["split"] == request.split, row["id"]
        assert [g[0] for g in row["writer_gt_groups"]] == [g[0] for g in request.groups], row["id"]
        assert row["why"].strip() and row["stated_needs"], row["id"]
        assert not set(row["also_serving_outside_group"]) & {s for g in request.groups for s in g}, row["id"]
        if row["resolution"] == "agreed":  # every labelled skill is among the reviewer's picks
            assert row["reviewer_gt_groups"] == row["writer_gt_groups"], row["id"]
