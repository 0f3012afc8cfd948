"""Invariants of the neighbourhood tables.

Near-duplicate groups cannot be split across pools by construction: dedup folds every member of
a group into one kept skill, and only kept skills reach ``skills`` and hence ``skill_pools``. What
could still leak is a folded copy reaching a pool anyway (e.g. ``skills`` rebuilt without
``skill_duplicates``, or a stale table), so that is what the check looks for.
"""

import dagster as dg

from skill_assets.defs.checks_common import no_rows_check
from skill_assets.defs.resources import DuckDBStore


@dg.asset_check(asset="skill_pools", blocking=True,
                description="Every pooled skill is a kept skill: no folded near-duplicate copy sits in any pool.")
def pools_hold_no_folded_duplicates(store: DuckDBStore) -> dg.AssetCheckResult:
    return no_rows_check(store, """
        SELECT p.skill_id, p.pool, d.kept_skill_id, d.layer FROM skill_pools p
        JOIN skill_duplicates d ON d.duplicate_skill_id = p.skill_id
        UNION ALL
        SELECT p.skill_id, p.pool, NULL, 'not in skills' FROM skill_pools p ANTI JOIN skills s USING (skill_id)""",
                         "folded duplicates in the pools")


@dg.asset_check(asset="skill_clusters", blocking=True,
                description="Every embedded skill has exactly one sub-cluster and super-domain (noise included).")
def every_skill_clustered(store: DuckDBStore) -> dg.AssetCheckResult:
    return no_rows_check(store, """
        SELECT e.skill_id, count(c.skill_id) AS n FROM skill_embeddings e LEFT JOIN skill_clusters c USING (skill_id)
        GROUP BY 1 HAVING n <> 1""", "unclustered skills")
