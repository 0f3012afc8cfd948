"""Agreement between reviewers: per item and round (settled or disputed), per kind and round (κ).

What is compared is each verdict's ``decision``: for a skill set, ``confirm``, ``reject`` or the
exact corrected set, so item agreement there is exact-set agreement; per-skill agreement looks at
each candidate skill (shown, offered or added) and whether each reviewer's set includes it.

An item is **settled** when all its verdicts agree, or, after a later round, when a strict majority
of all its verdicts agrees; otherwise it is **disputed** and goes to a next round; it is
**pending** while its latest round has fewer verdicts than it needs.

κ per round, on that round's verdicts of items with at least two: Cohen's κ
(``sklearn.metrics.cohen_kappa_score``) when exactly two reviewers rated them, Fleiss' κ
(``statsmodels.stats.inter_rater.fleiss_kappa``) when three or more did (over the items with the
round's most common number of verdicts, as Fleiss' κ needs an equal count per item). κ is
undefined (null) when a round has one verdict per item or a single category throughout.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from itertools import combinations

import numpy as np


def kappa(ratings: dict[object, dict[str, str]]) -> tuple[float | None, str | None]:
    """κ over ``{unit: {reviewer: category}}`` and which κ it is (``cohen`` | ``fleiss``), or (None, None)."""
    units = {u: r for u, r in ratings.items() if len(r) >= 2}
    reviewers = {rv for r in units.values() for rv in r}
    if len(reviewers) == 2:
        from sklearn.metrics import cohen_kappa_score

        a, b = sorted(reviewers)
        pairs = [(r[a], r[b]) for r in units.values()]
        if len({c for p in pairs for c in p}) < 2:
            return None, None
        value = cohen_kappa_score([p[0] for p in pairs], [p[1] for p in pairs])
        return (None, None) if math.isnan(value) else (float(value), "cohen")
    if len(reviewers) >= 3:
        from statsmodels.stats.inter_rater import fleiss_kappa

        counts = Counter(len(r) for r in units.values())
        size = max(counts, key=lambda n: (counts[n], n))
        rows = [list(r.values()) for r in units.values() if len(r) == size]
        categories = sorted({c for row in rows for c in row})
        if len(categories) < 2:
            return None, None
        value = fleiss_kappa(np.array([[row.count(c) for c in categories] for row in rows]), method="fleiss")
        return (None, None) if math.isnan(value) else (float(value), "fleiss")
    return None, None


def _pair_agreement(values: list) -> float | None:
    pairs = list(combinations(values, 2))
    return sum(a == b for a, b in pairs) / len(pairs) if pairs else None


def _strict_majority(decisions: list[str]) -> str | None:
    if not decisions:
        return None
    top, n = Counter(decisions).most_common(1)[0]
    return top if n * 2 > len(decisions) else None


def candidate_units(task: dict, verdicts: list[dict]) -> list[str]:
    """Skills a reviewer of a skill-set item could include: shown, offered as missing, or added."""
    units = list(task["skill_ids"]) + list(task.get("candidate_skill_ids") or [])
    return list(dict.fromkeys(units + [s for v in verdicts for s in v["skill_ids"]]))


def _inclusions(task: dict, verdicts: list[dict]) -> dict[str, dict[str, str]]:
    """``{skill: {reviewer: "1" | "0"}}`` over the item's candidate skills; rejecting verdicts name no set."""
    sets = [v for v in verdicts if v["decision"] != "reject"]
    return {u: {v["reviewer"]: str(int(u in v["skill_ids"])) for v in sets} for u in candidate_units(task, verdicts)}


def _per_skill_agreement(task: dict, verdicts: list[dict]) -> float | None:
    per_unit = [_pair_agreement(list(r.values())) for r in _inclusions(task, verdicts).values()]
    per_unit = [a for a in per_unit if a is not None]
    return sum(per_unit) / len(per_unit) if per_unit else None


