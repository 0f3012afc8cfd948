-- Which rationales do the taxonomy rules miss? The k >= 2 SKIPs labelled 'unknown', longest first,
-- with their direction: read them to write the next rule (skill_assets/lib/taxonomy.py).
SELECT direction, k, length(rationale) AS chars, rationale, ruleset_version
FROM skip_taxonomy
WHERE label = 'unknown' AND k >= 2
ORDER BY chars DESC, record_id
LIMIT 50;
