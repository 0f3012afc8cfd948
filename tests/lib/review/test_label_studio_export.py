"""Label Studio exports → verdicts: one reviewer is one person, a deleted answer is retracted, a bad file is named.

Issue 21: the server names an annotator by e-mail, a UI export by user id, and the merge counted
them as two reviewers (finding 1); a deleted annotation stayed counted forever (finding 2); a
truncated export raised without naming the file (finding 9).
"""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from skill_assets.lib.review.agreement import label_agreement
from skill_assets.lib.review.label_studio_export import (
    current_annotations,
    merge_verdicts,
    read_export_file,
    read_inbox,
    reviewer_emails,
    verdicts_from_export,
)

T0 = datetime(2026, 11, 1, tzinfo=UTC)
TASK = {"item_id": "naturalness:q1", "round": 1, "kind": "naturalness", "subject_id": "q1", "source": "pipeline",
        "reviewers_needed": 2, "exclude_reviewers": []}
TASKS = {("naturalness:q1", 1): TASK}


def export(annotations: list[tuple[int, object, int]], stamp: datetime, cancelled: tuple[int, ...] = ()) -> list[dict]:
    """One task's export: (annotation id, completed_by, rating) per annotation, the task touched at ``stamp``."""
    return [{"id": 1, "data": {"item_id": "naturalness:q1", "round": 1}, "updated_at": stamp.isoformat(),
             "annotations": [{"id": aid, "completed_by": who, "was_cancelled": aid in cancelled,
                              "created_at": T0.isoformat(), "updated_at": T0.isoformat(),
                              "result": [{"from_name": "naturalness", "value": {"rating": rating}}]}
                             for aid, who, rating in annotations]}]


def pull(existing: list[dict], exports: list[tuple[list[dict], str]]) -> tuple[list[dict], int]:
    """What ``review_verdicts`` does with the exports of one run."""
    users = reviewer_emails([e for e, _ in exports], existing)
    incoming = [v for e, origin in exports for v in verdicts_from_export(e, TASKS, origin, users)[0]]
    return merge_verdicts(existing, incoming, current_annotations([e for e, _ in exports]), users)


def test_one_reviewer_is_one_person_from_the_server_and_a_ui_export():
    server = export([(7, {"id": 3, "email": "bob@review.test"}, 4), (8, {"id": 2, "email": "alice@review.test"}, 5)],
                    T0)
    ui = export([(7, 3, 4), (8, 2, 5)], T0)
    rows, _ = pull([], [(server, "http://ls"), (ui, "export.json")])
    assert sorted(v["reviewer"] for v in rows) == ["alice@review.test", "bob@review.test"]
    # the UI export read first (ids only), the server pulled a run later: still two people, named by e-mail
    first, _ = pull([], [(ui, "export.json")])
    assert sorted(v["reviewer"] for v in first) == ["label-studio-user-2", "label-studio-user-3"]
    rows, changed = pull(first, [(server, "http://ls")])
    assert sorted(v["reviewer"] for v in rows) == ["alice@review.test", "bob@review.test"] and changed == 0
    (row,) = [r for r in label_agreement([TASK], rows) if r["scope"] == "round"]
    assert row["n_reviewers"] == 2
    # an item excluding bob by e-mail excludes him however his answer arrives
    excluded = {("naturalness:q1", 1): TASK | {"exclude_reviewers": ["bob@review.test"]}}
    _, dropped = verdicts_from_export(ui, excluded, "export.json", reviewer_emails([server], []))
    assert dropped["seen_before"] == 1


@pytest.mark.parametrize("origin", ["http://ls", "export-2.json"])
def test_deleted_or_skipped_annotation_retracts_the_verdict(origin):
    both = export([(101, 2, 4), (102, 3, 5)], T0)
    rows, _ = pull([], [(both, "export-1.json")])
    item = lambda rows: next(r for r in label_agreement([TASK], rows) if r["scope"] == "item")  # noqa: E731
    assert item(rows)["status"] == "settled"
    # bob deletes his answer: Label Studio touches the task, whose newer export lacks it
    later = T0 + timedelta(hours=1)
    rows, changed = pull(rows, [(both, "export-1.json"), (export([(101, 2, 4)], later), origin)])
    assert changed == 1 and len(rows) == 2  # kept in history ...
    retracted = {v["reviewer"]: v["retracted_at"] for v in rows}
    assert retracted == {"label-studio-user-2": None, "label-studio-user-3": later}
    assert (item(rows)["status"], item(rows)["n_reviewers"]) == ("pending", 1)  # ... not counted
    again, changed = pull(rows, [(both, "export-1.json"), (export([(101, 2, 4)], later), origin)])
    assert again == rows and changed == 0
    # alice skips the task after all: her verdict is retracted too
    rows, _ = pull(rows, [(export([(101, 2, 4)], later + timedelta(hours=1), cancelled=(101,)), origin)])
    assert all(v["retracted_at"] is not None for v in rows)


