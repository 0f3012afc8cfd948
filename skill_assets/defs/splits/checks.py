"""Invariants of the benchmark splits."""

import dagster as dg

from skill_assets.defs.checks_common import no_rows_check
from skill_assets.defs.resources import DuckDBStore


@dg.asset_check(asset="skill_pools", blocking=True, description="No skill sits in both pools.")
def pools_disjoint(store: DuckDBStore) -> dg.AssetCheckResult:
    return no_rows_check(store, "SELECT skill_id, count(DISTINCT pool) AS n FROM skill_pools GROUP BY 1 HAVING n > 1",
                         "skills in both pools")


@dg.asset_check(asset="skill_combinations", blocking=True, description="Every combination stays inside its pool.")
def combinations_inside_pool(store: DuckDBStore) -> dg.AssetCheckResult:
    return no_rows_check(store, """
        SELECT c.combination_id, u.skill_id FROM skill_combinations c, unnest(c.skill_ids) AS u(skill_id)
        JOIN skill_pools p ON p.skill_id = u.skill_id WHERE p.pool <> c.pool""", "cross-pool combinations")


@dg.asset_check(asset="benchmark_queries", blocking=True,
                description="Every query's ground-truth skills exist and lie in its split's pool.")
def queries_inside_split_pool(store: DuckDBStore) -> dg.AssetCheckResult:
    return no_rows_check(store, """
        SELECT q.query_id, q.split, u.skill_id, p.pool FROM benchmark_queries q, unnest(q.skill_ids) AS u(skill_id)
        LEFT JOIN skill_pools p ON p.skill_id = u.skill_id
        WHERE q.split <> 'excluded' AND (p.pool IS NULL OR p.pool <> CASE q.split WHEN 'dev' THEN 'train' ELSE q.split END)""",
                         "ground truth outside its pool")


@dg.asset_check(asset="benchmark_queries", blocking=True, description="No query text appears twice across splits.")
def no_duplicate_queries(store: DuckDBStore) -> dg.AssetCheckResult:
    return no_rows_check(store, "SELECT query, count(*) AS n FROM benchmark_queries WHERE split <> 'excluded' "
                                "GROUP BY 1 HAVING n > 1", "duplicate queries")
