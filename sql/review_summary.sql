-- How much do reviewers agree, by direction, k and round, and how many items are still disputed?
-- One line per kind, round, direction and k over label_agreement's item rows (each item's state after
-- that round). Skill sets: agreement = exact-set agreement; per-skill = each candidate skill in or out.
SELECT kind, round, direction, k,
       count(*) AS items,
       round(100 * avg(agreement), 1) AS agreement_pct,
       round(100 * avg(per_skill_agreement), 1) AS per_skill_agreement_pct,
       count(*) FILTER (WHERE status = 'settled') AS settled,
       count(*) FILTER (WHERE status = 'disputed') AS disputed,
       count(*) FILTER (WHERE status = 'pending') AS pending
FROM label_agreement
WHERE scope = 'item'
GROUP BY ALL
ORDER BY kind, round, direction NULLS LAST, k
