-- Which design properties do solutions leave unimplemented, per task and level?
-- d2k sql @analysis/queries/unimplemented_properties.sql
SELECT task_id, level, item_id, title,
       count(*) FILTER (WHERE verdict = 'missing') AS missing,
       count(*) FILTER (WHERE verdict = 'partial') AS partial,
       count(*) FILTER (WHERE verdict = 'implemented') AS implemented,
       count(*) FILTER (WHERE verdict = 'undetermined') AS undetermined,
       list(solution ORDER BY solution) FILTER (WHERE verdict = 'missing') AS missing_in
FROM v_item_verdicts
WHERE judge = 'static'
GROUP BY ALL
ORDER BY task_id, level, item_id;
