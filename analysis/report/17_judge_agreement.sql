-- Each judge against the gold labels (`d2k judge eval`), latest evaluation per judge and gold set.
SELECT judge, judge_version, gold, n, decided, round(accuracy, 3) AS accuracy,
       round(precision, 3) AS precision, round(recall, 3) AS recall, round(f1, 3) AS f1,
       round(kappa, 3) AS kappa
FROM (SELECT *, row_number() OVER (PARTITION BY judge, gold, scope, key ORDER BY created_at DESC) AS rn
      FROM judge_metrics WHERE scope = 'all')
WHERE rn = 1
ORDER BY gold, judge;
