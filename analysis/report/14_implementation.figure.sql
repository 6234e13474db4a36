-- the figure of the implementation section: every judged solution's latest scores
SELECT j.*, v.latest FROM v_judge_scores j JOIN v_solution_versions v USING (solution_id);
