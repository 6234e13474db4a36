-- Design items built without their prerequisites (view v_prerequisite_gap_summary): how many
-- judged submissions implement an item (or partly) while a property it builds on is missing,
-- by condition, with the experiment's judge. The dependency-aware score gives such an item no credit.
SELECT experiment, condition, task_id, item_id, prerequisite AS missing_prerequisite,
       printf('%d of %d', submissions_with_gap, judged_submissions) AS submissions
FROM v_prerequisite_gap_summary
ORDER BY experiment, condition, submissions_with_gap DESC, task_id, item_id, prerequisite;
