-- Implementation per level (view v_implementation_levels): the mean credit (0-1) of the judged
-- submissions' design items at each level, plain (implemented 1, partial 0.5, missing 0) and
-- dependency-aware (each item's credit times that of its weakest chain of prerequisites), per
-- model and pooled, guided and unguided, with the experiment's judge. Attempts without a
-- submission are not in these means (the headline counts them 0).
SELECT experiment, model, condition, judge, max(submissions) AS submissions,
       printf('%.2f / %.2f', max(plain) FILTER (WHERE level = 1), max(dependency_aware) FILTER (WHERE level = 1)) AS "L1 plain / dep-aware",
       printf('%.2f / %.2f', max(plain) FILTER (WHERE level = 2), max(dependency_aware) FILTER (WHERE level = 2)) AS "L2 plain / dep-aware",
       printf('%.2f / %.2f', max(plain) FILTER (WHERE level = 3), max(dependency_aware) FILTER (WHERE level = 3)) AS "L3 plain / dep-aware"
FROM v_implementation_levels
GROUP BY experiment, model, condition, judge
ORDER BY experiment, model <> '(all models)', model, condition;
