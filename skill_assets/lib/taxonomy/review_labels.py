"""Reviewers' taxonomy verdicts as labelled rationales for the model's next fit.

The review loop samples labelled SKIPs per class, rule- and model-labelled in turn, and asks "is this the right class?" (``review_tasks``
kind ``taxonomy``); a reviewer answers ``correct`` or ``incorrect`` and names the right class in the
comment. A settled item becomes one labelled rationale: the class shown when the majority said
correct (``confirmed``), or the class the majority of its ``incorrect`` reviewers named
(``corrected``). An item settled as incorrect with no agreed class teaches nothing and is left out.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from skill_assets.lib.common.language import detect_language
from skill_assets.lib.taxonomy.rules import TAXONOMY_CLASSES

_CLASS = re.compile("|".join(sorted((c for c in TAXONOMY_CLASSES if c != "unknown"), key=len, reverse=True)))


def named_class(comment: str | None) -> str | None:
    """The taxonomy class a reviewer's comment names (``domain_mismatch``, or ``domain mismatch``)."""
    m = _CLASS.search(re.sub(r"[\s-]+", "_", (comment or "").lower()))
    return m.group(0) if m else None


def review_labelled_rationales(tasks: list[dict], verdicts: list[dict], latest: dict[str, dict]) -> list[dict]:
    """One row per settled pipeline taxonomy item: rationale, label, lang, item_id, outcome, shown_label and
    shown_method;
    ``latest`` is each review item's latest agreement row (``lib.review.agreement.latest_items``)."""
    shown = {t["item_id"]: t for t in tasks if t["kind"] == "taxonomy"}
    named: dict[str, Counter] = {}
    for v in verdicts:
        if v["kind"] == "taxonomy" and v["decision"] == "incorrect" and not v.get("retracted_at"):
            if cls := named_class(v.get("comment")):
                named.setdefault(v["item_id"], Counter())[cls] += 1
    rows = []
    for item_id, r in sorted(latest.items()):
        task = shown.get(item_id)
        if r["kind"] != "taxonomy" or r["status"] != "settled" or task is None or not task.get("rationale"):
            continue
        if r["majority"] == "correct":
            label, outcome = task["taxonomy_label"], "confirmed"
        else:
            votes = named.get(item_id, Counter()).most_common(2)
            if not votes or (len(votes) > 1 and votes[0][1] == votes[1][1]):
                continue
            label, outcome = votes[0][0], "corrected"
        rows.append({"item_id": item_id, "rationale": task["rationale"], "label": label,
                     "lang": detect_language(task["rationale"]), "outcome": outcome,
                     "shown_label": task["taxonomy_label"],
                     "shown_method": task.get("taxonomy_method") or "rule"})  # older tasks: rule hits only
    return rows


def write_review_labels(path: Path, rows: list[dict]) -> Path:
    """The rows as ``lib/taxonomy/data/review_labels.jsonl`` reads them (one JSON object a line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    return path
