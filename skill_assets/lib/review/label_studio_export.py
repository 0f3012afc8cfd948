"""Label Studio's JSON import and export files, and export → ``review_verdicts`` rows.

The server path and the file path meet here: the bridge pulls a project's changes as Label
Studio's own JSON export, and a team without a server exports the same file from the UI (Export →
JSON) into the inbox. Either way one parser turns annotations into verdicts, one per item, round
and reviewer, so re-reading a file or re-pulling a task adds nothing twice and an edited
annotation replaces its earlier version. A reviewer is one person however their answers arrive:
the server names them by e-mail, a UI export only by user id, so the id is kept with every
verdict and names it by the e-mail wherever one is known. An export is a snapshot of its tasks:
a counted verdict whose annotation a newer snapshot of its task no longer holds (deleted, or
skipped after all) is retracted — kept, with ``retracted_at``, and no longer counted.

An export is checked whole before any of it is used (``check_export``): one with a field the
merge cannot use (a time that is not ISO 8601 or has no timezone, a round that is no number, an
item id that is no string, an annotation without an id) is refused with the field named. An inbox
file refused so is set aside in ``rejected/`` beside it with a ``.reason`` file (``read_inbox``),
and the other exports are still read.
"""
from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MIN_NATURAL = 3  # a naturalness rating at or above this reads as a request a real user could send
REJECTED = "rejected"  # inbox subfolder where refused exports are set aside, each with a .reason file


