-- Every design property of each judged task on its dependency graph: the properties it builds on,
-- and how many judged solutions implement it (each solution name's newest version, the static
-- judge's latest verdict). credit = the mean over decided verdicts (implemented 1, partial 0.5,
-- missing 0). The figure draws each task's graph, L1 on top, edges from prerequisite to dependent,
-- each item coloured by its credit (grey: no judged solution decided it).
WITH latest AS (
    SELECT *, row_number() OVER (PARTITION BY solution_id, item_id ORDER BY created_at DESC) AS rn
    FROM v_item_verdicts
    WHERE judge = 'static' AND solution_id IN (SELECT solution_id FROM v_solution_versions WHERE latest)
)
SELECT d.task_id, d.level, d.item_id, d.title, array_to_string(d.depends_on, ', ') AS depends_on,
       count(l.verdict) FILTER (WHERE l.verdict <> 'undetermined') AS decided,
       count(l.verdict) FILTER (WHERE l.verdict = 'implemented') AS implemented,
       count(l.verdict) FILTER (WHERE l.verdict = 'partial') AS partial,
       count(l.verdict) FILTER (WHERE l.verdict = 'missing') AS missing,
       round(avg(CASE l.verdict WHEN 'implemented' THEN 1.0 WHEN 'partial' THEN 0.5
                                WHEN 'missing' THEN 0.0 END), 2) AS credit
FROM design_items d
LEFT JOIN latest l ON l.task_id = d.task_id AND l.item_id = d.item_id AND l.rn = 1
WHERE d.task_id IN (SELECT task_id FROM latest)
GROUP BY ALL
ORDER BY d.task_id, d.level, d.item_id;