def item_rows(tasks: list[dict], verdicts: list[dict]) -> list[dict]:
    """One ``label_agreement`` item row per (item, round): the item's state after that round."""
    by_item: dict[str, list[dict]] = defaultdict(list)
    for v in verdicts:
        by_item[v["item_id"]].append(v)
    rows = []
    for task in sorted(tasks, key=lambda t: (t["item_id"], t["round"])):
        so_far = [v for v in by_item.get(task["item_id"], []) if v["round"] <= task["round"]]
        this_round = [v for v in so_far if v["round"] == task["round"]]
        decisions = [v["decision"] for v in so_far]
        majority = _strict_majority(decisions)
        if len(this_round) < task["reviewers_needed"]:
            status = "pending"
        elif len(set(decisions)) == 1 or (task["round"] > 1 and majority is not None):
            status = "settled"
        else:
            status = "disputed"
        skill_set = task["kind"] == "skill_set"
        majority_set = next((v["skill_ids"] for v in so_far if v["decision"] == majority), None) \
            if skill_set and majority not in (None, "reject") else None
        rows.append({"scope": "item", "kind": task["kind"], "round": task["round"], "item_id": task["item_id"],
                     "subject_id": task["subject_id"], "source": task["source"], "direction": task.get("direction"),
                     "k": task.get("k"), "n_reviewers": len(so_far), "n_items": 1, "majority": majority,
                     "majority_skill_ids": majority_set, "agreement": _pair_agreement(decisions),
                     "per_skill_agreement": _per_skill_agreement(task, so_far) if skill_set else None,
                     "status": status})
    return rows


def round_rows(tasks: list[dict], verdicts: list[dict], items: list[dict]) -> list[dict]:
    """One ``label_agreement`` round row per (kind, round), from that round's verdicts only."""
    task_of = {(t["item_id"], t["round"]): t for t in tasks}
    status_of = {(r["item_id"], r["round"]): r["status"] for r in items}
    groups: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for v in verdicts:
        if (v["item_id"], v["round"]) in task_of:
            groups[(v["kind"], v["round"])].append(v)
    rows = []
    for (kind, rnd), vs in sorted(groups.items()):
        per_item: dict[str, list[dict]] = defaultdict(list)
        for v in vs:
            per_item[v["item_id"]].append(v)
        decided = [status_of[(i, rnd)] for i in per_item if status_of[(i, rnd)] != "pending"]
        agreements = [a for a in (_pair_agreement([v["decision"] for v in g]) for g in per_item.values())
                      if a is not None]
        value, method = kappa({i: {v["reviewer"]: v["decision"] for v in g} for i, g in per_item.items()})
        skill_kappa, skill_agreement = None, None
        if kind == "skill_set":
            units = {(i, u): r for i, g in per_item.items() for u, r in _inclusions(task_of[(i, rnd)], g).items()}
            skill_kappa, _ = kappa(units)
            pooled = [a for a in (_pair_agreement(list(r.values())) for r in units.values()) if a is not None]
            skill_agreement = sum(pooled) / len(pooled) if pooled else None
        ratings = [int(v["answer"]) for v in vs] if kind == "naturalness" else []
        rows.append({"scope": "round", "kind": kind, "round": rnd, "n_reviewers": len({v["reviewer"] for v in vs}),
                     "n_items": len(per_item),
                     "agreement": sum(agreements) / len(agreements) if agreements else None,
                     "per_skill_agreement": skill_agreement, "disagreement_rate": decided.count("disputed") / len(decided) if decided else None,
                     "kappa": value, "kappa_method": method, "per_skill_kappa": skill_kappa,
                     "mean_rating": sum(ratings) / len(ratings) if ratings else None})
    return rows


def label_agreement(tasks: list[dict], verdicts: list[dict]) -> list[dict]:
    """Item rows then round rows: the whole ``label_agreement`` table, over the verdicts not retracted."""
    verdicts = [v for v in verdicts if v.get("retracted_at") is None]
    items = item_rows(tasks, verdicts)
    return items + round_rows(tasks, verdicts, items)


def latest_items(rows: list[dict]) -> dict[str, dict]:
    """Each item's row of its latest round."""
    latest: dict[str, dict] = {}
    for r in rows:
        if r["scope"] == "item" and (r["item_id"] not in latest or r["round"] > latest[r["item_id"]]["round"]):
            latest[r["item_id"]] = r
    return latest


def blind_pass_agrees(writer_groups: list[list[str]], reader_groups: list[list[str]], name_of: dict[str, str]) -> bool:
    """A blind second reading's verdict on one hand-labelled request: whether every group the writer labelled holds
    one of the skills the reader named from the request alone, or a skill of the same normalised name (``name_of``:
    each corpus skill's ``normalise_name``d name), since a same-name copy serves the request as well."""
    picked = {sid for group in reader_groups for sid in group}
    picked_names = {name_of[sid] for sid in picked if sid in name_of}
    return all(set(group) & picked or {name_of.get(sid) for sid in group} & picked_names for group in writer_groups)
