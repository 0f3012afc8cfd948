-- Which review items do reviewers disagree on, and what did each of them answer?
-- Every item whose verdicts so far are not unanimous (disputed first, then those a later round settled),
-- with each reviewer's answer, decision (skill sets: the exact set they chose) and comment.
WITH latest AS (
    SELECT * FROM label_agreement WHERE scope = 'item'
    QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY round DESC) = 1)
SELECT l.status, l.kind, l.item_id, l.round AS latest_round, v.round, v.reviewer, v.answer, v.decision,
       v.comment, t.query
FROM latest l
JOIN review_verdicts v USING (item_id)
LEFT JOIN review_tasks t ON t.item_id = l.item_id AND t.round = 1
WHERE l.agreement < 1
ORDER BY l.status = 'disputed' DESC, l.kind, l.item_id, v.round, v.reviewer
