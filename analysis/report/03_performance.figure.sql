-- the figure of the headline section: v_headline with the bootstrap intervals
SELECT h.*, c.metric, c.ci_low, c.ci_high
FROM v_headline h
LEFT JOIN analysis_bootstrap c ON c.experiment = h.experiment AND c.model = h.model AND c.condition = h.condition
ORDER BY h.experiment, h.pooled DESC, h.model, h.condition;
