"""The review loop without a server: Label Studio import files out, Label Studio JSON exports in.

Two reviewers export from the Label Studio UI (``completed_by`` is a user id there); a disputed
item goes to a third in round 2; the outcome reaches benchmark_queries and the release card.
"""
import json
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest
from review_store import materialize, tasks_config, verdict_result

from skill_assets.defs.resources import DuckDBStore
from skill_assets.defs.review.checks import (
    ReleaseReviewGate,
    no_disputed_test_query_released,
    verdicts_answer_review_tasks,
)
from skill_assets.lib.common import store as store_lib

ANSWERS = {  # round 1: (alice, bob) per item; Label Studio user ids 2 and 3
    "skill_set:q1": (("confirm",), ("confirm",)),
    "skill_set:q2": (("correct", ("data/csv-validation",), (), "data/sql-optimization"),) * 2,
    "skill_set:q3": (("confirm",), ("reject",)),
    "skill_set:q4": (("reject",), ("reject",)),
}


def export(import_file, answers: dict[str, list[tuple]], stamp: datetime) -> list[dict]:
    """What Label Studio's Export → JSON gives for the imported tasks once ``answers`` are submitted."""
    tasks, ann_id = [], 100
    for i, payload in enumerate(json.loads(import_file.read_text())):
        anns = []
        for user, answer in answers.get(payload["data"]["item_id"], []):
            ann_id += 1
            anns.append({"id": ann_id, "completed_by": user, "was_cancelled": False, "lead_time": 7.5,
                         "created_at": stamp.isoformat(), "updated_at": stamp.isoformat(),
                         "result": verdict_result(payload["data"]["kind"], *answer)})
        tasks.append({"id": i + 1, "data": payload["data"], "annotations": anns, "updated_at": stamp.isoformat()})
    return tasks


