-- Proposal against implementation (view v_design_build_summary): for each attempt whose DESIGN.md
-- was graded, every design item as designed (the proposal covers it, or partly) or not, and built
-- (the code implements it, or partly) or not, counted by condition and level. Undecided: either
-- judge could not decide the item.
SELECT experiment, condition, 'L' || level AS level, attempts, decided,
       designed_and_built AS "designed, built", designed_not_built AS "designed, not built",
       built_not_designed AS "built, not designed", neither, undecided
FROM v_design_build_summary
ORDER BY experiment, condition, level;
