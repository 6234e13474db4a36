-- the figure of the paired section: speedups with and without the guidance
SELECT * FROM v_paired;
