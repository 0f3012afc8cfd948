"""Invariants of the review loop, and the release gate on disputed test queries."""
from typing import Literal

import dagster as dg

from skill_assets.defs.checks_common import no_rows_check
from skill_assets.defs.resources import DuckDBStore

#: test queries whose latest skill-set or naturalness review round ended disputed
DISPUTED_TEST_QUERIES = """
    WITH latest AS (
        SELECT * FROM label_agreement WHERE scope = 'item' AND source = 'pipeline'
        QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY round DESC) = 1)
    SELECT q.query_id, l.kind, l.round, l.n_reviewers, l.agreement
    FROM benchmark_queries q JOIN latest l ON l.subject_id = q.query_id
    WHERE q.split = 'test' AND l.kind IN ('skill_set', 'naturalness') AND l.status = 'disputed'
    ORDER BY q.query_id"""


@dg.asset_check(asset="review_verdicts", blocking=True,
                description="Every verdict answers a review task of this store, once per reviewer and round.")
def verdicts_answer_review_tasks(store: DuckDBStore) -> dg.AssetCheckResult:
    return no_rows_check(store, """
        SELECT v.item_id, v.round, v.reviewer, count(*) AS n, any_value(t.item_id) IS NULL AS orphan
        FROM review_verdicts v LEFT JOIN review_tasks t USING (item_id, round)
        GROUP BY 1, 2, 3 HAVING n > 1 OR orphan""", "orphan or repeated verdicts")


class ReleaseReviewGate(dg.Config):
    mode: Literal["strict", "report-only"] = "strict"  # strict: a disputed test query fails the release


@dg.asset_check(asset="benchmark_release", description="No test query is released while its review is disputed.")
def no_disputed_test_query_released(config: ReleaseReviewGate, store: DuckDBStore) -> dg.AssetCheckResult:
    if not store.exists("label_agreement"):
        return dg.AssetCheckResult(passed=True, metadata={"violations": 0, "note": "no review in this store"})
    result = no_rows_check(store, DISPUTED_TEST_QUERIES, "disputed test queries")
    severity = dg.AssetCheckSeverity.ERROR if config.mode == "strict" else dg.AssetCheckSeverity.WARN
    return dg.AssetCheckResult(passed=result.passed, severity=severity, metadata={**result.metadata, "mode": config.mode})
