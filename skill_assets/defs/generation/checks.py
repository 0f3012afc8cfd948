"""Invariants of the generation tables."""

import dagster as dg

from skill_assets.defs.checks_common import no_rows_check
from skill_assets.defs.resources import DuckDBStore


@dg.asset_check(asset="llm_records", blocking=True, description="One record per combination, none lost.")
def llm_records_cover_combinations(store: DuckDBStore) -> dg.AssetCheckResult:
    return no_rows_check(store, """
        SELECT c.combination_id, count(r.record_id) AS n FROM skill_combinations c
        LEFT JOIN llm_records r USING (combination_id) GROUP BY 1 HAVING n <> 1""", "missing or doubled records")
