-- Do larger sets fail for different reasons? Rejection-class shares by set size k (k >= 2 only).
SELECT k, label, count(*) AS skips,
       round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY k), 1) AS share_pct
FROM skip_taxonomy
WHERE k >= 2
GROUP BY k, label
ORDER BY k, skips DESC, label;
