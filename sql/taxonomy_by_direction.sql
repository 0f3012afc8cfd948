-- Which rejection classes dominate each query direction?
-- Shares over k >= 2 SKIPs only (a single skill cannot be mis-combined), as in METHOD.md §2.
SELECT direction, label, count(*) AS skips,
       round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY direction), 1) AS share_pct
FROM skip_taxonomy
WHERE k >= 2
GROUP BY direction, label
ORDER BY direction, skips DESC, label;
