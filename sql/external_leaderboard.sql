-- Which system routes best on each external benchmark?
-- One row per (benchmark, system): headline metrics in %, over the benchmark's whole pool, with the
-- 95% bootstrap interval of NDCG@10, the paired-bootstrap p-value of NDCG@10 against embedder:base and the data version
-- (model versions: external_metrics.model_version). Fewer than 30 queries cannot rank systems.
-- The curated benchmark (partition `curated`, $SKILL_ASSETS_CURATED_POOL) appears here like any other; its per-direction
-- figures: slice = 'direction=…' in external_metrics.
-- fc@10 = all ground-truth skills in the top 10 (SkillRouter); set_compat over multi-skill queries only.
SELECT benchmark,
       system,
       any_value(n_queries) FILTER (WHERE metric = 'hit@1')                     AS queries,
       round(100 * any_value(value) FILTER (WHERE metric = 'hit@1'), 2)        AS "hit@1",
       round(100 * any_value(value) FILTER (WHERE metric = 'mrr@10'), 2)       AS "mrr@10",
       round(100 * any_value(value) FILTER (WHERE metric = 'ndcg@10'), 2)      AS "ndcg@10",
       printf('[%.1f, %.1f]', 100 * any_value(ci_low) FILTER (WHERE metric = 'ndcg@10'),
              100 * any_value(ci_high) FILTER (WHERE metric = 'ndcg@10'))       AS "ndcg@10 95% CI",
       round(100 * any_value(value) FILTER (WHERE metric = 'recall@10'), 2)    AS "recall@10",
       round(100 * any_value(value) FILTER (WHERE metric = 'fc@10'), 2)        AS "fc@10",
       round(100 * any_value(value) FILTER (WHERE metric = 'set_compat'), 2)   AS set_compat,
       round(any_value(p_value_vs_base) FILTER (WHERE metric = 'ndcg@10'), 3)  AS "p(ndcg@10)",
       any_value(data_version)                                                 AS data_version
FROM external_metrics
WHERE slice = 'all'
GROUP BY benchmark, system
ORDER BY benchmark, "ndcg@10" DESC, system;
