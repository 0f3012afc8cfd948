-- How often does a generated query name one of its own skills? (R3-Skill: 7.8% en2en, 2.3% en2zh, 2.1% zh2zh, 0.0% zh2en.)
SELECT direction, count(*) AS write_queries,
       count(*) FILTER (name_leakage) AS leaked,
       round(100.0 * count(*) FILTER (name_leakage) / count(*), 1) AS leakage_pct
FROM query_audit
GROUP BY direction
ORDER BY direction;