@pytest.mark.parametrize("text", ['[{"id": 1, "data": {"item_id": "x"}, "annotations": [{"id"', '{"tasks": []}',
                                  '[1, 2]', '[{"data": {}, "annotations": {"id": 1}}]'])
def test_a_truncated_or_malformed_export_is_named(text, tmp_path):
    path = tmp_path / "broken-export.json"
    path.write_text(text)
    with pytest.raises(ValueError, match="broken-export.json"):
        read_export_file(path)


def _annotation(t: list[dict]) -> dict:
    return t[0]["annotations"][0]


#: (what is wrong, how to break a good export, what the reason names); each raised deep in the merge, naming no file
BAD_FIELDS = [
    ("task_time_yesterday", lambda t: t[0].update(updated_at="yesterday"), "updated_at 'yesterday'"),
    ("annotation_time_yesterday", lambda t: _annotation(t).update(updated_at="yesterday"), "updated_at 'yesterday'"),
    ("time_without_timezone", lambda t: _annotation(t).update(updated_at="2026-11-01T10:00:00"), "no timezone"),
    ("round_not_a_number", lambda t: t[0]["data"].update(round="x"), "data.round 'x'"),
    ("item_id_a_list", lambda t: t[0]["data"].update(item_id=["naturalness:q1"]), "data.item_id"),
    ("annotation_without_id", lambda t: _annotation(t).pop("id"), "has no id"),
    ("email_a_list", lambda t: _annotation(t).update(completed_by={"id": 2, "email": ["a@b"]}), "completed_by.email"),
    ("lead_time_text", lambda t: _annotation(t).update(lead_time="7s"), "lead_time '7s'"),
]


@pytest.mark.parametrize("name,damage,named", BAD_FIELDS, ids=[b[0] for b in BAD_FIELDS])
def test_an_export_with_a_field_the_merge_cannot_use_is_refused_with_the_field_named(name, damage, named, tmp_path):
    """Issue 31, finding 8: `yesterday` as a time raised `Invalid isoformat string` in the merge, naming no file;
    a naive time beside an aware one, `round: "x"`, a list as item_id or an annotation without id raised too."""
    exported = export([(7, 2, 4)], T0)
    damage(exported)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(exported))
    with pytest.raises(ValueError, match=f"{name}.json") as refused:
        read_export_file(path)
    assert named in str(refused.value)


def test_a_refused_inbox_export_is_set_aside_with_its_reason_and_the_others_are_read(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a-good.json").write_text(json.dumps(export([(7, 2, 4)], T0)))
    later = export([(8, 3, 5)], T0)
    later[0]["updated_at"] = "yesterday"
    (inbox / "b-yesterday.json").write_text(json.dumps(later))
    exports, refused = read_inbox(inbox)
    assert [origin for _, origin in exports] == ["a-good.json"]
    assert list(refused) == ["b-yesterday.json"] and "'yesterday'" in refused["b-yesterday.json"]
    assert sorted(p.name for p in inbox.glob("*.json")) == ["a-good.json"]
    assert json.loads((inbox / "rejected" / "b-yesterday.json").read_text()) == later  # moved, unchanged
    reason = (inbox / "rejected" / "b-yesterday.json.reason").read_text()
    assert "b-yesterday.json" in reason and "updated_at 'yesterday' is not an ISO 8601 time" in reason
    rows, _ = pull([], exports)
    assert [v["reviewer"] for v in rows] == ["label-studio-user-2"]
    assert read_inbox(inbox)[1] == {}  # the next run reads the good one again and nothing else
