"""Label Studio's JSON import and export files, and export → ``review_verdicts`` rows.

The server path and the file path meet here: the bridge pulls a project's changes as Label
Studio's own JSON export, and a team without a server exports the same file from the UI (Export →
JSON) into the inbox. Either way one parser turns annotations into verdicts, keyed by annotation,
so re-reading a file or re-pulling a task adds nothing twice and an edited annotation replaces
its earlier version.
"""
from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MIN_NATURAL = 3  # a naturalness rating at or above this reads as a request a real user could send


def write_import_file(path: Path, payloads: list[dict]) -> Path:
    """Tasks in Label Studio's JSON import format (a list of ``{"data": ...}``), for Import → Upload."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payloads, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def read_export_file(path: Path) -> list[dict]:
    """A Label Studio JSON export: a list of tasks, each with ``data`` and ``annotations``."""
    tasks = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(tasks, list):
        raise ValueError(f"{path}: not a Label Studio JSON export (expected a list of tasks)")
    return tasks


def _timestamp(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _values(result: list[dict], from_name: str, key: str) -> list:
    return [v for r in result if r.get("from_name") == from_name for v in r.get("value", {}).get(key, [])]


def reviewer_name(completed_by, users: dict[int, str] | None = None) -> str:
    """The annotator's e-mail: the bridge writes ``{"id", "email"}``, a UI export has only the user id."""
    if isinstance(completed_by, dict):
        return completed_by.get("email") or f"label-studio-user-{completed_by.get('id')}"
    return (users or {}).get(completed_by) or f"label-studio-user-{completed_by}"


def skill_set_decision(answer: str, shown: list[str], extra: list[str], missing: list[str]) -> tuple[str, list[str]]:
    """(decision, the reviewer's set): a correction that changes nothing is a confirmation."""
    if answer == "reject":
        return "reject", []
    chosen = shown if answer == "confirm" else [s for s in shown if s not in extra] + \
        [m for m in dict.fromkeys(missing) if m not in shown]
    if sorted(chosen) == sorted(shown):
        return "confirm", list(shown)
    return "correct:" + ",".join(sorted(chosen)), chosen


def parse_annotation(task: dict, annotation: dict, reviewer: str) -> dict:
    """One verdict from one annotation of a review task (``task`` is the ``review_tasks`` row)."""
    result = annotation.get("result") or []
    comment = " ".join(_values(result, "comment", "text")).strip() or None
    row = {"skill_ids": [], "missing_skill_ids": [], "extra_skill_ids": [], "comment": comment}
    if task["kind"] == "naturalness":
        ratings = [r["value"]["rating"] for r in result if r.get("from_name") == "naturalness"]
        if not ratings:
            raise ValueError("naturalness annotation without a rating")
        answer = str(int(ratings[0]))
        decision = "natural" if int(ratings[0]) >= MIN_NATURAL else "unnatural"
    else:
        choices = _values(result, "verdict", "choices")
        if not choices:
            raise ValueError("annotation without a verdict")
        answer = choices[0]
        decision = answer
        if task["kind"] == "skill_set":
            extra = _values(result, "extra", "choices")
            typed = [s for t in _values(result, "missing_other", "text") for s in re.split(r"[\s,]+", t) if s]
            missing = _values(result, "missing", "choices") + typed
            decision, chosen = skill_set_decision(answer, list(task["skill_ids"]), extra, missing)
            row |= {"skill_ids": chosen, "missing_skill_ids": [m for m in missing if m not in task["skill_ids"]],
                    "extra_skill_ids": [e for e in extra if e in task["skill_ids"]] if answer == "correct" else []}
    return row | {"answer": answer, "decision": decision, "reviewer": reviewer}


def verdicts_from_export(exported: list[dict], tasks: dict[tuple[str, int], dict], origin: str,
                         users: dict[int, str] | None = None) -> tuple[list[dict], dict[str, int]]:
    """Verdict rows of every submitted annotation, and counts of what was left out and why.

    Left out: skipped (cancelled) annotations, tasks that are not review items of this store
    (``unknown_task``), malformed answers (``malformed``) and annotations by a reviewer the round
    excludes because they saw the item before (``seen_before``).
    """
    rows, dropped = [], {"skipped": 0, "unknown_task": 0, "malformed": 0, "seen_before": 0}
    for t in exported:
        data = t.get("data", {})
        task = tasks.get((data.get("item_id"), int(data.get("round", 1))))
        for ann in t.get("annotations") or []:
            if ann.get("was_cancelled"):
                dropped["skipped"] += 1
                continue
            if task is None:
                dropped["unknown_task"] += 1
                continue
            reviewer = reviewer_name(ann.get("completed_by"), users)
            if reviewer in (task.get("exclude_reviewers") or []):
                dropped["seen_before"] += 1
                continue
            try:
                verdict = parse_annotation(task, ann, reviewer)
            except (ValueError, KeyError, TypeError):
                dropped["malformed"] += 1
                continue
            rows.append(verdict | {
                "item_id": task["item_id"], "round": task["round"], "kind": task["kind"],
                "subject_id": task["subject_id"], "annotation_id": f"{origin}#{ann['id']}", "origin": origin,
                "lead_time_s": ann.get("lead_time"), "annotated_at": _timestamp(ann.get("updated_at") or ann.get("created_at")),
                "task_updated_at": _timestamp(t.get("updated_at"))})
    return rows, dropped


def merge_verdicts(existing: list[dict], incoming: list[dict]) -> tuple[list[dict], int]:
    """One verdict per (item, round, reviewer), the latest annotation winning; returns (rows, new or changed).

    Keyed this way, a reviewer who edits an answer replaces it, and an export read twice adds nothing.
    """
    merged = {(v["item_id"], v["round"], v["reviewer"]): v for v in existing}
    changed = 0
    for v in incoming:
        key = (v["item_id"], v["round"], v["reviewer"])
        old = merged.get(key)
        if old is not None and (v["annotated_at"] or _EPOCH) <= (old["annotated_at"] or _EPOCH):
            continue
        changed += old is None or (v["decision"], v["comment"]) != (old["decision"], old["comment"])
        merged[key] = v
    return sorted(merged.values(), key=lambda v: (v["item_id"], v["round"], v["reviewer"])), changed
