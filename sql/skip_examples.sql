-- What does each rejection class look like? Up to 5 example rationales per class, with the span
-- the rule matched and the skills of the rejected set (change the 5 to see more).
SELECT label, rule_id, matched_span, rationale, skill_names
FROM (
    SELECT t.label, t.rule_id, t.matched_span, t.rationale,
           (SELECT string_agg(s.name, ' + ') FROM unnest(r.skill_ids) AS u(id) JOIN skills s ON s.skill_id = u.id)
               AS skill_names,
           row_number() OVER (PARTITION BY t.label ORDER BY t.record_id) AS n
    FROM skip_taxonomy t JOIN llm_records r USING (record_id)
    WHERE t.k >= 2
)
WHERE n <= 5
ORDER BY label, n;
