-- What did each source contribute: files parsed, quarantined, kept after dedup, folded as duplicates?
WITH parsed AS (SELECT source, count(*) AS parsed FROM raw_skills GROUP BY 1),
     rejected AS (SELECT source, count(*) AS rejected FROM ingest_rejects GROUP BY 1),
     kept AS (SELECT source, count(*) AS kept FROM skills GROUP BY 1),
     folded AS (SELECT r.source, count(*) AS duplicates FROM skill_duplicates d
                JOIN raw_skills r ON r.skill_id = d.duplicate_skill_id GROUP BY 1)
SELECT source, coalesce(parsed, 0) AS parsed, coalesce(rejected, 0) AS rejected,
       coalesce(kept, 0) AS kept, coalesce(duplicates, 0) AS duplicates
FROM parsed FULL JOIN rejected USING (source) FULL JOIN kept USING (source) FULL JOIN folded USING (source)
ORDER BY source;
