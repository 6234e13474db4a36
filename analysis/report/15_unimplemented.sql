-- The design properties solutions leave out, most often missed first (static judge).
SELECT task_id, level, item_id, title,
       count(*) FILTER (WHERE verdict = 'missing') AS missing,
       count(*) FILTER (WHERE verdict = 'partial') AS partial,
       count(*) FILTER (WHERE verdict = 'implemented') AS implemented,
       array_to_string(list(regexp_replace(solution, '.*/', '') ORDER BY solution)
                       FILTER (WHERE verdict = 'missing'), ', ') AS missing_in
FROM v_item_verdicts
WHERE judge = 'static'
GROUP BY ALL
HAVING count(*) FILTER (WHERE verdict IN ('missing', 'partial')) > 0
ORDER BY missing DESC, partial DESC, task_id, level, item_id;
