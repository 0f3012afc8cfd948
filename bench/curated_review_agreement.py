"""Put the curated benchmark's second pass through the review loop and report the agreement.

    python bench/curated_review_agreement.py --review-raw review_raw.jsonl \\
        --pool ../shared/corpus/github-skills/repos --out agreement.md [--workdir DIR]

Every test request was labelled by its writer and again, blind, by a second reviewer
(``review_raw.jsonl``: ``writer_gt_groups`` / ``reviewer_gt_groups``, groups of interchangeable
copies). The two label sets go through the same loop as any review, by Label Studio's file
round-trip: ``review_tasks`` rows showing the writer's set (copy groups unified first,
``lib.review.copy_groups``) with the four best BM25 skills of the pool outside every labelled
group offered as possibly missing, written as a Label Studio import file; each person's labels
written as their annotations into a Label Studio JSON export of those tasks (the writer confirms
their set; the reviewer confirms it or marks extra and missing skills); the export dropped in the
inbox; then the real ``review_verdicts`` and ``label_agreement`` assets on a scratch store.
Writes the Markdown snippet for the dataset card and prints one JSON line of figures.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import polars as pl

from skill_assets.definitions import defs
from skill_assets.defs.resources import DuckDBStore, default_resources
from skill_assets.lib.common import store as store_lib
from skill_assets.lib.common.tables import frame
from skill_assets.lib.retrieval.pools import Skill, load_pool
from skill_assets.lib.review.agreement import kappa, latest_items
from skill_assets.lib.review.copy_groups import unify_copy_groups
from skill_assets.lib.review.items import bm25_candidates, next_round_items, skill_set_items
from skill_assets.lib.review.label_studio_export import write_import_file
from skill_assets.lib.review.label_studio_tasks import task_payload

SOURCE = "external:curated"
WRITER, REVIEWER = "writer", "reviewer"  # the two raters are the two roles; names go in the comment


def pool_rows(skills: list[Skill]) -> dict[str, dict]:
    """The pool's skills by id as the Label Studio task cards read them."""
    return {s.id: {"skill_id": s.id, "name": s.name, "description": s.description, "body": s.body} for s in skills}


def annotation(n: int, person: str, role: str, result: list[dict], stamp: str) -> dict:
    return {"id": n, "completed_by": {"id": n, "email": role}, "was_cancelled": False, "lead_time": None,
            "created_at": stamp, "updated_at": stamp,
            "result": result + [{"from_name": "comment", "to_name": "query", "type": "textarea",
                                 "value": {"text": [f"{role} {person}"]}}]}


def reviewer_result(task: dict, mine: list[str]) -> list[dict]:
    """The reviewer's labels as they would click them on the task: confirm, or extra / missing marks."""
    if sorted(mine) == sorted(task["skill_ids"]):
        return [{"from_name": "verdict", "to_name": "query", "type": "choices", "value": {"choices": ["confirm"]}}]
    extra = [s for s in task["skill_ids"] if s not in mine]
    missing = [s for s in mine if s not in task["skill_ids"]]
    offered = [s for s in missing if s in task["candidate_skill_ids"]]
    typed = [s for s in missing if s not in offered]
    result = [{"from_name": "verdict", "to_name": "query", "type": "choices", "value": {"choices": ["correct"]}}]
    for name, values in (("extra", extra), ("missing", offered)):
        if values:
            result.append({"from_name": name, "to_name": "query", "type": "choices", "value": {"choices": values}})
    if typed:
        result.append({"from_name": "missing_other", "to_name": "query", "type": "textarea",
                       "value": {"text": ["\n".join(typed)]}})
    return result


def materialize_agreement(db: Path) -> None:
    """The real review_verdicts (reads the inbox) and label_agreement assets on the scratch store."""
    result = dg.materialize(list(defs.assets or []), selection=["review_verdicts", "label_agreement"],
                            resources={**default_resources(), "store": DuckDBStore(database=str(db))})
    assert result.success


