"""Taxonomy stage: classify every SKIP rationale (settled rules, then the shipped model), and turn
reviewers' taxonomy verdicts into labelled rationales for the model's next fit."""

import dagster as dg

from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore
from skill_assets.lib.common.tables import frame
from skill_assets.lib.review.agreement import latest_items
from skill_assets.lib.taxonomy.classify import classify_rationales, shipped_model
from skill_assets.lib.taxonomy.review_labels import review_labelled_rationales, write_review_labels
from skill_assets.lib.taxonomy.rules import RULESET_VERSION


@dg.asset(group_name="taxonomy", kinds={"duckdb"}, deps=["llm_records"], op_tags=DUCKDB_WRITER_TAG)
def skip_taxonomy(store: DuckDBStore):
    """Rejection class of every SKIP and how it was reached (rule_id or model, confidence); shares over k ≥ 2."""
    skips = store.query("SELECT record_id, direction, k, rationale FROM llm_records WHERE decision = 'SKIP' "
                        "ORDER BY record_id").to_dicts()
    labels = classify_rationales([s["rationale"] or "" for s in skips])
    rows = [{**s, "label": x.label, "method": x.method, "rule_id": x.rule_id, "matched_span": x.matched_span,
             "confidence": x.confidence, "model_version": x.model_version, "ruleset_version": RULESET_VERSION}
            for s, x in zip(skips, labels)]
    df = frame("skip_taxonomy", rows)
    store.write("skip_taxonomy", df)
    multi = df.filter(df["k"] >= 2)
    shares = multi.group_by("label").len().to_dicts()
    methods = multi.group_by("method").len().to_dicts()
    coverage = (1 - multi.filter(multi["label"] == "unknown").height / multi.height) if multi.height else float("nan")
    model = shipped_model()
    return dg.MaterializeResult(metadata=table_metadata(
        "skip_taxonomy", df, ruleset_version=RULESET_VERSION, model_version=model.version if model else "none",
        coverage_k2plus=coverage, **{f"share/{r['label']}": round(r["len"] / multi.height, 3) for r in shares},
        **{f"method/{r['method']}": round(r["len"] / multi.height, 3) for r in methods}))


@dg.asset(group_name="taxonomy", kinds={"duckdb", "json"}, deps=["label_agreement"], op_tags=DUCKDB_WRITER_TAG)
def taxonomy_review_labels(store: DuckDBStore):
    """Settled taxonomy review items as labelled rationales (confirmed class, or the reviewers' correction).

    Written beside the store as ``taxonomy/review_labels.jsonl``: copy it over
    ``lib/taxonomy/data/review_labels.jsonl`` and rerun ``python -m skill_assets.lib.taxonomy.fitting``
    for the next training round (a fit reads only committed data, so a rebuild stays reproducible).
    """
    stored = {t: store.read(t).to_dicts() if store.exists(t) else [] for t in
              ("review_tasks", "review_verdicts", "label_agreement")}
    rows = review_labelled_rationales(stored["review_tasks"], stored["review_verdicts"],
                                      latest_items(stored["label_agreement"]))
    df = frame("taxonomy_review_labels", rows)
    store.write("taxonomy_review_labels", df)
    path = write_review_labels(store.artifacts_dir / "taxonomy" / "review_labels.jsonl", rows)
    return dg.MaterializeResult(metadata=table_metadata(
        "taxonomy_review_labels", df, export=str(path),
        corrected=sum(r["outcome"] == "corrected" for r in rows), confirmed=sum(r["outcome"] == "confirmed" for r in rows)))