def write_import_file(path: Path, payloads: list[dict]) -> Path:
    """Tasks in Label Studio's JSON import format (a list of ``{"data": ...}``), for Import → Upload."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payloads, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def read_export_file(path: Path) -> list[dict]:
    """A Label Studio JSON export: a list of tasks, each with ``data`` and ``annotations``.

    ValueError naming the file when it is truncated, not JSON, not shaped as an export or holds a
    field the merge cannot use (``check_export``), so the caller can set it aside with the reason
    and read the others.
    """
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError(f"{path.name}: not readable as JSON, truncated or damaged ({exc})") from None
    return check_export(tasks, path.name)


def check_export(tasks: object, name: str) -> list[dict]:
    """``tasks`` when every field the merge reads is usable; else ValueError naming ``name`` and the field.

    Checked: the shape (a list of tasks, each with a ``data`` object and a list of annotation
    objects), ``data.item_id`` a string, ``data.round`` a whole number, every time (task
    ``updated_at``, annotation ``created_at`` / ``updated_at``) ISO 8601 with a timezone (times
    without one cannot be ordered against the others), every annotation an ``id``, a numeric
    ``lead_time`` and a ``completed_by`` whose ``email`` is a string. An answer that cannot be
    parsed is not the export's fault: ``verdicts_from_export`` counts it as malformed.
    """
    if not isinstance(tasks, list) or not all(
            isinstance(t, dict) and isinstance(t.get("data", {}), dict) and isinstance(t.get("annotations") or [], list)
            and all(isinstance(a, dict) for a in t.get("annotations") or []) for t in tasks):
        raise ValueError(f"{name}: not a Label Studio JSON export (expected a list of tasks, each with "
                         "`data` and a list of `annotations`)")
    for i, t in enumerate(tasks):
        data = t.get("data", {})
        where = f"{name}: task {t.get('id', f'#{i + 1}')!r}"
        if data.get("item_id") is not None and not isinstance(data["item_id"], str):
            raise ValueError(f"{where}: data.item_id {data['item_id']!r} is not a string")
        round_ = data.get("round", 1)
        whole = isinstance(round_, int) or (isinstance(round_, str) and round_.isdecimal())
        if isinstance(round_, bool) or not whole:
            raise ValueError(f"{where}: data.round {round_!r} is not a whole number")
        _check_time(t.get("updated_at"), f"{where}: updated_at")
        for ann in t.get("annotations") or []:
            aid = ann.get("id")
            if isinstance(aid, bool) or not isinstance(aid, int | str):
                raise ValueError(f"{where}: an annotation has no id (id: {aid!r})")
            at = f"{where}: annotation {aid!r}"
            for field in ("created_at", "updated_at"):
                _check_time(ann.get(field), f"{at}: {field}")
            lead = ann.get("lead_time")
            if lead is not None and (isinstance(lead, bool) or not isinstance(lead, int | float)):
                raise ValueError(f"{at}: lead_time {lead!r} is not a number")
            who = ann.get("completed_by")
            if isinstance(who, dict) and not isinstance(who.get("email") or "", str):
                raise ValueError(f"{at}: completed_by.email {who['email']!r} is not a string")
    return tasks


def _check_time(value: object, where: str) -> None:
    if not value:
        return
    try:
        stamp = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        stamp = None
    if stamp is None:
        raise ValueError(f"{where} {value!r} is not an ISO 8601 time")
    if stamp.tzinfo is None:
        raise ValueError(f"{where} {value!r} has no timezone, so it cannot be ordered against the other times")


def set_aside(path: Path, reason: str) -> Path:
    """Move a refused inbox export to ``rejected/`` beside it, with ``<name>.reason`` saying why; its new path.

    A file of the same name set aside before is replaced (the newer attempt is the one to fix).
    """
    folder = path.parent / REJECTED
    folder.mkdir(exist_ok=True)
    (folder / f"{path.name}.reason").write_text(reason + "\n", encoding="utf-8")
    os.replace(path, folder / path.name)
    return folder / path.name


def read_inbox(inbox: Path) -> tuple[list[tuple[list[dict], str]], dict[str, str]]:
    """Every export in ``inbox`` as (tasks, file name), and file name → reason for each one refused.

    A refused file is set aside in ``inbox/rejected/`` with its reason, so the inbox holds only
    what was read; put it back, fixed, to read it.
    """
    exports: list[tuple[list[dict], str]] = []
    refused: dict[str, str] = {}
    for path in sorted(inbox.glob("*.json")) if inbox.is_dir() else []:
        try:
            exports.append((read_export_file(path), path.name))
        except (ValueError, OSError) as exc:
            reason = str(exc) if isinstance(exc, ValueError) else f"{path.name}: cannot be read ({exc})"
            try:
                moved = set_aside(path, reason)
                refused[path.name] = f"{reason} (set aside: {moved})"
            except OSError as move:
                refused[path.name] = f"{reason} (could not be set aside: {move})"
    return exports, refused


def _timestamp(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _values(result: list[dict], from_name: str, key: str) -> list:
    return [v for r in result if r.get("from_name") == from_name for v in r.get("value", {}).get(key, [])]


def reviewer_id(completed_by) -> int | None:
    """The annotator's Label Studio user id: the bridge writes ``{"id", "email"}``, a UI export the id alone."""
    uid = completed_by.get("id") if isinstance(completed_by, dict) else completed_by
    return uid if isinstance(uid, int) else None


def reviewer_name(completed_by, users: dict[int, str] | None = None) -> str:
    """The annotator's e-mail (the annotation's, else ``users``' for its id), else ``label-studio-user-<id>``."""
    email = completed_by.get("email") if isinstance(completed_by, dict) else None
    uid = reviewer_id(completed_by)
    return email or (users or {}).get(uid) or f"label-studio-user-{uid}"


