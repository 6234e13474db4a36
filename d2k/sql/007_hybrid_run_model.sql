-- Verdicts of one LLM or hybrid run all carry the run's model. Before, the items a hybrid run kept
-- from the static judge were stored without one, and the views (which read one run per judge:
-- its newest version and model) dropped them. Stamp them with the model of their run, where the
-- run used one model.
UPDATE verdicts SET model = m.model
FROM (
    SELECT solution_id, judge, judge_version, any_value(model) AS model
    FROM verdicts
    WHERE judge IN ('hybrid', 'llm') AND model IS NOT NULL AND solution_id IS NOT NULL
    GROUP BY solution_id, judge, judge_version
    HAVING count(DISTINCT model) = 1
) m
WHERE verdicts.solution_id = m.solution_id AND verdicts.judge = m.judge
  AND verdicts.judge_version = m.judge_version AND verdicts.model IS NULL;
