"""Review stage: human review of benchmark labels in Label Studio.

``review_tasks`` decides what needs eyes and pushes it (to the server named by
``LABEL_STUDIO_URL`` / ``LABEL_STUDIO_API_KEY``, and always as JSON import files under
``review/tasks/`` beside the store); ``review_verdicts`` pulls what reviewers submitted (new and
changed annotations from the server, and any Label Studio JSON export dropped in
``review/inbox/``); ``label_agreement`` scores agreement and settles or disputes each item.
Rerunning ``review_tasks`` after ``label_agreement`` opens the next round for disputed items: the
loop runs at the reviewers' pace, so none of these assets is automated.
"""
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import polars as pl

from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore
from skill_assets.lib.common.tables import frame
from skill_assets.lib.retrieval.store_skills import skills_from_rows
from skill_assets.lib.review import items as review_items
from skill_assets.lib.review.agreement import label_agreement as agreement_rows
from skill_assets.lib.review.agreement import latest_items
from skill_assets.lib.review.label_studio_bridge import run_bridge, server_configured, server_url
from skill_assets.lib.review.label_studio_export import (
    check_export,
    current_annotations,
    merge_verdicts,
    read_inbox,
    reviewer_emails,
    verdicts_from_export,
    write_import_file,
)
from skill_assets.lib.review.label_studio_tasks import CONFIGS, task_payload
from skill_assets.lib.splits.benchmark_queries import AUDIT_FLAGS, audit_exclusions

GROUP = "review"


class ReviewTaskSettings(dg.Config):
    reviewers_per_item: int = 2  # round-1 verdicts per item (Label Studio's maximum annotations per task);
    # two of a team of three, so the third can settle a disagreement in round 2
    next_round_reviewers: int = 1  # verdicts a later round needs, from reviewers who have not seen the item
    naturalness_fraction: float = 0.25  # seeded share of test queries rated for naturalness (R3: 25 %)
    taxonomy_per_class: int = 5  # seeded labelled SKIPs per taxonomy class, rule- and model-labelled in turn
    candidates: int = 4  # BM25 skills offered per skill-set item as possibly missing
    min_k: int = 2  # skill sets of at least this many skills are reviewed (R3: every multi-skill test label)
    seed: int = 0
    body_excerpt_chars: int = 600
    exclude_flags: list[str] = list(AUDIT_FLAGS)  # as benchmark_queries: audited-out queries are not reviewed
    external_benchmark: str = ""  # review this external benchmark's queries (external_* tables) instead


def review_dir(store: DuckDBStore) -> Path:
    return store.artifacts_dir / "review"


def _stored(store: DuckDBStore, table: str) -> list[dict]:
    return store.read(table).to_dicts() if store.exists(table) else []


def _pipeline_items(config: ReviewTaskSettings, store: DuckDBStore) -> tuple[list[dict], dict[str, dict]]:
    """Round-1 items over the pipeline's test pool, and the skills their tasks show."""
    audits = {a["record_id"]: a for a in store.read("query_audit").to_dicts()}
    queries = [{**r, "query_id": r["record_id"]} for r in store.query(
        "SELECT * FROM llm_records WHERE decision = 'WRITE' AND pool = 'test' ORDER BY record_id").to_dicts()
        if not audit_exclusions(audits.get(r["record_id"]), tuple(config.exclude_flags))]
    pool = skills_from_rows(store.query(
        "SELECT s.skill_id, s.name, s.description, s.body FROM skills s JOIN skill_pools p "
        "USING (skill_id) WHERE p.pool = 'test' ORDER BY s.skill_id").iter_rows(named=True))
    multi = [q for q in queries if q["k"] >= config.min_k]
    candidates = review_items.bm25_candidates(multi, pool, config.candidates)
    skips = store.query("SELECT r.record_id, r.direction, r.k, r.skill_ids, t.label, t.method, t.rule_id, "
                        "t.matched_span, "
                        "t.rationale FROM skip_taxonomy t JOIN llm_records r USING (record_id) "
                        "WHERE r.pool = 'test' ORDER BY r.record_id").to_dicts()
    n = config.reviewers_per_item
    rows = (review_items.skill_set_items(queries, candidates, n, min_k=config.min_k)
            + review_items.naturalness_items(queries, config.naturalness_fraction, config.seed, n)
            + review_items.taxonomy_items(skips, config.taxonomy_per_class, config.seed, n))
    return rows, {s["skill_id"]: s for s in store.read("skills").to_dicts()}


