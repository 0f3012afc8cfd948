"""Invariants of the generation tables, per direction partition of ``llm_records``."""

import dagster as dg

from skill_assets.defs.checks_common import no_rows_check
from skill_assets.defs.resources import DuckDBStore
from skill_assets.lib.common.language import DIRECTIONS


def _direction(context: dg.AssetCheckExecutionContext) -> str | None:
    """The partition this check runs for (validated against the known directions), else None."""
    op_context = context.op_execution_context
    key = op_context.partition_key if op_context.has_partition_key else None
    if key is not None and key not in DIRECTIONS:
        raise ValueError(f"unknown direction partition {key!r}")
    return key


@dg.asset_check(asset="llm_records", blocking=True,
                description="One record per combination of the materialized direction, none lost or orphaned.")
def llm_records_cover_combinations(context: dg.AssetCheckExecutionContext, store: DuckDBStore) -> dg.AssetCheckResult:
    d = _direction(context)
    c_where = f"WHERE c.direction = '{d}'" if d else ""
    r_where = f"WHERE r.direction = '{d}'" if d else ""
    return no_rows_check(store, f"""
        SELECT c.combination_id, count(r.record_id) AS n FROM skill_combinations c
        LEFT JOIN llm_records r USING (combination_id) {c_where} GROUP BY 1 HAVING n <> 1
        UNION ALL
        SELECT r.combination_id, 0 AS n FROM llm_records r ANTI JOIN skill_combinations c USING (combination_id)
        {r_where}""", "missing, doubled or orphaned records")


@dg.asset_check(asset="llm_records", blocking=True,
                description="Every record is WRITE, SKIP, INVALID or FAILED; INVALID and FAILED carry a reason.")
def llm_records_decided_with_reason(context: dg.AssetCheckExecutionContext, store: DuckDBStore) -> dg.AssetCheckResult:
    d = _direction(context)
    where = f"direction = '{d}' AND " if d else ""
    return no_rows_check(store, f"""
        SELECT record_id, decision, error FROM llm_records
        WHERE {where}(decision IS NULL OR decision NOT IN ('WRITE', 'SKIP', 'INVALID', 'FAILED')
               OR (decision IN ('INVALID', 'FAILED') AND coalesce(error, '') = ''))""",
        "records without a decision or reason")
