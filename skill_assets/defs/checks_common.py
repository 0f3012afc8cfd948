"""Shared plumbing for asset checks: run a SQL query that returns violating rows."""

import dagster as dg

from skill_assets.defs.resources import DuckDBStore


def no_rows_check(store: DuckDBStore, sql: str, what: str) -> dg.AssetCheckResult:
    """Pass when ``sql`` returns no rows; otherwise report how many and show a few."""
    violations = store.query(sql)
    return dg.AssetCheckResult(
        passed=violations.height == 0,
        metadata={"violations": violations.height,
                  "examples": dg.MetadataValue.md(violations.head(5).to_pandas().to_markdown(index=False)
                                                  if violations.height else f"no {what}")},
    )
