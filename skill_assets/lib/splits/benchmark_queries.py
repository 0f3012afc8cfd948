"""Freeze audited WRITE queries into benchmark splits, with the SKIP partners of each query.

A query's split is its pool (pools were fixed before sampling, so no query straddles them).
SKIP partners are the skills of SKIP records drawn from the same pool and the same
neighbourhood as the query's set, minus the query's own skills: plausible-looking skills that a
generator judged *not* to belong together — the graded "1" label of the R3 reranker. They are
never evaluation ground truth.
"""
from __future__ import annotations

import random
from collections import defaultdict

from skill_assets.lib.common.hashing import digest

MAX_SKIP_PARTNERS = 4
AUDIT_FLAGS = ("duplicate_exact", "duplicate_normalised", "name_leakage", "length_out_of_window",
               "language_mismatch", "empty_or_refusal")


def skip_partners_by_neighbourhood(skip_records: list[dict]) -> dict[tuple[str, str], list[str]]:
    partners: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in skip_records:
        if r["k"] >= 2:
            partners[(r["pool"], r["neighbourhood"])].update(r["skill_ids"])
    return {key: sorted(v) for key, v in partners.items()}


def audit_exclusions(audit: dict | None, exclude_flags: tuple[str, ...] = AUDIT_FLAGS) -> list[str]:
    """The flags that exclude a WRITE record from the splits (``not_audited`` when it has no audit row)."""
    return ["not_audited"] if audit is None else [f for f in exclude_flags if audit.get(f)]


def build_benchmark_queries(write_records: list[dict], audits: dict[str, dict], skip_records: list[dict],
                            skill_neighbourhoods: dict[str, dict], dev_fraction: float = 0.0, seed: int = 0,
                            exclude_flags: tuple[str, ...] = AUDIT_FLAGS) -> list[dict]:
    """One row per WRITE record; rows raising any of ``exclude_flags`` get split ``excluded`` and name them.

    ``skill_neighbourhoods`` maps skill id → {"sub_cluster", "super_domain"} so a k=1 query can
    find SKIP partners in its skill's sub-cluster.
    """
    partners_by_hood = skip_partners_by_neighbourhood(skip_records)
    rng = random.Random(seed)
    rows = []
    for r in write_records:
        audit = audits.get(r["record_id"])
        raised = audit_exclusions(audit, exclude_flags)
        passed = not raised
        split = r["pool"] if passed else "excluded"
        if split == "train" and dev_fraction > 0 and rng.random() < dev_fraction:
            split = "dev"
        hoods = {r["neighbourhood"]} if r["k"] >= 2 else set()
        for sid in r["skill_ids"]:
            hood = skill_neighbourhoods.get(sid, {})
            hoods.add(f"sub_cluster:{hood.get('sub_cluster')}")
            hoods.add(f"super_domain:{hood.get('super_domain')}")
        partners = sorted({p for h in hoods for p in partners_by_hood.get((r["pool"], h), [])} - set(r["skill_ids"]))
        partners.sort(key=lambda p: digest(f"{seed}:{r['record_id']}:{p}"))
        rows.append({
            "query_id": r["record_id"], "split": split, "query": r["query"],
            "skill_ids": r["skill_ids"], "direction": r["direction"], "k": r["k"], "style": r["style"],
            "generator_model": r["model"], "skip_partners": partners[:MAX_SKIP_PARTNERS],
            "exclusion_reason": ", ".join(raised), "review_status": "unreviewed",
        })
    return rows


def apply_review(rows: list[dict], outcomes: dict[str, dict]) -> list[dict]:
    """The human review's outcome on the split rows: status, corrected ground truth, rejected queries excluded.

    ``outcomes`` maps query id → ``{"status", "skill_ids"}`` (``lib.review.outcomes``); a corrected
    query takes the reviewers' set (and its size as k), a rejected one leaves the splits.
    """
    for row in rows:
        outcome = outcomes.get(row["query_id"])
        if outcome is None:
            continue
        row["review_status"] = outcome["status"]
        if outcome["status"] == "corrected":
            row["skill_ids"], row["k"] = outcome["skill_ids"], len(outcome["skill_ids"])
        elif outcome["status"] == "rejected" and row["split"] != "excluded":
            row["split"], row["exclusion_reason"] = "excluded", "review: rejected"
    return rows
