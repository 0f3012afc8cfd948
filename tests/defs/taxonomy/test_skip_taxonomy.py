"""skip_taxonomy in a real DuckDB file: every label says how it was reached, and SQL can filter by it."""
import dagster as dg
import duckdb

from skill_assets.definitions import defs
from skill_assets.defs.resources import DuckDBStore, default_resources
from skill_assets.lib.common import store as store_lib
from skill_assets.lib.common.tables import frame
from skill_assets.lib.taxonomy.classify import shipped_model

SKIPS = {"s1": "These skills cover unrelated domains: cooking and kernel debugging.",
         "s2": "Whoever is publishing to the Play Store is not also notarising a macOS build in one request.",
         "s3": "说它们功能重复并不准确，问题在于两者所处领域没有任何交集。"}


def test_skip_taxonomy_records_rule_or_model_and_confidence(tmp_path):
    db = tmp_path / "store.duckdb"
    records = [{"record_id": r, "combination_id": r, "pool": "test", "direction": "en2en", "k": 2,
                "skill_ids": ["a/x", "b/y"], "decision": "SKIP", "rationale": text, "model": "test"}
               for r, text in SKIPS.items()]
    store_lib.replace_table(db, "llm_records", frame("llm_records", records))
    result = dg.materialize(list(defs.assets or []), selection=["skip_taxonomy"],
                            resources={**default_resources(), "store": DuckDBStore(database=str(db))})
    assert result.success
    with duckdb.connect(str(db), read_only=True) as con:
        rows = {r[0]: r[1:] for r in con.execute(
            "SELECT record_id, label, method, rule_id, confidence, model_version FROM skip_taxonomy").fetchall()}
        ruled = con.execute("SELECT count(*) FROM skip_taxonomy WHERE method = 'rule' AND rule_id IS NOT NULL").fetchone()
    assert rows["s1"] == ("domain_mismatch", "rule", "domain.en", 1.0, None)
    assert rows["s3"][:3] == ("domain_mismatch", "rule", "domain.zh")
    label, method, rule_id, confidence, version = rows["s2"]
    assert method in ("model", "none") and rule_id is None and 0 < confidence <= 1
    assert version == shipped_model().version
    assert ruled == (2,)
    meta = result.asset_materializations_for_node("skip_taxonomy")[0].metadata
    assert meta["model_version"].value == shipped_model().version and "method/rule" in meta


def test_the_report_shows_coverage_and_the_rule_model_split():
    import polars as pl

    from skill_assets.lib.evaluation.report import taxonomy_summary

    shares = pl.DataFrame({"label": ["domain_mismatch", "unknown"], "n": [8, 2], "by_rule": [5, 0], "by_model": [3, 0]})
    assert taxonomy_summary(shares).startswith("Coverage 80.0% of 10 SKIPs") and "50.0% labelled by a rule" in \
        taxonomy_summary(shares) and "30.0% by the model" in taxonomy_summary(shares)
