-- The design properties solutions leave out, most often missed first (static judge, latest
-- verdicts, every judged solution): how many miss it, half-implement it or implement it, and the
-- first solutions that miss it (the rest counted).
WITH v AS (   -- an agent's submission is named by its model and condition
    SELECT v.task_id, v.level, v.item_id, v.title, v.verdict,
           coalesce(any_value(a.model || ' (' || a.condition || ')'), regexp_replace(v.solution, '.*/', '')) AS solution
    FROM v_item_verdicts v LEFT JOIN attempts a ON a.submission_id = v.solution_id
    WHERE v.judge = 'static'
    GROUP BY v.task_id, v.level, v.item_id, v.title, v.verdict, v.solution_id, v.solution
), agg AS (
    SELECT task_id, level, item_id, title,
           count(*) FILTER (WHERE verdict = 'missing') AS missing,
           count(*) FILTER (WHERE verdict = 'partial') AS partial,
           count(*) FILTER (WHERE verdict = 'implemented') AS implemented,
           list(solution ORDER BY solution) FILTER (WHERE verdict = 'missing') AS missing_list
    FROM v GROUP BY ALL
)
SELECT task_id, level, item_id, title, missing, partial, implemented,
       array_to_string(list_slice(missing_list, 1, 4), ', ')
         || CASE WHEN len(missing_list) > 4 THEN ', and ' || (len(missing_list) - 4) || ' more' ELSE '' END AS missing_in
FROM agg
WHERE missing + partial > 0
ORDER BY missing DESC, partial DESC, task_id, level, item_id;
