-- How often does the generator reject a set, by set size k? (R3-Skill: WRITE for 56.3% of k=2, 36.5% of k=3.)
-- INVALID (unparseable) and FAILED (request failed) records are counted apart, not as SKIPs.
SELECT k,
       count(*) AS records,
       count(*) FILTER (decision = 'WRITE') AS writes,
       count(*) FILTER (decision = 'SKIP') AS skips,
       count(*) FILTER (decision IN ('INVALID', 'FAILED')) AS unusable,
       round(100.0 * count(*) FILTER (decision = 'SKIP')
             / nullif(count(*) FILTER (decision IN ('WRITE', 'SKIP')), 0), 1) AS skip_rate_pct
FROM llm_records
GROUP BY k
ORDER BY k;