def test_file_round_trip_through_two_rounds_to_the_release(upstream_store, tmp_path):
    db = upstream_store
    assert materialize(db, ["review_tasks"], tasks_config()).success
    tasks = store_lib.read_table(db, "review_tasks")
    assert sorted(tasks.group_by("kind").len().rows()) == [("naturalness", 2), ("skill_set", 4), ("taxonomy", 2)]
    task_files = {p.name: p for p in (tmp_path / "review" / "tasks").glob("*.json")}
    skill_file = task_files["skill-assets review · skill sets · round 1.json"]
    shown = json.loads(skill_file.read_text())[0]["data"]
    assert "docker-compose-debugging" in shown["skills_html"] and shown["query"].startswith("My web container")
    assert len(shown["missing_options"]) == 2 and "ops/compose-debugging" not in str(shown["missing_options"])

    inbox = tmp_path / "review" / "inbox"
    inbox.mkdir()
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    round1 = {item: [(2, a), (3, b)] for item, (a, b) in ANSWERS.items()}
    for name, path in task_files.items():
        kind_answers = round1 if "skill sets" in name else {}
        if "naturalness" in name:
            kind_answers = {t["data"]["item_id"]: [(2, ("4",)), (3, ("5",))] for t in json.loads(path.read_text())}
        if "taxonomy" in name:
            kind_answers = {t["data"]["item_id"]: [(2, ("correct",)), (3, ("correct",))]
                            for t in json.loads(path.read_text())}
        (inbox / f"export-{len(list(inbox.iterdir()))}.json").write_text(json.dumps(export(path, kind_answers, t0)))
    assert materialize(db, ["review_verdicts", "label_agreement"]).success
    verdicts = store_lib.read_table(db, "review_verdicts")
    assert verdicts.height == 16 and set(verdicts["reviewer"]) == {"label-studio-user-2", "label-studio-user-3"}
    q2 = verdicts.filter(verdicts["item_id"] == "skill_set:q2").row(0, named=True)
    assert q2["decision"] == "correct:data/pandas-cleaning,data/sql-optimization"
    assert q2["extra_skill_ids"] == ["data/csv-validation"] and q2["missing_skill_ids"] == ["data/sql-optimization"]

    agreement = store_lib.read_table(db, "label_agreement")
    rnd = agreement.filter((agreement["scope"] == "round") & (agreement["kind"] == "skill_set")).row(0, named=True)
    # alice: confirm, correct, confirm, reject; bob: confirm, correct, reject, reject → p_o = 3/4, p_e = 5/16
    assert rnd["kappa_method"] == "cohen" and rnd["kappa"] == pytest.approx(7 / 11)
    assert rnd["disagreement_rate"] == pytest.approx(1 / 4)
    nat = agreement.filter((agreement["scope"] == "round") & (agreement["kind"] == "naturalness")).row(0, named=True)
    assert nat["mean_rating"] == pytest.approx(4.5) and nat["disagreement_rate"] == 0

    # the release gate sees the disputed test query q3
    assert materialize(db, ["benchmark_queries"]).success
    store = DuckDBStore(database=str(db))
    strict = no_disputed_test_query_released(ReleaseReviewGate(mode="strict"), store)
    assert not strict.passed and strict.metadata["violations"].value == 1
    assert no_disputed_test_query_released(ReleaseReviewGate(mode="report-only"), store).severity.value == "WARN"

    # round 2 goes to someone who has not seen q3; an answer from a round-1 reviewer is not counted
    assert materialize(db, ["review_tasks"], tasks_config()).success
    round2 = store_lib.read_table(db, "review_tasks", "WHERE round = 2").row(0, named=True)
    assert round2["item_id"] == "skill_set:q3" and round2["exclude_reviewers"] == ["label-studio-user-2",
                                                                                   "label-studio-user-3"]
    r2_file = tmp_path / "review" / "tasks" / "skill-assets review · skill sets · round 2.json"
    (inbox / "round2.json").write_text(json.dumps(
        export(r2_file, {"skill_set:q3": [(3, ("reject",)), (4, ("confirm",))]}, t0 + timedelta(days=1))))
    result = materialize(db, ["review_verdicts", "label_agreement"])
    assert result.success
    pulled = result.asset_materializations_for_node("review_verdicts")[0].metadata
    assert pulled["new_or_changed"].value == 1 and pulled["left_out"].value["seen_before"] == 1

    assert materialize(db, ["benchmark_queries", "benchmark_release"]).success
    queries = {r["query_id"]: r for r in store_lib.read_table(db, "benchmark_queries").to_dicts()}
    assert {q: r["review_status"] for q, r in queries.items()} == {
        "q1": "confirmed", "q2": "corrected", "q3": "confirmed", "q4": "rejected", "q5": "unreviewed"}
    assert queries["q2"]["skill_ids"] == ["data/pandas-cleaning", "data/sql-optimization"]
    assert queries["q4"]["split"] == "excluded" and queries["q4"]["exclusion_reason"] == "review: rejected"
    assert no_disputed_test_query_released(ReleaseReviewGate(mode="strict"), store).passed
    assert verdicts_answer_review_tasks(store).passed
    orphan = store_lib.read_table(db, "review_verdicts").head(1).with_columns(pl.lit("skill_set:gone").alias("item_id"))
    store_lib.append_rows(db, "review_verdicts", orphan)
    assert not verdicts_answer_review_tasks(store).passed
    card = next((tmp_path / "releases").glob("*/README.md")).read_text()
    assert "| skill_set | 1 | 4 | 2 | 75.0 % | 25.0 % | 0.636 (cohen) |" in card
    assert "| skill_set | 2 | 1 | 1 |" in card


def test_review_tasks_from_an_external_benchmarks_test_split(tmp_path):
    import dagster as dg

    from skill_assets.definitions import defs
    from skill_assets.defs.resources import default_resources

    db = tmp_path / "store.duckdb"
    assert dg.materialize(list(defs.assets or []), selection=["external_skills", "external_queries"],
                          partition_key="demo-r3",
                          resources={**default_resources(), "store": DuckDBStore(database=str(db))}).success
    config = tasks_config(external_benchmark="demo-r3", min_k=1, naturalness_fraction=0.5)
    assert materialize(db, ["review_tasks"], config).success
    tasks = store_lib.read_table(db, "review_tasks")
    assert set(tasks["source"]) == {"external:demo-r3"} and tasks.filter(tasks["kind"] == "skill_set").height == 6
    assert tasks.filter(tasks["kind"] == "naturalness").height == 3
    payload = json.loads((tmp_path / "review" / "tasks" /
                          "skill-assets review · skill sets · round 1 · external:demo-r3.json").read_text())
    assert any("git-bisect-regressions" in t["data"]["skills_html"] for t in payload)


