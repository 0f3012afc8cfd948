-- Which skills were copied most, and by which dedup layer were the copies caught?
SELECT d.kept_skill_id, s.name, count(*) AS copies,
       string_agg(DISTINCT d.layer, ', ') AS layers,
       min(d.similarity) AS min_similarity,
       list(d.duplicate_skill_id ORDER BY d.duplicate_skill_id) AS duplicate_skill_ids
FROM skill_duplicates d JOIN skills s ON s.skill_id = d.kept_skill_id
GROUP BY d.kept_skill_id, s.name
ORDER BY copies DESC, d.kept_skill_id;
