"""Invariants of the corpus tables."""

import dagster as dg

from skill_assets.defs.checks_common import no_rows_check
from skill_assets.defs.resources import DuckDBStore
from skill_assets.lib.corpus.corpus_store import sources_read
from skill_assets.lib.corpus.ingest import UNCOUNTED_REASONS


@dg.asset_check(asset="skills", blocking=True, description="No two kept skills share normalised content.")
def skills_unique_content_hash(store: DuckDBStore) -> dg.AssetCheckResult:
    return no_rows_check(store, "SELECT content_hash, count(*) AS n FROM skills GROUP BY 1 HAVING n > 1",
                         "duplicate content hashes")


@dg.asset_check(asset="skill_duplicates", blocking=True,
                description="Every raw skill is kept or folded exactly once, and folds point at kept skills.")
def raw_skills_reconcile(store: DuckDBStore) -> dg.AssetCheckResult:
    return no_rows_check(store, """
        WITH fate AS (
            SELECT skill_id, 'kept' AS fate FROM skills
            UNION ALL SELECT duplicate_skill_id, 'duplicate' FROM skill_duplicates)
        SELECT r.skill_id, count(f.fate) AS fates FROM raw_skills r LEFT JOIN fate f USING (skill_id)
        GROUP BY 1 HAVING fates <> 1
        UNION ALL
        SELECT d.kept_skill_id, -1 FROM skill_duplicates d ANTI JOIN skills s ON s.skill_id = d.kept_skill_id""",
                         "unreconciled raw skills")


@dg.asset_check(asset="ingest_rejects", description="Every configured source could be read.")
def sources_readable(store: DuckDBStore) -> dg.AssetCheckResult:
    return no_rows_check(store, "SELECT source, path, message FROM ingest_rejects WHERE reason = 'source_unreadable'",
                         "unreadable sources")


@dg.asset_check(asset="raw_skills", blocking=True,
                description="Every file seen at ingest is either a raw skill or an ingest reject.")
def ingest_accounts_for_every_file(context: dg.AssetCheckExecutionContext, store: DuckDBStore) -> dg.AssetCheckResult:
    """Files seen come from ``corpus_sources``, written with the tables (a run's event may describe another run's rows)."""
    read = sources_read(store.path)
    if read.height:
        seen = int(read["files_seen"].sum())
    else:  # a store written before corpus_sources existed
        event = context.instance.get_latest_materialization_event(dg.AssetKey("raw_skills"))
        seen = event.asset_materialization.metadata["files_seen"].value if event else None
    counted = store.query("""SELECT (SELECT count(*) FROM raw_skills)
                                    + (SELECT count(*) FROM ingest_rejects WHERE reason NOT IN (SELECT unnest(?))) AS n""",
                          [list(UNCOUNTED_REASONS)])["n"][0]
    return dg.AssetCheckResult(passed=seen == counted, metadata={"files_seen": seen, "raw_plus_rejects": int(counted)})