def card_snippet(rnd: dict, by_slice: pl.DataFrame, named: tuple[float | None, str | None], n: int,
                 resolution: dict[str, int], still_disputed: int, pool_size: int) -> str:
    pct = lambda x: f"{100 * x:.1f} %"  # noqa: E731
    lines = [
        "## Label agreement (second pass on every test request)",
        "",
        f"Every one of the {n} test requests was labelled twice: by the writer who wrote it and, in a second "
        "pass, by another team member. Figures from skill-assets' review loop (`label_agreement`, round 1, "
        "the two label sets as two reviewers):",
        "",
        "| figure | value |",
        "|---|---|",
        f"| requests | {rnd['n_items']} |",
        f"| exact-set agreement (same required skills, copies unified) | {pct(rnd['agreement'])} |",
        f"| per-skill agreement (each candidate skill in or out) | {pct(rnd['per_skill_agreement'])} |",
        f"| Cohen's κ, per-skill decisions (writer vs reviewer) | {rnd['per_skill_kappa']:.3f} |",
        "| Fleiss' κ, per-skill decisions (the 5 writers and 3 reviewers as raters) | "
        + (f"{named[0]:.3f} |" if named[0] is not None else "– |"),
        f"| requests disputed after round 1 (sets differ) | {round(rnd['disagreement_rate'] * rnd['n_items'])} "
        f"({pct(rnd['disagreement_rate'])}) |",
        f"| still disputed after round 2 (a third look by someone who had not labelled it) | {still_disputed} |",
        "",
        "By direction and k (exact-set agreement; `sql/review_summary.sql` on the review store):",
        "",
        by_slice.select("direction", "k", "items", "agreement_pct", "per_skill_agreement_pct", "disputed")
        .to_pandas().to_markdown(index=False),
        "",
        "Resolution of the second pass (`review_raw.jsonl`): "
        + ", ".join(f"{k} {v}" for k, v in sorted(resolution.items())) + ".",
        "",
        "How computed: copy groups of the two label sets are unified first (groups sharing a member are "
        "one required skill), so listing other copies is agreement. Each request became a `review_tasks` "
        f"row showing the writer's set, with the 4 best BM25 skills of the {pool_size:,}-skill pool outside every "
        "labelled group offered as possibly missing; both label sets went through Label Studio's JSON "
        "export/import round-trip as annotations (writer: confirms; reviewer: confirms or marks extra and "
        "missing skills) into `review_verdicts`, and `label_agreement` computed the figures. Per-skill "
        "decisions cover the request's candidate skills: both sets and the 4 offered skills, so a skill "
        "neither labelled counts as agreement only if it was a plausible BM25 candidate. Cohen's κ is "
        "`sklearn.metrics.cohen_kappa_score` over those decisions with the two roles as raters; Fleiss' "
        "κ (`statsmodels`) treats the 5 writers and 3 reviewers as raters, 2 per request. A κ over the "
        "item-level verdict is not reported: the writer always confirms their own set, which makes it 0 "
        "by construction. A request disputed in round 1 went to round 2, whose verdict is the lead "
        "engineer's third look recorded in `final_gt_groups` (resolution `reviewer`), by the loop's "
        "`next_round_items`.",
        "",
        "Reproduce: `python bench/curated_review_agreement.py --review-raw review_raw.jsonl "
        "--pool ../shared/corpus/github-skills/repos --out agreement.md`.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--review-raw", type=Path, required=True)
    ap.add_argument("--pool", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--candidates", type=int, default=4)
    args = ap.parse_args()
    started = time.monotonic()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="curated-review-"))
    db = work / "store.duckdb"
    rows = [json.loads(line) for line in args.review_raw.read_text(encoding="utf-8").splitlines() if line.strip()]
    skills = load_pool(args.pool).skills  # parseable skills by id (skill folder relative to the pool root)
    pool = pool_rows(skills)

    queries, mine, members = [], {}, {}
    for r in rows:
        writer_set, reviewer_set, all_members = unify_copy_groups(r["writer_gt_groups"], r["reviewer_gt_groups"])
        queries.append({"query_id": r["id"], "query": r["query"], "skill_ids": writer_set, "direction": r["direction"],
                        "k": len(writer_set)})
        mine[r["id"]], members[r["id"]] = reviewer_set, all_members
    unknown = sorted({s for m in members.values() for s in m} - set(pool))
    if unknown:
        sys.exit(f"{len(unknown)} labelled skill ids are not in the pool, e.g. {unknown[:5]}")
    candidates = bm25_candidates(queries, skills, args.candidates, exclude=members)
    now = datetime.now(UTC)
    tasks = [t | {"created_at": now} for t in skill_set_items(queries, candidates, 2, SOURCE, min_k=1)]
    store_lib.replace_table(db, "review_tasks", frame("review_tasks", tasks))
    import_file = write_import_file(work / "review" / "tasks" / f"{tasks[0]['project']}.json",
                                    [task_payload(t, pool) for t in tasks])

    stamp, exported, by_id = now.isoformat(), [], {r["id"]: r for r in rows}
    for n, (task, payload) in enumerate(zip(tasks, json.loads(import_file.read_text(encoding="utf-8")))):
        raw = by_id[task["subject_id"]]
        confirm = [{"from_name": "verdict", "to_name": "query", "type": "choices", "value": {"choices": ["confirm"]}}]
        exported.append({"id": n + 1, "data": payload["data"], "updated_at": stamp, "annotations": [
            annotation(2 * n + 1, raw["writer"], WRITER, confirm, stamp),
            annotation(2 * n + 2, raw["reviewer"], REVIEWER, reviewer_result(task, mine[task["subject_id"]]), stamp)]})
    inbox = work / "review" / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    (inbox / "curated-second-pass.json").write_text(json.dumps(exported, ensure_ascii=False), encoding="utf-8")

    materialize_agreement(db)
    # round 2: a disputed request goes to someone who has not seen it; the third look is the lead's final set
    latest = latest_items(store_lib.read_table(db, "label_agreement").to_dicts())
    second = next_round_items(tasks, latest, store_lib.read_table(db, "review_verdicts").to_dicts(), 1)
    second = [t for t in second if by_id[t["subject_id"]]["resolution"] != "agreed"]
    if second:
        store_lib.replace_table(db, "review_tasks", frame("review_tasks", tasks + [t | {"created_at": now} for t in second]))
        r2_file = write_import_file(work / "review" / "tasks" / f"{second[0]['project']}.json",
                                    [task_payload(t, pool) for t in second])
        exported2 = []
        for n, (task, payload) in enumerate(zip(second, json.loads(r2_file.read_text(encoding="utf-8")))):
            raw = by_id[task["subject_id"]]
            _, lead_set, _ = unify_copy_groups(raw["writer_gt_groups"], raw["final_gt_groups"])
            exported2.append({"id": n + 1, "data": payload["data"], "updated_at": stamp, "annotations": [
                annotation(n + 1, "lead", "lead", reviewer_result(task, lead_set), stamp)]})
        (inbox / "curated-third-look.json").write_text(json.dumps(exported2, ensure_ascii=False), encoding="utf-8")
        materialize_agreement(db)
    agreement = store_lib.read_table(db, "label_agreement")
    rnd = agreement.filter((pl.col("scope") == "round") & (pl.col("round") == 1)).row(0, named=True)
    still_disputed = sum(r["status"] == "disputed" for r in latest_items(agreement.to_dicts()).values())
    by_slice = store_lib.query(db, (Path(__file__).resolve().parents[1] / "sql" / "review_summary.sql").read_text()
                               ).filter(pl.col("round") == 1)
    verdicts = store_lib.read_table(db, "review_verdicts", "WHERE round = 1").to_dicts()
    names = {(r["id"], role): r[role] for r in rows for role in (WRITER, REVIEWER)}
    task_of = {t["item_id"]: t for t in tasks}
    named_units: dict = {}
    for v in verdicts:
        task = task_of[v["item_id"]]
        for unit in dict.fromkeys(task["skill_ids"] + task["candidate_skill_ids"] + mine[task["subject_id"]]):
            named_units.setdefault((v["item_id"], unit), {})[names[(task["subject_id"], v["reviewer"])]] = \
                str(int(unit in v["skill_ids"]))
    named = kappa(named_units)
    resolution: dict[str, int] = {}
    for r in rows:
        resolution[r["resolution"]] = resolution.get(r["resolution"], 0) + 1
    args.out.write_text(card_snippet(rnd, by_slice, named, len(rows), resolution, still_disputed, len(pool)), encoding="utf-8")
    print(json.dumps({"requests": rnd["n_items"], "exact_set_agreement": rnd["agreement"],
                      "per_skill_agreement": rnd["per_skill_agreement"], "cohen_kappa_per_skill": rnd["per_skill_kappa"],
                      "fleiss_kappa_per_skill_named": named[0], "disputed_round_1": rnd["disagreement_rate"],
                      "disputed_after_round_2": still_disputed,
                      "store": str(db), "out": str(args.out), "wall_s": round(time.monotonic() - started, 1)}))


if __name__ == "__main__":
    main()
