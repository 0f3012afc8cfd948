"""Splits stage: audited WRITE queries become the benchmark, with SKIP partners attached."""

import dagster as dg
import polars as pl

from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore
from skill_assets.lib.common.tables import frame
from skill_assets.lib.review.outcomes import agreement_markdown, review_outcomes
from skill_assets.lib.splits.benchmark_queries import AUDIT_FLAGS, apply_review, build_benchmark_queries
from skill_assets.lib.splits.release import export_release


class SplitSettings(dg.Config):
    dev_fraction: float = 0.0
    seed: int = 0
    exclude_flags: list[str] = list(AUDIT_FLAGS)


@dg.asset(group_name="splits", kinds={"duckdb"}, deps=["query_audit", "llm_records", "skill_clusters", "label_agreement"],
          op_tags=DUCKDB_WRITER_TAG)
def benchmark_queries(config: SplitSettings, store: DuckDBStore):
    """Train/dev/test queries with ground truth and SKIP partners; audited-out queries keep their reason.

    The human review's settled outcomes apply (``review_status``, corrected sets, rejected queries excluded).
    """
    records = store.query("SELECT * FROM llm_records ORDER BY record_id").to_dicts()
    audits = {a["record_id"]: a for a in store.read("query_audit").to_dicts()}
    hoods = {r["skill_id"]: r for r in store.read("skill_clusters").to_dicts()}
    rows = build_benchmark_queries([r for r in records if r["decision"] == "WRITE"], audits,
                                   [r for r in records if r["decision"] == "SKIP"], hoods,
                                   config.dev_fraction, config.seed, tuple(config.exclude_flags))
    if store.exists("label_agreement"):
        rows = apply_review(rows, review_outcomes(store.read("label_agreement").to_dicts()))
    df = frame("benchmark_queries", rows)
    store.write("benchmark_queries", df)
    counts = df.group_by("split").len().to_dicts()
    return dg.MaterializeResult(metadata=table_metadata(
        "benchmark_queries", df, **{f"split/{c['split']}": c["len"] for c in counts}))


@dg.asset(group_name="splits", kinds={"parquet"}, op_tags=DUCKDB_WRITER_TAG,
          deps=["benchmark_queries", "skill_pools", "skip_taxonomy", "query_audit", "skills", "label_agreement"])
def benchmark_release(store: DuckDBStore):
    """A versioned release folder: Parquet, TREC qrels, R3-layout JSONL and a dataset card (with review agreement)."""
    skills = store.query("""SELECT s.skill_id, s.name, s.description, s.body, s.language, s.source, r.repo, r."commit",
                                   r.license, p.pool, p.sub_cluster, p.super_domain
                            FROM skills s JOIN skill_pools p USING (skill_id) JOIN raw_skills r USING (skill_id)
                            ORDER BY s.skill_id""")
    queries = store.query("SELECT * FROM benchmark_queries ORDER BY query_id")
    skips = store.query("""SELECT r.record_id, r.pool, r.direction, r.k, r.skill_ids, r.rationale, r.model,
                                  t.label, t.rule_id, t.matched_span, t.ruleset_version
                           FROM llm_records r JOIN skip_taxonomy t USING (record_id) ORDER BY r.record_id""")
    audit = store.read("query_audit")
    rounds = store.read("label_agreement", "WHERE scope = 'round'") if store.exists("label_agreement") else None
    root = export_release(store.artifacts_dir / "releases", skills, queries, skips, audit,
                          agreement_markdown(rounds if rounds is not None else pl.DataFrame()))
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(root)), "version": root.name,
        "card": dg.MetadataValue.md((root / "README.md").read_text()),
        **{f"queries/{s}": int((queries["split"] == s).sum()) for s in ("train", "dev", "test", "excluded")}})
