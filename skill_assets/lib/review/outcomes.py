"""What the review decides for each benchmark query, and the agreement figures a dataset card reports.

A query's ``review_status`` follows its skill-set item: ``confirmed`` or ``corrected`` (the
reviewers' majority set replaces the ground truth) once settled, ``rejected`` when the reviewers
reject the request or its naturalness item settles as unnatural; everything else (not sampled,
pending, disputed) stays ``unreviewed``. Only items built from the pipeline's own queries decide
anything here; an external benchmark's review is reported, not applied.
"""
from __future__ import annotations

import polars as pl

from skill_assets.lib.review.agreement import latest_items

STATUSES = ("unreviewed", "confirmed", "corrected", "rejected")


def review_outcomes(agreement_rows: list[dict], source: str = "pipeline") -> dict[str, dict]:
    """``{query_id: {"status", "skill_ids"}}`` for every query the settled review decides."""
    out: dict[str, dict] = {}
    latest = [r for r in latest_items(agreement_rows).values() if r["source"] == source and r["status"] == "settled"]
    for r in latest:
        if r["kind"] == "skill_set":
            if r["majority"] == "reject":
                out[r["subject_id"]] = {"status": "rejected", "skill_ids": None}
            elif r["majority"] == "confirm":
                out[r["subject_id"]] = {"status": "confirmed", "skill_ids": None}
            else:
                out[r["subject_id"]] = {"status": "corrected", "skill_ids": list(r["majority_skill_ids"])}
    for r in latest:
        if r["kind"] == "naturalness" and r["majority"] == "unnatural":
            out[r["subject_id"]] = {"status": "rejected", "skill_ids": None}
    return out


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def agreement_markdown(rounds: pl.DataFrame) -> str:
    """The agreement table of a dataset card, from ``label_agreement``'s round rows."""
    if rounds.is_empty():
        return "_No review verdicts yet: every query is `unreviewed`._"
    lines = ["| kind | round | items | reviewers | agreement | disagreement | κ | per-skill κ | mean naturalness |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rounds.sort("kind", "round").iter_rows(named=True):
        method = f" ({r['kappa_method']})" if r["kappa_method"] else ""
        lines.append(f"| {r['kind']} | {r['round']} | {r['n_items']} | {r['n_reviewers']} | {_pct(r['agreement'])} | "
                     f"{_pct(r['disagreement_rate'])} | {_num(r['kappa'])}{method} | {_num(r['per_skill_kappa'])} | "
                     f"{_num(r['mean_rating'])} |")
    return "\n".join(lines) + (
        "\n\nAgreement: share of reviewer pairs with the same decision (skill sets: the exact same set). "
        "Disagreement: share of the round's completed items still disputed after it. κ: Cohen's for two reviewers, "
        "Fleiss' for three or more; per-skill κ on whether each candidate skill belongs to the set.")