def _external_items(config: ReviewTaskSettings, store: DuckDBStore) -> tuple[list[dict], dict[str, dict]]:
    """Round-1 items over an external benchmark's evaluated queries (materialize its external_* partition first)."""
    name = config.external_benchmark
    if not store.exists("external_queries"):
        raise dg.Failure(f"external benchmark {name!r}: materialize its external_skills/external_queries first")
    queries = [{**q, "direction": None} for q in store.query(
        "SELECT * FROM external_queries WHERE benchmark = ? AND evaluated ORDER BY query_id", [name]).to_dicts()]
    if not queries:
        raise dg.Failure(f"external benchmark {name!r} has no evaluated queries in the store")
    pool = store.query("SELECT skill_id, name, description, body FROM external_skills WHERE benchmark = ? "
                       "ORDER BY skill_id", [name]).to_dicts()
    source = f"external:{name}"
    n = config.reviewers_per_item
    candidates = review_items.bm25_candidates([q for q in queries if q["k"] >= config.min_k], skills_from_rows(pool),
                                              config.candidates)
    rows = (review_items.skill_set_items(queries, candidates, n, source, config.min_k)
            + review_items.naturalness_items(queries, config.naturalness_fraction, config.seed, n, source))
    return rows, {s["skill_id"]: s for s in pool}


@dg.asset(group_name=GROUP, kinds={"duckdb", "json"}, op_tags=DUCKDB_WRITER_TAG,
          deps=["llm_records", "query_audit", "skills", "skill_pools", "skip_taxonomy"])
def review_tasks(context: dg.AssetExecutionContext, config: ReviewTaskSettings, store: DuckDBStore):
    """Review items and rounds; written as Label Studio import files and pushed to the configured server.

    Reads ``label_agreement`` and ``review_verdicts`` when present (not as dependencies: they come
    after it) to open a next round for every disputed item.
    """
    source = f"external:{config.external_benchmark}" if config.external_benchmark else "pipeline"
    first, skills = (_external_items if config.external_benchmark else _pipeline_items)(config, store)
    existing = _stored(store, "review_tasks")
    later = review_items.next_round_items(existing, latest_items(_stored(store, "label_agreement")),
                                          _stored(store, "review_verdicts"), config.next_round_reviewers)
    rows = review_items.merge_rounds(existing, first, later, source, datetime.now(UTC))
    df = frame("review_tasks", rows)
    store.write("review_tasks", df)

    projects: dict[str, dict] = {}
    for t in rows:
        if t["source"] != source:
            continue
        spec = projects.setdefault(t["project"], {"title": t["project"], "label_config": CONFIGS[t["kind"]],
                                                  "maximum_annotations": t["reviewers_needed"], "tasks": []})
        spec["tasks"].append(task_payload(t, skills, config.body_excerpt_chars))
    files = [str(write_import_file(review_dir(store) / "tasks" / f"{title}.json", spec["tasks"]))
             for title, spec in projects.items()]
    pushed = run_bridge("push", {"projects": list(projects.values())})["projects"] if server_configured() else {}
    if pushed:
        context.log.info(f"pushed to {server_url()}: {pushed}")
    counts = df.group_by("kind", "round").len().sort("kind", "round").to_dicts()
    return dg.MaterializeResult(metadata=table_metadata(
        "review_tasks", df, import_files=dg.MetadataValue.json(files),
        pushed=dg.MetadataValue.json(pushed) if pushed else "no server configured (LABEL_STUDIO_URL / _API_KEY)",
        **{f"items/{c['kind']}/round_{c['round']}": c["len"] for c in counts}))


class ReviewVerdictSettings(dg.Config):
    inbox: str = ""  # folder of Label Studio JSON exports to import (default: review/inbox beside the store)


