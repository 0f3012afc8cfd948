"""Review items: seeded samples of the sizes configured, and next rounds only for disputed items."""
from collections import Counter
from datetime import UTC, datetime

from skill_assets.lib.retrieval.store_skills import skills_from_rows
from skill_assets.lib.review.items import (
    bm25_candidates,
    merge_rounds,
    naturalness_items,
    next_round_items,
    project_title,
    skill_set_items,
    taxonomy_items,
)
from skill_assets.lib.review.label_studio_tasks import task_payload

QUERIES = [{"query_id": f"q{i}", "query": f"request {i}", "direction": "en2en", "k": 1 + i % 3,
            "skill_ids": [f"s{j}" for j in range(1 + i % 3)]} for i in range(12)]

POOL = [{"skill_id": sid, "name": name, "description": desc, "body": body, "super_domain": "dev"}
        for sid, name, desc, body in [
            ("git/rebase", "git-rebase", "Rebase a branch onto main.", "git rebase main, then resolve conflicts."),
            ("git/merge", "git-merge", "Merge a branch into main.", "git merge feature."),
            ("pdf/merge", "pdf-merge", "Merge PDF files into one.", "Combine pages of PDF files."),
            ("pdf/split", "pdf-split", "Split a PDF into pages.", "One file per page."),
            ("csv/clean", "csv-clean", "Clean a CSV file.", "Drop empty rows."),
        ]]


def test_bm25_candidates_are_the_best_lexical_skills_outside_the_truth_and_the_excluded():
    queries = [{"query_id": "q1", "query": "merge the pdf files", "skill_ids": ["pdf/merge"]},
               {"query_id": "q2", "query": "rebase my git branch", "skill_ids": ["git/rebase"]}]
    pool = skills_from_rows(POOL)
    assert bm25_candidates(queries, pool, 2) == {"q1": ["git/merge", "pdf/split"], "q2": ["git/merge", "pdf/merge"]}
    assert bm25_candidates(queries, pool, 1, exclude={"q1": {"git/merge"}}) == {"q1": ["pdf/split"],
                                                                                 "q2": ["git/merge"]}
    assert bm25_candidates(queries, [], 2) == {"q1": [], "q2": []}


def test_every_multi_skill_query_and_a_seeded_quarter_for_naturalness():
    items = skill_set_items(QUERIES, {}, 3)
    assert len(items) == sum(q["k"] >= 2 for q in QUERIES) and all(i["reviewers_needed"] == 3 for i in items)
    sample = naturalness_items(QUERIES, 0.25, seed=7, reviewers_needed=3)
    assert len(sample) == 3 and sample == naturalness_items(QUERIES, 0.25, seed=7, reviewers_needed=3)
    assert sample != naturalness_items(QUERIES, 0.25, seed=8, reviewers_needed=3)


def test_taxonomy_sample_takes_labelled_skips_per_class_only():
    skips = [{"record_id": f"x{i}", "direction": "en2en", "k": 2, "skill_ids": ["a", "b"], "rationale": "r",
              "label": "L1" if i % 2 else "L2", "rule_id": None if i == 0 else "rule", "matched_span": "m"}
             for i in range(9)]  # rows written before skip_taxonomy had a method column
    items = taxonomy_items(skips, per_class=2, seed=0, reviewers_needed=2)
    assert sorted(i["taxonomy_label"] for i in items) == ["L1", "L1", "L2", "L2"]
    assert "taxonomy:x0" not in {i["item_id"] for i in items}  # no rule matched and no method: not a label
    assert {i["taxonomy_method"] for i in items} == {"rule"}


def _skip(i: int, label: str, method: str) -> dict:
    return {"record_id": f"{method}{i}", "direction": "en2en", "k": 2, "skill_ids": ["a", "b"], "rationale": "r",
            "label": label, "method": method, "rule_id": f"{label}.en" if method == "rule" else None,
            "matched_span": "m" if method == "rule" else "", "confidence": 1.0 if method == "rule" else 0.7}


def test_taxonomy_sample_is_stratified_by_how_the_label_was_reached():
    skips = ([_skip(i, "L1", "rule") for i in range(6)] + [_skip(i, "L1", "model") for i in range(6)]
             + [_skip(i, "L2", "rule") for i in range(4)] + [_skip(i, "L2", "model") for i in range(1)]
             + [_skip(i, "unknown", "none") for i in range(5)])
    items = taxonomy_items(skips, per_class=4, seed=3, reviewers_needed=2)
    by = Counter((i["taxonomy_label"], i["taxonomy_method"]) for i in items)
    assert by == {("L1", "rule"): 2, ("L1", "model"): 2, ("L2", "rule"): 3, ("L2", "model"): 1}
    assert all(i["matched_span"] == "" for i in items if i["taxonomy_method"] == "model")
    assert items == taxonomy_items(skips, per_class=4, seed=3, reviewers_needed=2)  # seeded
    assert {i["item_id"] for i in items} != {i["item_id"] for i in taxonomy_items(skips, 4, 4, 2)}
    model_task = task_payload(next(i for i in items if i["taxonomy_method"] == "model") | {"round": 1}, {})
    assert "labelled by the model" in model_task["data"]["class_question"]


def test_next_round_once_per_disputed_item_excluding_who_saw_it():
    tasks = [t | {"created_at": None} for t in skill_set_items(QUERIES[1:3], {}, 2)]
    latest = {t["item_id"]: {"round": 1, "status": s} for t, s in zip(tasks, ("disputed", "settled"))}
    verdicts = [{"item_id": tasks[0]["item_id"], "reviewer": r} for r in ("bob", "alice")]
    later = next_round_items(tasks, latest, verdicts, reviewers_needed=1)
    assert [(t["item_id"], t["round"], t["exclude_reviewers"], t["project"]) for t in later] == [
        (tasks[0]["item_id"], 2, ["alice", "bob"], project_title("skill_set", 2))]
    now = datetime(2026, 11, 2, tzinfo=UTC)
    merged = merge_rounds(tasks, tasks, later, "pipeline", now=now)
    assert next_round_items(merged, latest, verdicts, 1) == []  # the round exists: a rerun adds nothing
    assert [t["created_at"] for t in merged if t["round"] == 2] == [now]