def test_an_unreadable_inbox_export_is_named_and_the_others_are_read(upstream_store, tmp_path, capfd):
    """A truncated export raised without its name and stopped every other export (issue 21, finding 9)."""
    db = upstream_store
    assert materialize(db, ["review_tasks"], tasks_config()).success
    skill_file = tmp_path / "review" / "tasks" / "skill-assets review · skill sets · round 1.json"
    inbox = tmp_path / "review" / "inbox"
    inbox.mkdir()
    good = json.dumps(export(skill_file, {"skill_set:q1": [(2, ("confirm",)), (3, ("confirm",))]},
                             datetime(2026, 11, 1, tzinfo=UTC)))
    (inbox / "a-truncated.json").write_text(good[: len(good) // 2])
    (inbox / "b-good.json").write_text(good)
    (inbox / "c-not-an-export.json").write_text('{"tasks": []}')
    result = materialize(db, ["review_verdicts"])
    assert result.success
    meta = result.asset_materializations_for_node("review_verdicts")[0].metadata
    assert set(meta["unreadable_exports"].value) == {"a-truncated.json", "c-not-an-export.json"}
    assert "a-truncated.json" in meta["unreadable_exports"].value["a-truncated.json"]
    assert "inbox export left out" in capfd.readouterr().err  # the reason is in the run's log
    assert store_lib.read_table(db, "review_verdicts").height == 2


def test_exports_with_fields_the_merge_cannot_use_are_set_aside_and_the_good_one_is_read(upstream_store, tmp_path,
                                                                                          capfd):
    """Issue 31, finding 8: one export timed `yesterday` failed the run with `Invalid isoformat string`, naming no
    file, and stored no verdict; a naive time beside aware ones, `round: "x"`, a list as item_id and an annotation
    without id failed it too."""
    db = upstream_store
    assert materialize(db, ["review_tasks"], tasks_config()).success
    skill_file = tmp_path / "review" / "tasks" / "skill-assets review · skill sets · round 1.json"
    inbox = tmp_path / "review" / "inbox"
    inbox.mkdir()
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    good = export(skill_file, {"skill_set:q1": [(2, ("confirm",)), (3, ("confirm",))]}, t0)
    (inbox / "a-good.json").write_text(json.dumps(good))

    def bad(name: str, damage) -> None:
        tasks = export(skill_file, {"skill_set:q2": [(2, ("confirm",)), (3, ("reject",))]}, t0 + timedelta(hours=1))
        q2 = next(t for t in tasks if t["data"]["item_id"] == "skill_set:q2")
        damage(q2)
        (inbox / f"{name}.json").write_text(json.dumps(tasks))

    bad("b-yesterday", lambda t: t.update(updated_at="yesterday"))
    bad("c-naive-time", lambda t: t["annotations"][0].update(updated_at="2026-11-01T11:00:00"))
    bad("d-round-x", lambda t: t["data"].update(round="x"))
    bad("e-item-id-list", lambda t: t["data"].update(item_id=["skill_set:q2"]))
    bad("f-annotation-without-id", lambda t: t["annotations"][0].pop("id"))
    result = materialize(db, ["review_verdicts"])
    assert result.success
    verdicts = store_lib.read_table(db, "review_verdicts")
    assert verdicts.height == 2 and set(verdicts["item_id"]) == {"skill_set:q1"}
    meta = result.asset_materializations_for_node("review_verdicts")[0].metadata
    refused = meta["unreadable_exports"].value
    names = ["b-yesterday.json", "c-naive-time.json", "d-round-x.json", "e-item-id-list.json",
             "f-annotation-without-id.json"]
    assert sorted(refused) == names and all(name in refused[name] for name in names)
    assert sorted(p.name for p in inbox.glob("*.json")) == ["a-good.json"]
    assert sorted(p.name for p in (inbox / "rejected").iterdir()) == sorted(names + [f"{n}.reason" for n in names])
    assert "no timezone" in (inbox / "rejected" / "c-naive-time.json.reason").read_text()
    log = capfd.readouterr().err
    assert all(f"inbox export left out, the others are read: {name}" in log for name in names)
