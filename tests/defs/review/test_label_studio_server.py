"""The whole review loop against a real Label Studio: projects and tasks pushed through the SDK, three
reviewers annotating through its API, incremental pulls, κ checked by hand, a disputed item's round 2.
"""
import json

import pytest
from review_store import materialize, tasks_config, verdict_result

from skill_assets.lib.common import store as store_lib
from skill_assets.lib.review.items import project_title

ROUND1 = {  # Fleiss by hand: P̄ = 3/4, p = (5/8, 3/8), P_e = 17/32 → κ = 7/15
    "skill_set:q1": {"alice": "confirm", "bob": "confirm"},
    "skill_set:q2": {"bob": "confirm", "carol": "confirm"},
    "skill_set:q3": {"alice": "confirm", "carol": "reject"},
    "skill_set:q4": {"alice": "reject", "bob": "reject"},
}


def project_tasks(server, title: str) -> dict[str, int]:
    """item id → Label Studio task id of the project titled ``title``."""
    pid = next(p["id"] for p in server.api("GET", "/api/projects", params={"page_size": 100}).json()["results"]
               if p["title"] == title)
    tasks = server.api("GET", "/api/tasks", params={"project": pid, "page_size": 100}).json()["tasks"]
    return {t["data"]["item_id"]: t["id"] for t in tasks}


def annotate(server, token: str, task_id: int, answer: str) -> int:
    return server.api("POST", f"/api/tasks/{task_id}/annotations/", token,
                      json={"result": verdict_result("skill_set", answer), "lead_time": 4.2}).json()["id"]


def metadata(result, asset: str) -> dict:
    return {k: v.value for k, v in result.asset_materializations_for_node(asset)[0].metadata.items()}


