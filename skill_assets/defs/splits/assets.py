"""Splits stage: audited WRITE queries become the benchmark, with SKIP partners attached."""

import dagster as dg

from skill_assets.defs.metadata import table_metadata
from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore
from skill_assets.lib.splits import AUDIT_FLAGS, build_benchmark_queries
from skill_assets.lib.tables import frame


class SplitSettings(dg.Config):
    dev_fraction: float = 0.0
    seed: int = 0
    exclude_flags: list[str] = list(AUDIT_FLAGS)


@dg.asset(group_name="splits", kinds={"duckdb"}, deps=["query_audit", "llm_records", "skill_clusters"],
          op_tags=DUCKDB_WRITER_TAG)
def benchmark_queries(config: SplitSettings, store: DuckDBStore):
    """Train/dev/test queries with ground truth and SKIP partners; audited-out queries keep their reason."""
    records = store.query("SELECT * FROM llm_records ORDER BY record_id").to_dicts()
    audits = {a["record_id"]: a for a in store.read("query_audit").to_dicts()}
    hoods = {r["skill_id"]: r for r in store.read("skill_clusters").to_dicts()}
    rows = build_benchmark_queries([r for r in records if r["decision"] == "WRITE"], audits,
                                   [r for r in records if r["decision"] == "SKIP"], hoods,
                                   config.dev_fraction, config.seed, tuple(config.exclude_flags))
    df = frame("benchmark_queries", rows)
    store.write("benchmark_queries", df)
    counts = df.group_by("split").len().to_dicts()
    return dg.MaterializeResult(metadata=table_metadata(
        "benchmark_queries", df, **{f"split/{c['split']}": c["len"] for c in counts}))
