-- How was each SKIP's rejection class reached? Per class (k >= 2 SKIPs): how many by a rule, by the
-- learned model, by the LLM fallback, left unknown, and the model's mean confidence where it decided.
-- Filter on method / rule_id / confidence to audit one layer, e.g. WHERE method = 'model' AND confidence < 0.5.
SELECT label,
       count(*) AS n,
       count(*) FILTER (WHERE method = 'rule') AS by_rule,
       count(*) FILTER (WHERE method = 'model') AS by_model,
       count(*) FILTER (WHERE method = 'llm') AS by_llm,
       round(avg(confidence) FILTER (WHERE method = 'model'), 3) AS model_mean_confidence
FROM skip_taxonomy
WHERE k >= 2
GROUP BY label
ORDER BY n DESC;
