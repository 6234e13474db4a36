-- The design items the submissions miss most, by condition and level (view v_missed_items): the
-- three with the highest miss rate at each level (missing over decided verdicts of the
-- experiment's judge; partial counts as not missing), with how many judged submissions missed it.
SELECT experiment, condition, 'L' || level AS level, rank_in_level AS rank, task_id, item_id, title,
       printf('%d of %d (%.0f %%)', missing, missing + partial + implemented, 100 * miss_rate) AS missed
FROM v_missed_items
WHERE rank_in_level <= 3 AND missing > 0
ORDER BY experiment, condition, level, rank_in_level, task_id, item_id;
