"""label_agreement against κ computed by hand, and the settled / disputed / pending rule."""
from datetime import UTC, datetime

import pytest

from skill_assets.lib.review.agreement import item_rows, kappa, label_agreement, latest_items
from skill_assets.lib.review.outcomes import agreement_markdown, review_outcomes


def task(item: str, round_: int = 1, needed: int = 2, shown=("s1", "s2"), candidates=(), kind="skill_set") -> dict:
    return {"item_id": item, "round": round_, "kind": kind, "subject_id": item.split(":")[-1], "source": "pipeline",
            "direction": "en2en", "k": len(shown), "skill_ids": list(shown), "candidate_skill_ids": list(candidates),
            "reviewers_needed": needed}


def verdict(item: str, reviewer: str, decision: str, skills=("s1", "s2"), round_: int = 1, answer=None) -> dict:
    return {"item_id": item, "round": round_, "kind": "skill_set", "reviewer": reviewer, "decision": decision,
            "answer": answer or decision.split(":")[0], "skill_ids": [] if decision == "reject" else list(skills),
            "annotated_at": datetime(2026, 1, 1, tzinfo=UTC)}


def test_cohen_kappa_matches_the_hand_computed_value():
    # p_o = 4/6, both reviewers 4 confirm / 2 reject: p_e = 5/9, κ = (2/3 - 5/9) / (4/9) = 0.25
    a = ["confirm", "confirm", "confirm", "reject", "confirm", "reject"]
    b = ["confirm", "confirm", "reject", "reject", "confirm", "confirm"]
    value, method = kappa({i: {"a": x, "b": y} for i, (x, y) in enumerate(zip(a, b))})
    assert method == "cohen" and value == pytest.approx(0.25)


def test_fleiss_kappa_for_three_reviewers_two_verdicts_per_item():
    # P̄ = (1 + 1 + 0 + 1) / 4 = 3/4; p = (5/8, 3/8): P_e = 17/32; κ = (3/4 - 17/32) / (15/32) = 7/15
    ratings = {1: {"alice": "confirm", "bob": "confirm"}, 2: {"bob": "confirm", "carol": "confirm"},
               3: {"alice": "confirm", "carol": "reject"}, 4: {"alice": "reject", "bob": "reject"}}
    value, method = kappa(ratings)
    assert method == "fleiss" and value == pytest.approx(7 / 15)


def test_kappa_is_undefined_for_one_category_or_one_verdict_per_item():
    assert kappa({1: {"a": "x", "b": "x"}, 2: {"a": "x", "b": "x"}}) == (None, None)
    assert kappa({1: {"a": "x"}, 2: {"b": "y"}}) == (None, None)


def test_per_skill_kappa_over_shown_offered_and_added_skills():
    # units a: 1,1,0,0 | 1,1,0 and b: 1,0,1,0 | 1,1,0 → p_o = 5/7, p_e = 25/49, κ = 10/24
    tasks = [task("skill_set:q1", shown=("s1", "s2"), candidates=("s3", "s4")),
             task("skill_set:q2", shown=("t1", "t2"), candidates=("t3",))]
    verdicts = [verdict("skill_set:q1", "a", "confirm"), verdict("skill_set:q1", "b", "correct:s1,s3", ("s1", "s3")),
                verdict("skill_set:q2", "a", "confirm", ("t1", "t2")), verdict("skill_set:q2", "b", "confirm", ("t1", "t2"))]
    rows = label_agreement(tasks, verdicts)
    summary = next(r for r in rows if r["scope"] == "round")
    assert summary["per_skill_kappa"] == pytest.approx(10 / 24)
    assert summary["kappa"] == pytest.approx(0.0) and summary["kappa_method"] == "cohen"  # p_o = p_e = 1/2
    assert summary["agreement"] == pytest.approx(0.5) and summary["disagreement_rate"] == pytest.approx(0.5)
    q1 = next(r for r in rows if r["item_id"] == "skill_set:q1")
    assert q1["status"] == "disputed" and q1["majority"] is None and q1["per_skill_agreement"] == pytest.approx(0.5)


def test_a_disputed_item_settles_by_majority_after_a_second_round():
    tasks = [task("skill_set:q1"), task("skill_set:q1", round_=2, needed=1)]
    round1 = [verdict("skill_set:q1", "alice", "confirm"), verdict("skill_set:q1", "carol", "reject")]
    rows = item_rows(tasks, round1)
    assert [(r["round"], r["status"]) for r in rows] == [(1, "disputed"), (2, "pending")]
    rows = item_rows(tasks, round1 + [verdict("skill_set:q1", "bob", "confirm", round_=2)])
    latest = latest_items(rows)["skill_set:q1"]
    assert (latest["status"], latest["majority"], latest["n_reviewers"]) == ("settled", "confirm", 3)
    assert latest["majority_skill_ids"] == ["s1", "s2"]


def test_unanimous_correction_becomes_the_queries_ground_truth():
    tasks = [task("skill_set:q1"), task("skill_set:q2"), task("naturalness:q3", kind="naturalness")]
    fixed = ("s1", "s9")
    verdicts = [verdict("skill_set:q1", r, "correct:s1,s9", fixed) for r in ("a", "b")] + \
               [verdict("skill_set:q2", r, "confirm") for r in ("a", "b")] + \
               [verdict("naturalness:q3", r, "unnatural", (), answer="2") | {"kind": "naturalness"} for r in ("a", "b")]
    outcomes = review_outcomes(label_agreement(tasks, verdicts))
    assert outcomes == {"q1": {"status": "corrected", "skill_ids": ["s1", "s9"]},
                        "q2": {"status": "confirmed", "skill_ids": None},
                        "q3": {"status": "rejected", "skill_ids": None}}


def test_card_table_names_each_kappa():
    import polars as pl

    rows = [r for r in label_agreement([task("skill_set:q1")], [verdict("skill_set:q1", "a", "confirm"),
                                                                 verdict("skill_set:q1", "b", "reject")])
            if r["scope"] == "round"]
    text = agreement_markdown(pl.DataFrame(rows))
    assert "| skill_set | 1 | 1 | 2 | 0.0 % | 100.0 % |" in text