def test_review_loop_against_a_real_label_studio(label_studio, upstream_store, monkeypatch):
    label_studio.reset()
    db = upstream_store
    monkeypatch.setenv("LABEL_STUDIO_URL", label_studio.url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", label_studio.admin_token)

    result = materialize(db, ["review_tasks"], tasks_config())
    assert result.success
    pushed = metadata(result, "review_tasks")["pushed"]
    assert pushed[project_title("skill_set", 1)]["imported"] == 4
    assert pushed[project_title("taxonomy", 1)]["imported"] == 2
    again = metadata(materialize(db, ["review_tasks"], tasks_config()), "review_tasks")["pushed"]
    assert again[project_title("skill_set", 1)] | {"project_id": 0} == {"project_id": 0, "imported": 0, "present": 4}

    tokens = {name: label_studio.sign_up(f"{name}@review.test") for name in ("alice", "bob", "carol")}
    task_ids = project_tasks(label_studio, project_title("skill_set", 1))
    annotation_ids = {(item, who): annotate(label_studio, tokens[who], task_ids[item], answer)
                      for item, answers in ROUND1.items() for who, answer in answers.items()}

    result = materialize(db, ["review_verdicts", "label_agreement"])
    assert result.success and metadata(result, "review_verdicts")["new_or_changed"] == 8
    verdicts = store_lib.read_table(db, "review_verdicts")
    assert set(verdicts["reviewer"]) == {"alice@review.test", "bob@review.test", "carol@review.test"}
    assert verdicts["origin"].unique().to_list() == [label_studio.url]
    agreement = store_lib.read_table(db, "label_agreement", "WHERE scope = 'round' AND kind = 'skill_set'")
    row = agreement.row(0, named=True)
    assert (row["kappa_method"], row["n_reviewers"], row["n_items"]) == ("fleiss", 3, 4)
    assert row["kappa"] == pytest.approx(7 / 15) and row["disagreement_rate"] == pytest.approx(1 / 4)

    # nothing new: the pull asks only for tasks updated since the last one and imports nothing
    meta = metadata(materialize(db, ["review_verdicts"]), "review_verdicts")
    assert (meta["pulled"], meta["new_or_changed"]) == (0, 0)

    # the disputed item goes to round 2 for the one reviewer who has not seen it (bob)
    assert materialize(db, ["review_tasks"], tasks_config()).success
    round2 = store_lib.read_table(db, "review_tasks", "WHERE round = 2").to_dicts()
    assert [(t["item_id"], t["exclude_reviewers"], t["reviewers_needed"]) for t in round2] == [
        ("skill_set:q3", ["alice@review.test", "carol@review.test"], 1)]
    r2_task = project_tasks(label_studio, project_title("skill_set", 2))["skill_set:q3"]
    annotate(label_studio, tokens["bob"], r2_task, "confirm")
    annotate(label_studio, tokens["alice"], r2_task, "reject")  # saw it in round 1: not counted
    # and bob changes his mind on q4 in round 1: the edit is pulled, replacing his verdict
    label_studio.api("PATCH", f"/api/annotations/{annotation_ids[('skill_set:q4', 'bob')]}/", tokens["bob"],
                     json={"result": verdict_result("skill_set", "confirm")})

    result = materialize(db, ["review_verdicts", "label_agreement"])
    meta = metadata(result, "review_verdicts")
    # (an edit makes Label Studio touch the project's other tasks too, so they are pulled again but change nothing)
    assert (meta["new_or_changed"], meta["left_out"]["seen_before"]) == (2, 1)
    items = {(r["item_id"], r["round"]): r for r in store_lib.read_table(db, "label_agreement", "WHERE scope = 'item'")
             .to_dicts()}
    q3 = items[("skill_set:q3", 2)]
    assert (q3["status"], q3["majority"], q3["n_reviewers"]) == ("settled", "confirm", 3)
    assert items[("skill_set:q4", 1)]["status"] == "disputed"  # reject vs confirm now
    assert materialize(db, ["benchmark_queries"]).success
    status = dict(store_lib.query(db, "SELECT query_id, review_status FROM benchmark_queries").rows())
    assert status == {"q1": "confirmed", "q2": "confirmed", "q3": "confirmed", "q4": "unreviewed", "q5": "unreviewed"}


def test_one_reviewer_however_answers_arrive_and_a_deleted_answer_is_retracted(label_studio, upstream_store,
                                                                               monkeypatch, tmp_path):
    """Issue 21: the server pull names reviewers by e-mail, the UI's Export → JSON by user id, and both were
    counted (2 people, 4 reviewers; finding 1); an answer deleted in Label Studio stayed counted (finding 2)."""
    label_studio.reset()
    db = upstream_store
    monkeypatch.setenv("LABEL_STUDIO_URL", label_studio.url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", label_studio.admin_token)
    assert materialize(db, ["review_tasks"], tasks_config()).success
    # people the session's server has not seen yet (it is shared with the test above)
    tokens = {name: label_studio.sign_up(f"{name}@review.test") for name in ("dora", "erin")}
    task_ids = project_tasks(label_studio, project_title("skill_set", 1))
    ids = {who: annotate(label_studio, tokens[who], task_ids["skill_set:q1"], "confirm") for who in tokens}
    # the owner also drops the UI's export of the same project into the inbox (completed_by: user ids)
    pid = next(p["id"] for p in label_studio.api("GET", "/api/projects", params={"page_size": 100}).json()["results"]
               if p["title"] == project_title("skill_set", 1))
    ui_export = label_studio.api("GET", f"/api/projects/{pid}/export", params={"exportType": "JSON"}).json()
    assert {type(a["completed_by"]) for t in ui_export for a in t["annotations"]} == {int}
    (tmp_path / "review" / "inbox").mkdir(parents=True)
    (tmp_path / "review" / "inbox" / "ui-export.json").write_text(json.dumps(ui_export))

    assert materialize(db, ["review_verdicts", "label_agreement"]).success
    verdicts = store_lib.read_table(db, "review_verdicts")
    assert sorted(verdicts["reviewer"]) == ["dora@review.test", "erin@review.test"]
    q1 = store_lib.read_table(db, "label_agreement", "WHERE scope = 'item' AND item_id = 'skill_set:q1'").row(
        0, named=True)
    assert (q1["status"], q1["n_reviewers"]) == ("settled", 2)

    # erin deletes her answer; the old UI export in the inbox still holds it
    assert label_studio.api("DELETE", f"/api/annotations/{ids['erin']}/", tokens["erin"]).ok
    result = materialize(db, ["review_verdicts", "label_agreement"])
    assert result.success and metadata(result, "review_verdicts")["retracted"] == 1
    verdicts = {v["reviewer"]: v for v in store_lib.read_table(db, "review_verdicts").to_dicts()}
    assert verdicts["erin@review.test"]["retracted_at"] is not None  # kept in history ...
    assert verdicts["dora@review.test"]["retracted_at"] is None
    q1 = store_lib.read_table(db, "label_agreement", "WHERE scope = 'item' AND item_id = 'skill_set:q1'").row(
        0, named=True)
    assert (q1["status"], q1["n_reviewers"]) == ("pending", 1)  # ... and not counted