@dg.asset(group_name=GROUP, kinds={"duckdb"}, op_tags=DUCKDB_WRITER_TAG, deps=["review_tasks"])
def review_verdicts(context: dg.AssetExecutionContext, config: ReviewVerdictSettings, store: DuckDBStore):
    """Reviewers' annotations, one row per reviewer, item and round; a rerun adds only what is new, edited or retracted.

    An export that cannot be used (truncated, not an export, a field the merge cannot read) is
    left out with its reason in the log and the metadata, an inbox file set aside in
    ``review/inbox/rejected/`` with a ``.reason`` file: the other exports are still read, and a
    fixed file put back in the inbox is read next run.
    """
    tasks = {(t["item_id"], t["round"]): t for t in _stored(store, "review_tasks")}
    existing = _stored(store, "review_verdicts")
    exports: list[tuple[list[dict], str]] = []  # (tasks of one export, origin)
    unreadable: dict[str, str] = {}  # export → why it was left out

    if server_configured():
        url = server_url()
        since = {t["project"]: None for t in tasks.values()}
        for v in existing:
            title = tasks.get((v["item_id"], v["round"]), {}).get("project")
            if v["origin"] == url and title and v["task_updated_at"] and \
                    (since[title] is None or v["task_updated_at"] > since[title]):
                since[title] = v["task_updated_at"]
        for title, project in run_bridge("pull", {"since": since})["projects"].items():
            try:
                exports.append((check_export(project["tasks"], f"{url} project {title!r}"), url))
            except ValueError as exc:
                unreadable[f"{url} project {title!r}"] = str(exc)
                context.log.warning(f"pulled project left out, the others are read: {exc}")
    read, refused = read_inbox(Path(config.inbox) if config.inbox else review_dir(store) / "inbox")
    exports += read
    unreadable |= refused
    for reason in refused.values():
        context.log.warning(f"inbox export left out, the others are read: {reason}")
    users = reviewer_emails([e for e, _ in exports], existing)
    incoming: list[dict] = []
    dropped: dict[str, int] = {}
    for exported, origin in exports:
        rows, why = verdicts_from_export(exported, tasks, origin, users)
        incoming.extend(rows)
        for k, v in why.items():
            dropped[k] = dropped.get(k, 0) + v
    rows, changed = merge_verdicts(existing, incoming, current_annotations([e for e, _ in exports]), users)
    df = frame("review_verdicts", rows)
    store.write("review_verdicts", df)
    if dropped.get("seen_before") or dropped.get("unknown_task"):
        context.log.warning(f"annotations left out: {dropped}")
    counted = df.filter(pl.col("retracted_at").is_null())
    return dg.MaterializeResult(metadata=table_metadata(
        "review_verdicts", df, new_or_changed=changed, pulled=len(incoming), left_out=dg.MetadataValue.json(dropped),
        retracted=df.height - counted.height, reviewers=counted["reviewer"].n_unique(),
        unreadable_exports=dg.MetadataValue.json(unreadable)))


@dg.asset(group_name=GROUP, kinds={"duckdb"}, op_tags=DUCKDB_WRITER_TAG, deps=["review_tasks", "review_verdicts"])
def label_agreement(store: DuckDBStore):
    """Per item and round: agreement, majority, settled or disputed; per kind and round: disagreement rate and κ."""
    df = frame("label_agreement", agreement_rows(_stored(store, "review_tasks"), _stored(store, "review_verdicts")))
    store.write("label_agreement", df)
    items = df.filter(pl.col("scope") == "item")
    rounds = df.filter(pl.col("scope") == "round").select(
        "kind", "round", "n_items", "n_reviewers", "agreement", "disagreement_rate", "kappa", "kappa_method",
        "per_skill_kappa")
    return dg.MaterializeResult(metadata=table_metadata(
        "label_agreement", df, rounds=dg.MetadataValue.md(rounds.to_pandas().to_markdown(index=False)
                                                          if rounds.height else "_no verdicts yet_"),
        **{f"items/{s}": int((items["status"] == s).sum()) for s in ("pending", "settled", "disputed")}))
