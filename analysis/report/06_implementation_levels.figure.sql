-- the figure of the per-level section: pooled rows
SELECT * FROM v_implementation_levels WHERE model = '(all models)' ORDER BY experiment, condition, level;