def reviewer_emails(exports: list[list[dict]], verdicts: list[dict]) -> dict[int, str]:
    """User id → e-mail, from every annotation that carries both and every verdict named by e-mail."""
    users = {v["reviewer_id"]: v["reviewer"] for v in verdicts
             if v.get("reviewer_id") is not None and v["reviewer"] != f"label-studio-user-{v['reviewer_id']}"}
    for exported in exports:
        for t in exported:
            for ann in t.get("annotations") or []:
                who = ann.get("completed_by")
                if isinstance(who, dict) and who.get("email") and reviewer_id(who) is not None:
                    users[reviewer_id(who)] = who["email"]
    return users


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
            reviewer, uid = reviewer_name(ann.get("completed_by"), users), reviewer_id(ann.get("completed_by"))
            if {reviewer, f"label-studio-user-{uid}"} & set(task.get("exclude_reviewers") or []):
                dropped["seen_before"] += 1
                continue
            try:
                verdict = parse_annotation(task, ann, reviewer)
            except (ValueError, KeyError, TypeError, AttributeError):
                dropped["malformed"] += 1
                continue
            rows.append(verdict | {
                "reviewer_id": uid, "item_id": task["item_id"], "round": task["round"], "kind": task["kind"],
                "subject_id": task["subject_id"], "annotation_id": f"{origin}#{ann['id']}", "origin": origin,
                "lead_time_s": ann.get("lead_time"), "annotated_at": _timestamp(ann.get("updated_at") or ann.get("created_at")),
                "task_updated_at": _timestamp(t.get("updated_at")), "retracted_at": None})
    return rows, dropped


def current_annotations(exports: list[list[dict]]) -> dict[tuple[str, int], tuple[datetime, set[str]]]:
    """Per (item, round), its newest snapshot among ``exports``: the task's ``updated_at`` and the Label
    Studio ids of the annotations it holds, skipped ones left out (tasks without ``updated_at`` cannot be ordered).

    Label Studio touches a task's ``updated_at`` when one of its annotations is deleted, so a
    newer snapshot is one that may have lost an annotation.
    """
    current: dict[tuple[str, int], tuple[datetime, set[str]]] = {}
    for exported in exports:
        for t in exported:
            data, stamp = t.get("data", {}), _timestamp(t.get("updated_at"))
            key = (data.get("item_id"), int(data.get("round", 1)))
            if stamp is not None and (key not in current or stamp > current[key][0]):
                current[key] = (stamp, {str(a.get("id")) for a in t.get("annotations") or []
                                        if not a.get("was_cancelled")})
    return current


def _newer(v: dict, old: dict | None) -> bool:
    return old is None or (v["annotated_at"] or _EPOCH) > (old["annotated_at"] or _EPOCH)


def merge_verdicts(existing: list[dict], incoming: list[dict],
                   current: dict[tuple[str, int], tuple[datetime, set[str]]] | None = None,
                   users: dict[int, str] | None = None) -> tuple[list[dict], int]:
    """One verdict per (item, round, reviewer), the latest annotation winning; returns (rows, how many changed).

    Keyed this way, a reviewer who edits an answer replaces it, and an export read twice adds
    nothing. Reviewers are first named by e-mail where ``users`` (id → e-mail) knows them, so
    the same person's answers from the server and from a UI export are one verdict. A counted
    verdict whose annotation its task's newer snapshot in ``current`` lacks is retracted. Changed:
    verdicts new, with a new decision or comment, or retracted.
    """
    def named(v: dict) -> dict:
        return v | {"reviewer": (users or {}).get(v.get("reviewer_id")) or v["reviewer"]}

    merged: dict[tuple, dict] = {}
    for v in map(named, existing):
        key = (v["item_id"], v["round"], v["reviewer"])
        if _newer(v, merged.get(key)):
            merged[key] = v
    changed = 0
    for v in map(named, incoming):
        key = (v["item_id"], v["round"], v["reviewer"])
        old = merged.get(key)
        if not _newer(v, old):
            continue
        changed += old is None or (v["decision"], v["comment"]) != (old["decision"], old["comment"])
        merged[key] = v
    for key, v in merged.items():
        stamp, present = (current or {}).get((v["item_id"], v["round"]), (None, set()))
        if v.get("retracted_at") is None and stamp is not None and (v["task_updated_at"] or _EPOCH) < stamp \
                and v["annotation_id"].rsplit("#", 1)[-1] not in present:
            merged[key] = v | {"retracted_at": stamp, "task_updated_at": stamp}
            changed += 1
    return sorted(merged.values(), key=lambda v: (v["item_id"], v["round"], v["reviewer"])), changed
