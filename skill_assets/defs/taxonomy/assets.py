"""Taxonomy stage: classify every SKIP rationale with the bilingual rule set."""

import dagster as dg

from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore
from skill_assets.lib.common.tables import frame
from skill_assets.lib.taxonomy.rules import RULESET_VERSION, classify_rationale


@dg.asset(group_name="taxonomy", kinds={"duckdb"}, deps=["llm_records"], op_tags=DUCKDB_WRITER_TAG)
def skip_taxonomy(store: DuckDBStore):
    """Rejection class, rule and matched span of every SKIP; shares reported over k ≥ 2."""
    skips = store.query("SELECT record_id, direction, k, rationale FROM llm_records WHERE decision = 'SKIP' "
                        "ORDER BY record_id").to_dicts()
    rows = []
    for s in skips:
        label = classify_rationale(s["rationale"])
        rows.append({**s, "label": label.label, "rule_id": label.rule_id, "matched_span": label.matched_span,
                     "ruleset_version": RULESET_VERSION})
    df = frame("skip_taxonomy", rows)
    store.write("skip_taxonomy", df)
    multi = df.filter(df["k"] >= 2)
    shares = multi.group_by("label").len().to_dicts()
    coverage = (1 - multi.filter(multi["label"] == "unknown").height / multi.height) if multi.height else float("nan")
    return dg.MaterializeResult(metadata=table_metadata(
        "skip_taxonomy", df, ruleset_version=RULESET_VERSION, coverage_k2plus=coverage,
        **{f"share/{r['label']}": round(r["len"] / multi.height, 3) for r in shares}))
