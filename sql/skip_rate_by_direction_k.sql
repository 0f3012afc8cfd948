-- Where does the generator reject most? SKIP rate per direction and k (R3-Skill: 80.9% SKIP for en2zh k=3).
-- The rate is over decided records (WRITE + SKIP); INVALID and FAILED are counted apart.
SELECT direction, k,
       count(*) FILTER (decision = 'WRITE') AS writes,
       count(*) FILTER (decision = 'SKIP') AS skips,
       count(*) FILTER (decision IN ('INVALID', 'FAILED')) AS unusable,
       round(100.0 * count(*) FILTER (decision = 'SKIP')
             / nullif(count(*) FILTER (decision IN ('WRITE', 'SKIP')), 0), 1) AS skip_rate_pct
FROM llm_records
GROUP BY direction, k
ORDER BY direction, k;
